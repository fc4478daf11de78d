package jsonx

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hayula/gateway/internal/utf8x"
)

// This file is the reading side: a walk over one object or array that hands out each value as a
// sub-slice of the input, validating as it goes, so that a request body can be checked and taken
// apart in one pass instead of encoding/json's two (checkValid, then the decode) and its copies.

// maxDepth bounds the nesting a validating walk follows (Text's may be lower). Deeper input is
// reported invalid; callers fall back to FixText or encoding/json (whose own limit is 10,000).
const maxDepth = 512

// Iter walks the members of one JSON object, or the elements of one JSON array, and returns each
// value as a sub-slice of the input (no copy).
//
// A validating Iter (made with validate set) checks every byte it passes the way encoding/json's
// Valid does: string escapes and control characters, number syntax, literals, nesting (up to a
// depth of 512, deeper counts as invalid), and that only whitespace follows the container. Invalid
// UTF-8 inside strings is valid JSON, as for encoding/json. A non-validating Iter assumes valid
// input and only finds the value boundaries (strings are skipped quote to quote), which is much
// cheaper: use it on values a validating Iter has already returned. Written's walk is a
// non-validating one that still counts the nesting, for a text written out of such values.
type Iter struct {
	b        []byte
	pos      int
	array    bool
	validate bool
	strict   bool // Text: also UTF-8 and surrogate pairs
	nested   bool // Written: not validating, but counting the nesting
	limit    int  // the nesting a value may have below the container (validating or nested)
	first    bool
	bad      bool // the walk stopped on malformed input
	closed   bool // the closing bracket was read
	inner    bool // Enter's: what follows the container is the outer walk's to read
}

// Object starts a walk over the object b holds (leading whitespace allowed).
func Object(b []byte, validate bool) Iter { return start(b, '{', validate) }

// Array starts a walk over the array b holds (leading whitespace allowed).
func Array(b []byte, validate bool) Iter { return start(b, '[', validate) }

// Text starts a validating walk over the object b holds, as Object(b, true) does, that also
// refuses what a JSON text must not carry between systems (RFC 8259 §8.1) and what decoders read
// differently: invalid UTF-8 anywhere, an escaped surrogate that is not half of a pair ("\ud800"
// alone; encoding/json reads U+FFFD, a Python decoder a lone surrogate its encoder then refuses),
// and nesting deeper than depth, counting the object itself as 1 (at most 513). FixText finds
// which of these a body has, and repairs the surrogates.
func Text(b []byte, depth int) Iter {
	it := start(b, '{', true)
	it.strict, it.limit = true, min(depth-1, maxDepth)
	return it
}

// Written starts a walk over the object b holds that checks only its nesting, for a text the
// program wrote itself out of values a Text walk returned (the Responses bridge's chat body): it
// is then valid JSON in valid UTF-8 without a lone surrogate escape, but for its depth, which a
// writer may deepen by writing a value one level deeper than it read it. It walks as
// Object(b, false) does, counting brackets outside strings as it skips each value, and refuses
// what Text(b, depth) refuses of such a text: a value nested deeper than depth, counting the
// object itself as 1, ends the walk as malformed (FuzzWrittenMatchesText). On any other input
// its answers are undefined, though it does not panic.
func Written(b []byte, depth int) Iter {
	it := start(b, '{', false)
	it.nested, it.limit = true, depth-1
	return it
}

func start(b []byte, open byte, validate bool) Iter {
	it := Iter{b: b, array: open == '[', validate: validate, limit: maxDepth, first: true}
	it.pos = skipWS(b, 0)
	if it.pos >= len(b) || b[it.pos] != open {
		it.bad = true
		return it
	}
	it.pos++
	return it
}

// Next returns the next member's quoted key (nil in an array) and its value. When it returns false
// the walk is over; Valid then says whether it ended cleanly.
func (it *Iter) Next() (key, value []byte, ok bool) {
	if key, ok = it.Key(); !ok {
		return nil, nil, false
	}
	value, ok = it.Value()
	return key, value, ok
}

// Key reads the next member's quoted key (nil in an array) and stops at its value, which the
// caller then takes with Value, or walks with Enter and Resume; Next is Key and Value. When Key
// returns false the walk is over, as when Next does.
func (it *Iter) Key() (key []byte, ok bool) {
	if it.bad || it.closed {
		return nil, false
	}
	b := it.b
	i := skipWS(b, it.pos)
	closer := byte('}')
	if it.array {
		closer = ']'
	}
	if i < len(b) && b[i] == closer {
		it.closed = true
		it.pos = i + 1
		if it.validate && !it.inner && skipWS(b, it.pos) != len(b) {
			it.bad = true
		}
		return nil, false
	}
	if !it.first {
		if i >= len(b) || b[i] != ',' {
			return it.failKey()
		}
		i = skipWS(b, i+1)
	}
	it.first = false
	if !it.array {
		if i >= len(b) || b[i] != '"' {
			return it.failKey()
		}
		end, ok := it.skipString(i)
		if !ok {
			return it.failKey()
		}
		key = b[i:end]
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return it.failKey()
		}
		i = skipWS(b, i+1)
	}
	if i >= len(b) {
		return it.failKey()
	}
	it.pos = i
	return key, true
}

// At is the first byte of the value Key stopped at: '{' or '[' for one Enter walks.
func (it *Iter) At() byte { return it.b[it.pos] }

// Value returns the value Key stopped at, validated (or skipped) as Next would, and moves past it.
func (it *Iter) Value() (value []byte, ok bool) {
	b, i := it.b, it.pos
	var end int
	switch {
	case it.validate:
		end, ok = scanValue(b, i, it.limit, it.strict)
	case it.nested:
		end, ok = skipNested(b, i, it.limit)
	default:
		end, ok = skipValue(b, i)
	}
	if !ok {
		it.bad = true
		return nil, false
	}
	it.pos = end
	return b[i:end], true
}

// Enter starts a walk over the object or array Key stopped at (At says which), for a reader that
// takes its members one by one instead of the value whole: the inner walk checks them as Value
// would have checked the value, the nesting it may have counted from the container's (a value
// nested deeper than Value would allow ends it as malformed), and Resume then goes on after it.
// ok is false, and this walk over as malformed, when the value is not an object or array or
// nests too deep to open. The value's bytes are read once, by the inner walk.
func (it *Iter) Enter() (inner Iter, ok bool) {
	c := it.b[it.pos]
	if c != '{' && c != '[' || (it.validate || it.nested) && it.limit < 1 {
		it.bad = true
		return Iter{}, false
	}
	return Iter{b: it.b, pos: it.pos + 1, array: c == '[', validate: it.validate, strict: it.strict,
		nested: it.nested, limit: it.limit - 1, first: true, inner: true}, true
}

// Resume goes on after inner, the walk Enter started, which must have read its container's
// closing bracket (Done); otherwise this walk is over as malformed, false.
func (it *Iter) Resume(inner *Iter) bool {
	if !inner.Done() {
		it.bad = true
		return false
	}
	it.pos = inner.pos
	return true
}

func (it *Iter) failKey() ([]byte, bool) {
	it.bad = true
	return nil, false
}

func (it *Iter) skipString(i int) (int, bool) {
	if it.validate {
		return scanString(it.b, i, it.strict)
	}
	return skipString(it.b, i)
}

// Offset is where in b the value Next returned last ends: that value is b[Offset()-len(value):Offset()].
func (it *Iter) Offset() int { return it.pos }

// Valid reports whether the walk so far met only well-formed input and, once Next has returned
// false, whether the container was closed (and, when validating, followed by whitespace only).
func (it *Iter) Valid() bool { return !it.bad }

// Done reports whether Next has read the closing bracket of a well-formed container.
func (it *Iter) Done() bool { return it.closed && !it.bad }

// PlainKey returns the name a quoted key q stands for when it is plain: no escapes and ASCII
// only, so that its bytes are the name and no Unicode case folding can make it equal another.
func PlainKey(q []byte) ([]byte, bool) {
	name := q[1 : len(q)-1]
	for _, c := range name {
		if c == '\\' || c >= utf8.RuneSelf {
			return nil, false
		}
	}
	return name, true
}

// Members walks the object b (validated as Object validates it) and calls read with each
// member's name and value; it reports whether b is a well-formed object whose every key is plain
// (PlainKey) and for whose every member read said true, and stops at the first that is not. It
// is the walk of a reader that takes the usual members itself and hands any other object to
// encoding/json, which false asks for (the Ollama and SAIF lines, the Responses bridge's chunks).
func Members(b []byte, validate bool, read func(name, value []byte) bool) bool {
	it := Object(b, validate)
	for {
		k, v, more := it.Next()
		if !more {
			return it.Done()
		}
		name, plain := PlainKey(k)
		if !plain || !read(name, v) {
			return false
		}
	}
}

// Folds reports whether name, a plain key (PlainKey) equal to none of names, is one of them to
// encoding/json's case-insensitive matching of keys to fields: a walk that reads some names
// itself hands such a key to encoding/json, which would take it for the field.
func Folds(name []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(name, []byte(n)) {
			return true
		}
	}
	return false
}

// Valid reports whether b is one valid JSON value (surrounding whitespace allowed), as
// encoding/json's Valid would, except that nesting deeper than 512 reports false.
func Valid(b []byte) bool {
	i := skipWS(b, 0)
	end, ok := scanValue(b, i, maxDepth, false)
	return ok && skipWS(b, end) == len(b)
}

// scanValue returns the index just past the valid JSON value that starts at b[i], nested at
// most limit (≤ maxDepth) deep, its strings checked as scanString's strict says; it does not
// recurse (a bit stack records which containers are objects).
func scanValue(b []byte, i, limit int, strict bool) (int, bool) {
	var objects [maxDepth / 64]uint64
	depth := 0
	push := func(object bool) {
		w, bit := depth/64, uint64(1)<<(depth%64)
		if object {
			objects[w] |= bit
		} else {
			objects[w] &^= bit
		}
		depth++
	}
	inObject := func() bool { d := depth - 1; return objects[d/64]&(uint64(1)<<(d%64)) != 0 }
	// key reads `"name" :` at i and returns the index of what follows.
	key := func(i int) (int, bool) {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		end, ok := scanString(b, i, strict)
		if !ok {
			return 0, false
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		return skipWS(b, i+1), true
	}
	for {
		// A value starts at i.
		if i >= len(b) {
			return 0, false
		}
		var ok bool
		switch c := b[i]; {
		case (c == '{' || c == '[') && depth >= limit:
			return 0, false // counting the one opening here, past limit
		case c == '{':
			i = skipWS(b, i+1)
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			push(true)
			if i, ok = key(i); !ok {
				return 0, false
			}
			continue
		case c == '[':
			i = skipWS(b, i+1)
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			push(false)
			continue
		case c == '"':
			if i, ok = scanString(b, i, strict); !ok {
				return 0, false
			}
		case c == 't':
			if !bytes.HasPrefix(b[i:], []byte("true")) {
				return 0, false
			}
			i += 4
		case c == 'f':
			if !bytes.HasPrefix(b[i:], []byte("false")) {
				return 0, false
			}
			i += 5
		case c == 'n':
			if !bytes.HasPrefix(b[i:], []byte("null")) {
				return 0, false
			}
			i += 4
		case c == '-' || c >= '0' && c <= '9':
			if i, ok = scanNumber(b, i); !ok {
				return 0, false
			}
		default:
			return 0, false
		}
		// A value ended at i: close containers until one continues.
		for {
			if depth == 0 {
				return i, true
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, false
			}
			obj := inObject()
			if b[i] == ',' {
				i = skipWS(b, i+1)
				if obj {
					if i, ok = key(i); !ok {
						return 0, false
					}
				}
				break
			}
			if obj && b[i] == '}' || !obj && b[i] == ']' {
				depth--
				i++
				continue
			}
			return 0, false
		}
	}
}

// scanNumber returns the index just past the JSON number at b[i]. What follows is the caller's to
// check, as "01" is the number 0 followed by a stray digit.
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return 0, false
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// Word masks for scanString's eight-bytes-at-a-time test.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// specials marks (bit 7) each byte of the little-endian word x that is a quote, a backslash or
// a control character (below 0x20). Borrows spread only above a byte that matches, so the mask is
// exact up to its lowest mark, and zero exactly when no byte matches.
func specials(x uint64) uint64 {
	quote := x ^ (ones * '"')
	slash := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x | (quote-ones)&^quote | (slash-ones)&^slash) & highs
}

// TextEnd returns the index of the first byte of b that a JSON string's text cannot hold as it
// is (a quote, a backslash, a control character), or len(b): where the text of a literal read in
// place stops at its end or its next escape. Eight bytes at a time, by specials (filter's token
// bound reads each message so).
func TextEnd(b []byte) int {
	j := 0
	for ; j+8 <= len(b); j += 8 {
		if specials(binary.LittleEndian.Uint64(b[j:])) != 0 {
			break
		}
	}
	for ; j < len(b); j++ {
		if c := b[j]; c == '\\' || c == '"' || c < 0x20 {
			break
		}
	}
	return j
}

// StringAt returns the index just past the valid JSON string that opens at b[i] (its escapes
// checked, its UTF-8 not, as Object's validating walk checks a string); ok is false when none
// does. A reader that expects a line's members in a fixed order takes its strings so.
func StringAt(b []byte, i int) (end int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	return scanString(b, i, false)
}

// scanString returns the index just past the valid JSON string that opens at b[i]; strict also
// refuses invalid UTF-8 and an escaped surrogate that is not half of a pair (Text). Message
// contents are most of a body, so the string's end and its escapes are found with
// bytes.IndexByte (the runtime's vector search), and the text between them is checked eight
// bytes at a time by plainText. The closing quote found is kept until an escaped quote passes it,
// so that a string of many escapes is still read once.
func scanString(b []byte, i int, strict bool) (int, bool) {
	i++
	if end := shortEnd(b, i, strict); end != 0 {
		return end, true
	}
	q := -1 // the first quote at or after i, once looked for
	for {
		if q < i {
			n := bytes.IndexByte(b[i:], '"')
			if n < 0 {
				return 0, false
			}
			q = i + n
		}
		end := q
		if n := bytes.IndexByte(b[i:q], '\\'); n >= 0 {
			end = i + n
		}
		if !plainText(b[i:end], strict) {
			return 0, false
		}
		if end == q {
			return q + 1, true
		}
		i = end // an escape
		if i+1 >= len(b) {
			return 0, false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
				return 0, false
			}
			if strict && b[i+2]|0x20 == 'd' && b[i+3] >= '8' { // U+D800–U+DFFF
				if utf16.DecodeRune(getu4(b[i:]), getu4(b[i+6:])) == utf8.RuneError {
					return 0, false
				}
				i += 6 // and the second half, below
			}
			i += 6
		default:
			return 0, false
		}
	}
}

// shortEnd is for a short string (a key, a role, a model's name), which ends in its first word:
// the index just past the closing quote when it is among the eight bytes from i, the text of a
// string, and no byte before it is special (a backslash, a control character or, ascii, a byte
// above 0x7f); 0 otherwise, and the caller reads the string the long way.
func shortEnd(b []byte, i int, ascii bool) int {
	if i >= len(b)-7 {
		return 0
	}
	x := word(b, i)
	m := specials(x)
	if m == 0 {
		return 0
	}
	k := i + bits.TrailingZeros64(m)>>3
	if b[k] != '"' || ascii && x&highs&(m&-m-1) != 0 {
		return 0
	}
	return k + 1
}

// plainText reports whether s, a string's text between its escapes (no quote, no backslash), has
// no control character and, strict, is valid UTF-8. It tests eight bytes at a time: ASCII costs
// strict one test more than the control characters' alone, and two-byte runes (Latin, Greek,
// Cyrillic, Arabic, Hebrew text) are checked a word at a time too (pairs); longer ones go rune by
// rune to the end of their word.
func plainText(s []byte, strict bool) bool {
	k := 0
	if !strict {
		for ; k < len(s)-7; k += 8 {
			if x := word(s, k); (x-ones*0x20)&^x&highs != 0 {
				return false
			}
		}
		for ; k < len(s); k++ {
			if s[k] < 0x20 {
				return false
			}
		}
		return true
	}
	for {
		j, lead, ok := words(s[k:], ones*0x20, highs, ones*0x1E, ones*0x7E)
		if !ok {
			return false // a control character
		}
		k += j
		if lead != 0 {
			// pairs checked the lead that closed the last word; its continuation opens the next.
			if k == len(s) || s[k]&0xc0 != 0x80 {
				return false
			}
			k++
		}
		// Rune by rune to the end of this word (or of s), and on through the run of runes of two
		// to four bytes that follows (text in Chinese, Japanese, Korean, Hindi, Thai, or emoji, is
		// little else), then words again from the first ASCII byte after them.
		for stop := min(k+8, len(s)); k < len(s); {
			c := s[k]
			if c < utf8.RuneSelf {
				if k >= stop {
					break
				}
				if c < 0x20 {
					return false
				}
				k++
				continue
			}
			n := utf8x.RuneLen(s[k:])
			if n == 0 {
				return false
			}
			k += n
		}
		if k >= len(s) {
			return true
		}
	}
}

// words reads t eight bytes at a time while its words are text of ASCII and two-byte runes
// (pairs), and returns where it stopped: before t's last seven bytes or fewer, or at a word with
// a longer rune, for plainText's rune-by-rune read. lead says a two-byte rune opened in the last
// word read; ok is false at a control character.
//
// Its constants come as arguments (c20, hs, c1e and c7e: 0x20, 0x80, 0x1E and 0x7E in each byte),
// and it is not inlined, so that they stay arguments: as constants, inside plainText's loop, the
// compiler loaded two to four of them into registers again at every word, and kept the word and
// the open rune on the stack (BenchmarkText1KB's walk: plainText 6,279 instructions → 5,492,
// 462 → 422 ns).
//
//go:noinline
func words(t []byte, c20, hs, c1e, c7e uint64) (j int, lead uint64, ok bool) {
	for ; j < len(t)-7; j += 8 {
		x := word(t, j)
		if ((x-c20)|x)&hs|lead != 0 { // a byte below 0x20 or above 0x7f, or a rune open
			if (x-c20)&^x&hs != 0 {
				return j, 0, false // a control character
			}
			next, ok := pairs(x, lead, hs, c1e, c7e)
			if !ok {
				break
			}
			lead = next
		}
	}
	return j, lead, true
}

// word is the little-endian word at s[k:k+8], written out so that a loop that keeps k below
// len(s)-7 reads it with no bounds check.
func word(s []byte, k int) uint64 {
	_ = s[k+7]
	return uint64(s[k]) | uint64(s[k+1])<<8 | uint64(s[k+2])<<16 | uint64(s[k+3])<<24 |
		uint64(s[k+4])<<32 | uint64(s[k+5])<<40 | uint64(s[k+6])<<48 | uint64(s[k+7])<<56
}

// pairs checks the little-endian word x, in which no byte is special, as text of ASCII and
// two-byte runes only: every lead (110xxxxx, not the overlong C0 or C1) is followed by one
// continuation (10xxxxxx), and every continuation follows a lead. open says byte 0 must be a
// continuation (its lead ended the word before); the result says the same of the next word.
// false also means "a longer rune is here": the caller reads this word rune by rune. Its
// constants are arguments, for words: hs is highs, c1e and c7e 0x1E and 0x7E in each byte.
func pairs(x, open, hs, c1e, c7e uint64) (uint64, bool) {
	hi := x & hs
	b6 := x << 1 & hs
	if hi&b6&(x<<2) != 0 {
		return 0, false // 111xxxxx: a lead of three or more bytes, or no UTF-8 at all
	}
	lead, cont := hi&b6, hi&^b6
	// (c & 0x1E) is 0 for C0 and C1 only; + 0x7E sets a byte's high bit when it is not.
	if lead&^(x&c1e+c7e) != 0 || cont != lead<<8|open {
		return 0, false
	}
	return lead >> 56, true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) rune {
	switch {
	case c <= '9':
		return rune(c - '0')
	case c <= 'F':
		return rune(c - 'A' + 10)
	}
	return rune(c - 'a' + 10)
}

// getu4 decodes the \uXXXX escape at the start of b, or returns -1.
func getu4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		if !isHex(c) {
			return -1
		}
		r = r<<4 | hexVal(c)
	}
	return r
}

// Unquote decodes q, which must be exactly one JSON string literal, to the string
// encoding/json's Unmarshal would give: invalid UTF-8 becomes U+FFFD byte by byte, as does an
// escaped surrogate that is not half of a pair. ok is false where Unmarshal would fail. A literal
// without escapes costs one copy.
func Unquote(q []byte) (string, bool) {
	s, _, ok := UnquotePlain(q)
	return s, ok
}

// UnquotePlain is Unquote that also reports whether q was plain: no escape and only valid
// UTF-8, so that s is the text between its quotes byte for byte. A writer that would escape s
// again can copy such a literal instead (the translated requests' texts).
func UnquotePlain(q []byte) (s string, plain, ok bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false, false
	}
	body := q[1 : len(q)-1]
	var out strings.Builder
	for i := 0; ; {
		// Copy a run of plain text at once; only escapes and invalid UTF-8 go byte by byte.
		j := i
		for j+8 <= len(body) && specials(binary.LittleEndian.Uint64(body[j:])) == 0 {
			j += 8
		}
		for j < len(body) && body[j] >= 0x20 && body[j] != '"' && body[j] != '\\' {
			j++
		}
		if j == len(body) && i == 0 && utf8.Valid(body) {
			return string(body), true, true
		}
		if out.Cap() == 0 {
			out.Grow(len(body))
		}
		appendText(&out, body[i:j])
		if j == len(body) {
			return out.String(), false, true
		}
		if body[j] != '\\' || j+1 == len(body) {
			return "", false, false // a bare quote or a control character
		}
		i = j + 2
		switch body[j+1] {
		case '"', '\\', '/':
			out.WriteByte(body[j+1])
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r := getu4(body[j:])
			if r < 0 {
				return "", false, false
			}
			i = j + 6
			if utf16.IsSurrogate(r) {
				r = utf16.DecodeRune(r, getu4(body[i:]))
				if r != utf8.RuneError {
					i += 6
				}
			}
			out.WriteRune(r)
		default:
			return "", false, false
		}
	}
}

// appendText writes text with each byte of invalid UTF-8 as U+FFFD, as encoding/json decodes it.
func appendText(out *strings.Builder, text []byte) {
	if utf8.Valid(text) {
		out.Write(text)
		return
	}
	for len(text) > 0 {
		r, size := utf8.DecodeRune(text)
		if r == utf8.RuneError && size == 1 {
			out.WriteString("\uFFFD")
		} else {
			out.Write(text[:size])
		}
		text = text[size:]
	}
}

// AppendUnquote appends what Unquote would return to dst.
func AppendUnquote(dst, q []byte) ([]byte, bool) {
	if len(q) < 2 || q[0] != '"' {
		return dst, false
	}
	for i := 1; i < len(q); {
		c := q[i]
		switch {
		case c == '"':
			return dst, i == len(q)-1
		case c < 0x20:
			return dst, false
		case c == '\\':
			if i+1 >= len(q) {
				return dst, false
			}
			switch q[i+1] {
			case '"', '\\', '/':
				dst = append(dst, q[i+1])
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := getu4(q[i:])
				if r < 0 {
					return dst, false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, getu4(q[i:])); dec != utf8.RuneError {
						i += 6
						dst = utf8.AppendRune(dst, dec)
						continue
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				return dst, false
			}
			i += 2
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(q) && q[j] >= 0x20 && q[j] < utf8.RuneSelf && q[j] != '"' && q[j] != '\\' {
				j++
			}
			dst = append(dst, q[i:j]...)
			i = j
		default:
			r, size := utf8.DecodeRune(q[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, q[i:i+size]...)
			}
			i += size
		}
	}
	return dst, false
}

// Exact reports whether q is byte for byte what AppendString(dst, s, false) writes for its text
// s: valid UTF-8, no raw quote, control character, U+2028 or U+2029, and only the escapes that
// writer makes (\" \\ \b \f \n \r \t, \u2028 \u2029, and \u00xx in lower-case hex for another
// control character). A reader that would unquote q only to write it again so can copy q
// instead (the translated streams' tokens; a text as a Python or Go server writes it nearly
// always is, but for Go's HTML escapes, \u003c \u003e \u0026). FuzzExact holds it to that
// writer. A plain literal costs a search for a backslash and plainText's word-at-a-time check.
func Exact(q []byte) bool {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return false
	}
	// Escapes are ASCII, so the runs between them are checked apart.
	return writersEscapes(q[1:len(q)-1], false, func(run []byte) bool {
		return plainText(run, true) && bytes.IndexByte(run, '"') < 0 && !hasSeparator(run)
	})
}

// writersEscapes reports whether every escape in s, a JSON string's text between its quotes, is
// the one AppendString(dst, text, html) writes for its character (\" \\ \b \f \n \r \t by name,
// \u2028 \u2029, with html \u003c \u003e \u0026, and \u00xx in lower-case hex for another
// control character), and run, when not nil, holds of every run of text between them.
func writersEscapes(s []byte, html bool, run func([]byte) bool) bool {
	for {
		i := bytes.IndexByte(s, '\\')
		if run != nil {
			if i < 0 && !run(s) || i >= 0 && !run(s[:i]) {
				return false
			}
		}
		if i < 0 {
			return true
		}
		if i+1 == len(s) {
			return false
		}
		n := 2
		switch s[i+1] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+6 > len(s) || !writtenU(s[i+2:i+6], html) {
				return false
			}
			n = 6
		default:
			return false
		}
		s = s[i+n:]
	}
}

// writtenU reports whether h, the four digits of a \u escape, are the ones AppendString writes
// for their character, with html or without.
func writtenU(h []byte, html bool) bool {
	switch string(h) {
	case "2028", "2029":
		return true
	case "003c", "003e", "0026":
		return html
	case "0008", "0009", "000a", "000c", "000d":
		return false // \b, \t, \n, \f, \r by name
	}
	return h[0] == '0' && h[1] == '0' && (h[2] == '0' || h[2] == '1') && ('0' <= h[3] && h[3] <= '9' || 'a' <= h[3] && h[3] <= 'f')
}

// hasSeparator reports whether s holds U+2028 or U+2029 (E2 80 A8, E2 80 A9).
func hasSeparator(s []byte) bool {
	for {
		i := bytes.IndexByte(s, 0xe2)
		if i < 0 || i+2 >= len(s) {
			return false
		}
		if s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9) {
			return true
		}
		s = s[i+1:]
	}
}

// Canonical reports whether q, one valid JSON string literal, is written as AppendString(dst, s,
// true) writes its text s, but for <, >, &, U+2028 and U+2029, which it may hold unescaped: only
// valid UTF-8, and every escape the one AppendString writes for its character (\" \\ \b \f \n \r
// \t, \u003c \u003e \u0026 \u2028 \u2029, and \u00xx in lower-case hex for another control
// character). AppendCompact(dst, q, true) then writes exactly what AppendString(dst, s, true)
// writes, so a writer can copy the client's literal instead of decoding and escaping it again
// (FuzzCanonicalMatchesEncoding). A text as an agent's client writes it, with newlines and quotes
// escaped, nearly always is; a JSON encoder that escapes "/" or non-ASCII is not.
func Canonical(q []byte) bool {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return false
	}
	s := q[1 : len(q)-1]
	return utf8.Valid(s) && writersEscapes(s, true, nil)
}
