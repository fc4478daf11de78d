// Package jsonx owns reading a JSON body in place (a validating walk over one object or array
// that hands out values as sub-slices, and unquoting strings as encoding/json does) and splicing
// of top-level members in a JSON object without re-marshalling it.
//
// The server decodes a client body once and validates it; adapters then forward those raw bytes
// with a field or two changed. Re-marshalling through map[string]any would reorder keys, rewrite
// numbers and cost an allocation per value, so this package scans only the top level of the
// object (strings with escapes, nested objects and arrays skipped by depth) and copies the rest
// verbatim.
//
// The splicing functions assume valid JSON objects. On anything else they do not panic: Has
// reports false, Delete returns body unchanged and SetString returns an unchanged copy.
package jsonx

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"unicode/utf8"
)

// member is the position of one top-level member: body[keyStart:keyEnd] is the quoted key and
// body[valStart:valEnd] the raw value.
type member struct {
	keyStart, keyEnd int
	valStart, valEnd int
}

// iter walks the members of a top-level object. It allocates nothing.
type iter struct {
	b     []byte
	pos   int
	first bool
	// close is the index of the object's closing brace once next has returned false with ok set.
	close int
	ok    bool
}

func newIter(b []byte) (iter, bool) {
	it := iter{b: b, first: true}
	it.pos = skipWS(b, 0)
	if it.pos >= len(b) || b[it.pos] != '{' {
		return it, false
	}
	it.pos++
	return it, true
}

// next returns the next member. When it returns false, it.ok says whether the object ended
// cleanly (rather than on malformed input).
func (it *iter) next() (member, bool) {
	m, ok := it.key()
	if !ok {
		return m, false
	}
	end, ok := skipValue(it.b, it.pos)
	if !ok {
		return m, false
	}
	m.valEnd = end
	it.pos = end
	return m, true
}

// key reads the next member's key and stops at its value: m.valStart is set, m.valEnd is not,
// and it.pos is m.valStart. The caller skips the value (next) or stops there.
func (it *iter) key() (member, bool) {
	var m member
	b := it.b
	it.pos = skipWS(b, it.pos)
	if it.pos >= len(b) {
		return m, false
	}
	if b[it.pos] == '}' {
		it.close, it.ok = it.pos, true
		return m, false
	}
	if !it.first {
		if b[it.pos] != ',' {
			return m, false
		}
		it.pos = skipWS(b, it.pos+1)
	}
	it.first = false
	if it.pos >= len(b) || b[it.pos] != '"' {
		return m, false
	}
	m.keyStart = it.pos
	end, ok := skipString(b, it.pos)
	if !ok {
		return m, false
	}
	m.keyEnd = end
	it.pos = skipWS(b, end)
	if it.pos >= len(b) || b[it.pos] != ':' {
		return m, false
	}
	it.pos = skipWS(b, it.pos+1)
	m.valStart = it.pos
	return m, it.pos < len(b)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipWS returns the index of the first byte from b[i] that is not JSON whitespace. Every
// whitespace byte is at most a space, so a byte above one, the usual case, ends it at one test.
func skipWS(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string that opens at b[i], without validating it.
// Its first 32 bytes are read a word at a time for a quote or a backslash (quotedEnd): keys and
// the short values around them (ids, models, finish reasons) end there, at a fraction of a call
// to bytes.IndexByte and of shortEnd's tests, which were most of a walk to an answer's choices.
// A longer string is read from quote to quote by bytes.IndexByte (vectorised), looking back for
// escaping backslashes, because long message contents are most of a body.
func skipString(b []byte, i int) (int, bool) {
	i++
	for n := 0; n < 4 && i <= len(b)-8; n++ {
		k := quotedEnd(binary.LittleEndian.Uint64(b[i:]))
		if k == 8 {
			i += 8
			continue
		}
		if i += k; b[i] == '"' {
			return i + 1, true
		}
		i += 2 // a backslash and the byte it escapes
	}
	for ; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, false
		}
		i += j
		n := 0
		for k := i - 1; b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return i + 1, true
		}
	}
	return 0, false
}

// quotedEnd is the index of the first quote or backslash in the little-endian word x, or 8.
func quotedEnd(x uint64) int { return bits.TrailingZeros64(quoteMarks(x)) >> 3 }

// quoteMarks marks (in its high bit) each quote and backslash of the little-endian word x. A
// borrow may mark a byte above one marked truly, never one below it: the lowest mark is exact.
func quoteMarks(x uint64) uint64 {
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return ((q-ones)&^q | (bs-ones)&^bs) & highs
}

// skipValue returns the index just past the value that starts at b[i]. Nested containers are
// skipped by counting depth; strings are skipped whole so that brackets inside them do not count.
func skipValue(b []byte, i int) (int, bool) { return skipNested(b, i, math.MaxInt) }

// skipNested is skipValue for a value that may nest at most limit containers deep (itself
// counting 1, as scanValue counts): a deeper one is not skipped, false.
func skipNested(b []byte, i, limit int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				if depth++; depth > limit {
					return 0, false
				}
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	}
	start := i
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i, i > start
		}
		i++
	}
	return i, i > start
}

// A name is a key a walk looks for, with what keyIs needs to know of it once per walk.
type name struct {
	s     string
	plain bool // ASCII, no backslash, no quote: every caller's constant ("choices", "usage")
}

func nameOf(key string) name {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c == '\\' || c == '"' || c >= utf8.RuneSelf {
			return name{s: key}
		}
	}
	return name{s: key, plain: true}
}

// keyIs reports whether the quoted key q names n. A plain name is named only by its own bytes
// or by a spelling with escapes, which is longer than the name it spells: a key no longer than
// it is compared as bytes, a longer one without a backslash is not it (invalid UTF-8 decodes to
// U+FFFD, no ASCII), and only a longer one with one is decoded by matches. A walk asks this of
// every key it passes, and matches' loop over each key's bytes was most of an answer's walk to
// its choices (TestKeyIsAgrees).
func keyIs(q []byte, n name) bool {
	if !n.plain {
		return matches(q, []string{n.s})
	}
	raw := q[1 : len(q)-1]
	if len(raw) <= len(n.s) {
		return string(raw) == n.s
	}
	return bytes.IndexByte(raw, '\\') >= 0 && matches(q, []string{n.s})
}

// matches reports whether the quoted key q names one of keys. ASCII keys without escapes
// compare as bytes; the rare escaped (or non-ASCII) key is decoded so that "mod\u0065l" names
// model, as it would for encoding/json. A walk asks it of every key it passes, so the plain test
// is one loop over a few bytes (an IndexByte and a utf8.Valid were about 150 instructions a key).
func matches(q []byte, keys []string) bool {
	raw := q[1 : len(q)-1]
	if asciiPlain(raw) {
		for _, k := range keys {
			if string(raw) == k {
				return true
			}
		}
		return false
	}
	var s string
	if json.Unmarshal(q, &s) != nil {
		return false
	}
	for _, k := range keys {
		if s == k {
			return true
		}
	}
	return false
}

// asciiPlain reports whether s has no backslash and no byte above 0x7f: the text of a key that
// is its own bytes.
func asciiPlain(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Has reports whether a top-level key is present.
func Has(body []byte, key string) bool {
	want := nameOf(key)
	it, ok := newIter(body)
	if !ok {
		return false
	}
	for {
		m, more := it.next()
		if !more {
			return false
		}
		if keyIs(body[m.keyStart:m.keyEnd], want) {
			return true
		}
	}
}

// NonEmptyArray reports whether the first top-level member named key of the object body is an
// array with something in it. The members before it are skipped, and the array's elements are
// not read: whatever follows its '[' other than ']' counts. It is for telling an answer with
// results from one without, on every answer, at the cost of a look at each member's key; the
// answer's JSON is not checked.
func NonEmptyArray(body []byte, key string) bool {
	want := nameOf(key)
	it, ok := newIter(body)
	if !ok {
		return false
	}
	for {
		m, more := it.key()
		if !more {
			return false
		}
		if keyIs(body[m.keyStart:m.keyEnd], want) {
			if body[m.valStart] != '[' {
				return false
			}
			i := skipWS(body, m.valStart+1)
			return i < len(body) && body[i] != ']'
		}
		end, ok := skipValue(body, it.pos)
		if !ok {
			return false
		}
		it.pos = end
	}
}

// Last returns the value of the last top-level member named key of the object body (the one a
// decoder keeps), without validating it. It looks from the end, colon by colon, for the key:
// an answer's usage is at or near its end, and walking every member from the start (a
// completion's content included) cost 1.6 µs on the bench's answer. The member found counts
// only when the members after it close the object that ends body, which a member of a nested
// object cannot do; when it does not, the members are walked from the start. A body in which
// the key is written nowhere (as "key" and a colon) has no such member: ok is false at the
// cost of the one backward pass.
func Last(body []byte, key string) (value []byte, ok bool) {
	for i := len(body); ; {
		i = lastByte(body, i, ':')
		if i < 0 {
			return nil, false
		}
		k := i
		for k > 0 && (body[k-1] == ' ' || body[k-1] == '\t' || body[k-1] == '\n' || body[k-1] == '\r') {
			k--
		}
		open := k - 2 - len(key)
		if open < 0 || body[k-1] != '"' || string(body[open+1:k-1]) != key || body[open] != '"' || escaped(body, open) {
			continue
		}
		vs := skipWS(body, i+1)
		if ve, ok := skipValue(body, vs); ok && closesObject(body, ve) {
			return body[vs:ve], true
		}
		break
	}
	m, n, ok := lastMember(body, nameOf(key)) // an object cut short (not ok) has no last member
	if !ok || n == 0 {
		return nil, false
	}
	return body[m.valStart:m.valEnd], true
}

// lastByte is bytes.LastIndexByte(b[:i], c), read eight bytes a step from the end: the standard
// library's is a loop a byte a step on amd64 (it has no vector form), and Last calls it once a
// colon from an answer's end to its usage (BenchmarkUsage on the bench's answer, whose usage is
// 75 bytes from its end: 2,127 → 1,959 instructions).
func lastByte(b []byte, i int, c byte) int {
	const lows = ones * 0x7f
	b = b[:i]
	cc := ones * uint64(c)
	for len(b) >= 8 {
		y := binary.LittleEndian.Uint64(b[len(b)-8:]) ^ cc
		// The high bit of each byte of y that is zero, and of no other: adding 0x7f to its low
		// seven bits carries into the high bit unless they are zero, and no byte carries into
		// the next.
		if m := ^((y&lows + lows) | y | lows); m != 0 {
			return len(b) - 8 + (63-bits.LeadingZeros64(m))>>3
		}
		b = b[:len(b)-8]
	}
	for k := len(b) - 1; k >= 0; k-- {
		if b[k] == c {
			return k
		}
	}
	return -1
}

// escaped reports whether body[i] follows an odd run of backslashes.
func escaped(body []byte, i int) bool {
	n := 0
	for i > 0 && body[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}

// closesObject reports whether what follows a member's value at body[i:] is more members and
// then the closing brace of the object that ends body: whitespace alone after it.
func closesObject(body []byte, i int) bool {
	for {
		i = skipWS(body, i)
		if i >= len(body) {
			return false
		}
		switch body[i] {
		case '}':
			return skipWS(body, i+1) == len(body)
		case ',':
			i = skipWS(body, i+1)
			if i >= len(body) || body[i] != '"' {
				return false
			}
			end, ok := skipString(body, i)
			if !ok {
				return false
			}
			i = skipWS(body, end)
			if i >= len(body) || body[i] != ':' {
				return false
			}
			if i, ok = skipValue(body, skipWS(body, i+1)); !ok {
				return false
			}
		default:
			return false
		}
	}
}

// Delete returns body (a JSON object) without the given top-level keys. It returns body itself
// (no copy) when none is present. Nested keys with the same names are untouched. Every occurrence
// of a duplicated key is removed, as a decoder would then see none.
func Delete(body []byte, keys ...string) []byte {
	it, ok := newIter(body)
	if !ok {
		return body
	}
	found := false
	for {
		m, more := it.next()
		if !more {
			break
		}
		if matches(body[m.keyStart:m.keyEnd], keys) {
			found = true
		}
	}
	if !it.ok || !found {
		return body
	}
	out := make([]byte, 0, len(body))
	return rebuildInto(out, body, func(q []byte) bool { return matches(q, keys) }, -1, "")
}

// Place is where a top-level member's value lies in an object, or where a new member goes.
type Place struct {
	// Start and End bound the value of the last member named key (the one a decoder keeps). With
	// no such member both are where a new last member goes: just after the last member's value,
	// so that a comma goes first, or, in an object without members (Empty), just before its
	// closing brace.
	Start, End int
	// Found: a member named key is there.
	Found bool
	// Empty: the object has no members at all.
	Empty bool
}

// Locate is where key's value lies in the object body, or where a member named key would go,
// for a caller that splices a value in without copying body (writing body[:Start], its bytes,
// body[End:]). ok is false when body is not a well-formed object (the members are walked, their
// values skipped, not validated). It allocates nothing unless a key is written with escapes.
func Locate(body []byte, key string) (p Place, ok bool) {
	want := nameOf(key)
	it, ok := newIter(body)
	if !ok {
		return Place{}, false
	}
	lastEnd := -1
	for {
		m, more := it.next()
		if !more {
			break
		}
		lastEnd = m.valEnd
		if keyIs(body[m.keyStart:m.keyEnd], want) {
			p.Start, p.End, p.Found = m.valStart, m.valEnd, true
		}
	}
	if !it.ok {
		return Place{}, false
	}
	if !p.Found {
		p.Start, p.Empty = lastEnd, lastEnd < 0
		if p.Empty {
			p.Start = it.close
		}
		p.End = p.Start
	}
	return p, true
}

// LocateEnd is where a new last member of the object body goes (Place's Start and End, with
// Empty when it has none), found from the end of body without a walk over its members, for a
// caller that knows the member is not there. body must be a well-formed object: ok is false when
// its last bytes are not one's end.
func LocateEnd(body []byte) (p Place, ok bool) {
	i := len(body) - 1
	for i >= 0 && isSpace(body[i]) {
		i--
	}
	if i < 1 || body[i] != '}' {
		return Place{}, false
	}
	closing := i
	i--
	for i >= 0 && isSpace(body[i]) {
		i--
	}
	switch {
	case i < 0:
		return Place{}, false
	case body[i] == '{': // no members: the new one goes where the closing brace is, as Locate says
		return Place{Start: closing, End: closing, Empty: true}, true
	}
	return Place{Start: i + 1, End: i + 1}, true // just past the last value
}

// SetString returns body with top-level key set to the JSON string value (replaced in place of
// the old value, or appended as the last member when absent). Always a new slice (body is not
// modified). With duplicate keys the last occurrence is replaced and the others removed, so the
// result decodes to value whichever duplicate a decoder would have kept. Invalid UTF-8 in key or
// value becomes U+FFFD, as encoding/json does.
func SetString(body []byte, key, value string) []byte {
	want := nameOf(key)
	last, n, ok := lastMember(body, want)
	switch {
	case !ok:
		return append([]byte(nil), body...)
	case n == 0:
		return appendMember(body, key, value)
	case n == 1:
		out := make([]byte, 0, len(body)+len(value)+8)
		out = append(out, body[:last.valStart]...)
		out = appendString(out, value)
		return append(out, body[last.valEnd:]...)
	}
	out := make([]byte, 0, len(body)+len(value)+8)
	return rebuildInto(out, body, func(q []byte) bool { return keyIs(q, want) }, last.keyStart, value)
}

// SetQuotedSplit is SetString(body, key, value) as three pieces whose concatenation is its
// result, for a caller that has value's JSON form at hand (quoted, from Quote(value)): for the
// common case of one occurrence of key, head and tail are slices of body around its value and mid
// is quoted itself, so that a caller writing the result to a socket copies and allocates nothing.
// Otherwise head is SetString's result and mid and tail are empty.
func SetQuotedSplit(body []byte, key, value string, quoted []byte) (head, mid, tail []byte) {
	last, n, ok := lastMember(body, nameOf(key))
	if !ok || n != 1 {
		return SetString(body, key, value), nil, nil
	}
	return body[:last.valStart:last.valStart], quoted[:len(quoted):len(quoted)], body[last.valEnd:]
}

// Quote is s as a JSON string, quotes included, as SetString writes it.
func Quote(s string) []byte { return appendString(make([]byte, 0, len(s)+2), s) }

// lastMember walks body's top-level members and returns want's last occurrence and how many
// there are; ok is false when body is not a well-formed object.
func lastMember(body []byte, want name) (last member, n int, ok bool) {
	it, ok := newIter(body)
	if !ok {
		return member{}, 0, false
	}
	for {
		m, more := it.next()
		if !more {
			return last, n, it.ok
		}
		if keyIs(body[m.keyStart:m.keyEnd], want) {
			last = m
			n++
		}
	}
}

// appendMember copies body, a well-formed object without key, with key:value added as its last
// member.
func appendMember(body []byte, key, value string) []byte {
	out := make([]byte, 0, len(body)+len(key)+len(value)+8)
	p, _ := LocateEnd(body)
	out = append(out, body[:p.Start]...)
	if !p.Empty {
		out = append(out, ',')
	}
	out = appendString(out, key)
	out = append(out, ':')
	out = appendString(out, value)
	return append(out, body[p.Start:]...)
}

// rebuildInto writes body with the members drop selects removed, except the member starting at
// keep, whose value is replaced by the string value. Everything else is copied byte for byte,
// including the whitespace around kept members, so that a one-key splice changes only that key.
func rebuildInto(out, body []byte, drop func(q []byte) bool, keep int, value string) []byte {
	it, _ := newIter(body)
	out = append(out, body[:it.pos]...)
	wrote := false
	prevEnd := it.pos
	for {
		m, more := it.next()
		if !more {
			break
		}
		// lead is what separates this member from the previous one: whitespace, and a comma
		// unless this is the first member.
		lead := body[prevEnd:m.keyStart]
		prevEnd = m.valEnd
		if m.keyStart != keep && drop != nil && drop(body[m.keyStart:m.keyEnd]) {
			continue
		}
		if !wrote {
			// The first member written needs no comma, whatever its position was.
			if c := bytes.IndexByte(lead, ','); c >= 0 {
				out = append(out, lead[:c]...)
				lead = lead[c+1:]
			}
		}
		out = append(out, lead...)
		wrote = true
		if m.keyStart == keep {
			out = append(out, body[m.keyStart:m.valStart]...)
			out = appendString(out, value)
			continue
		}
		out = append(out, body[m.keyStart:m.valEnd]...)
	}
	return append(out, body[prevEnd:]...)
}

const hex = "0123456789abcdef"

// wordAt is the little-endian word at s[i:i+8].
func wordAt(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// htmlMarks marks (bit 7) the bytes of the word x that are <, > or &, as specials marks its
// own: zero exactly when x holds none.
func htmlMarks(x uint64) uint64 {
	lt, gt, amp := x^(ones*'<'), x^(ones*'>'), x^(ones*'&')
	return ((lt-ones)&^lt | (gt-ones)&^gt | (amp-ones)&^amp) & highs
}

// appendString appends s as a JSON string, as encoding/json writes it with HTML escaping off.
func appendString(out []byte, s string) []byte { return AppendString(out, s, false) }

// AppendString appends s as encoding/json writes a string, byte for byte: ", \ and the control
// characters escaped (\b, \f, \n, \r, \t by name, the others as \u00XX), invalid UTF-8 as
// \ufffd, U+2028 and U+2029 escaped, and, with html (json.Marshal's default; an Encoder's
// SetEscapeHTML(false) turns it off), <, > and & as \u003c, \u003e and \u0026. The adapters'
// chunks and the Responses bridge's events are appended with it rather than marshalled
// (FuzzChunkJSONMatchesEncoding, FuzzDeltaEventMatchesMarshal, FuzzAppendStringMatchesEncoding).
func AppendString(dst []byte, s string, html bool) []byte {
	return append(AppendEscaped(append(dst, '"'), s, html), '"')
}

// AppendEscaped is AppendString without the quotes: s escaped to go inside a JSON string, as a
// piece of one a writer builds from several (the saif adapter's ChatML prompt).
func AppendEscaped(dst []byte, s string, html bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while they need no escape: ASCII and two-byte runes (Arabic,
		// Cyrillic, Greek, Hebrew, accented Latin), checked as plainText checks them (pairs). A
		// message's text, an id, a model's name are little else.
		var lead uint64 // the last word ended in a two-byte rune's lead
		for i+8 <= len(s) {
			x := wordAt(s, i)
			if specials(x) != 0 || html && htmlMarks(x) != 0 {
				break
			}
			if x&highs|lead != 0 {
				next, ok := pairs(x, lead, highs, ones*0x1E, ones*0x7E)
				if !ok {
					break
				}
				lead = next
			}
			i += 8
		}
		if lead != 0 {
			i-- // back to the lead, whose rune is read below
		}
		if i == len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!html || b != '<' && b != '>' && b != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		// A two-byte rune (Arabic, Cyrillic, Greek, Hebrew, accented Latin) is never escaped:
		// only U+2028 and U+2029, of three bytes, are.
		if b := s[i]; b >= 0xc2 && b <= 0xdf && i+1 < len(s) && s[i+1]&0xc0 == 0x80 {
			i += 2
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// AppendCompact appends src, one valid JSON value, as encoding/json writes a json.RawMessage
// holding it: white space outside strings dropped and, with html (json.Marshal's default), <, >
// and & as \u003c, \u003e and \u0026 and U+2028 and U+2029 escaped; nothing else of the value
// changes (an escape stays as it was written). A writer that appends what it used to marshal
// copies a raw value so (the Responses bridge's chat body, FuzzAppendCompactMatchesEncoding).
// src that is not valid JSON gets no error: encoding/json's would refuse it, so check first.
func AppendCompact(dst, src []byte, html bool) []byte {
	if len(src) > 1 && src[0] == '"' && src[len(src)-1] == '"' {
		// One string and no white space around it: nothing to drop, and an escape needs no care,
		// since none holds what html escapes. A message's content, and most of what a writer
		// copies, is one.
		if !html {
			return append(dst, src...)
		}
		return appendHTMLEscaped(dst, src)
	}
	start := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case ' ', '\t', '\n', '\r':
			dst = append(dst, src[start:i]...)
			start = i + 1
		case '"':
			// Within a string only an escape, the closing quote and what html escapes matter.
			for i++; ; i++ {
				if i = stringMark(src, i, html); i == len(src) {
					return append(dst, src[start:]...)
				}
				c := src[i]
				if c == '\\' {
					i++
					continue
				}
				if c == '"' {
					break
				}
				if c == '<' || c == '>' || c == '&' {
					dst = append(dst, src[start:i]...)
					dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
					start = i + 1
				} else if i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 { // 0xE2: U+2028 or U+2029?
					dst = append(dst, src[start:i]...)
					dst = append(dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
					i += 2
					start = i + 1
				}
			}
		}
	}
	return append(dst, src[start:]...)
}

// appendHTMLEscaped appends src, one JSON string literal, with <, > and & as \u003c, \u003e and
// \u0026 and U+2028 and U+2029 escaped, as AppendCompact writes it with html: eight bytes at a
// time while none is one of those or 0xE2, the lead of U+2028's and U+2029's three bytes.
func appendHTMLEscaped(dst, src []byte) []byte {
	start := 0
	for i := 0; i < len(src); i++ {
		for i+8 <= len(src) {
			x := binary.LittleEndian.Uint64(src[i:])
			e2 := x ^ (ones * 0xE2)
			if m := ((e2-ones)&^e2 | htmlMarks(x)) & highs; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i == len(src) {
			break
		}
		switch c := src[i]; c {
		case '<', '>', '&':
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
		case 0xE2:
			if i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 {
				dst = append(dst, src[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
				i += 2
				start = i + 1
			}
		}
	}
	return append(dst, src[start:]...)
}

// stringMark is the index of the first byte at or after s[i] that AppendCompact stops at within
// a string: a quote, a backslash and, with html, <, >, & and 0xE2 (the lead of U+2028's and
// U+2029's three bytes); len(s) when there is none. It passes eight bytes at a time: a text is
// nearly all bytes of none of these. Each mark is exact in the lowest byte it sets (a borrow
// only runs upward from a byte that matched), so the lowest is the first match.
func stringMark(s []byte, i int, html bool) int {
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		m := quoteMarks(x)
		if html {
			e2 := x ^ (ones * 0xE2)
			m |= ((e2-ones)&^e2 | htmlMarks(x)) & highs
		}
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(s); i++ {
		switch s[i] {
		case '"', '\\':
			return i
		case '<', '>', '&', 0xE2:
			if html {
				return i
			}
		}
	}
	return i
}
