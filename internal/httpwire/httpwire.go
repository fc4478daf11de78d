// Package httpwire owns the small pieces of HTTP/1.1 grammar that the gateway's server
// (internal/h1) and its upstream client (upstream) both read, so that the two agree: tokens,
// field values, header names in canonical form, lines, the Connection header and
// Content-Length; and the Arena each connection keeps its heads in. It holds no package state
// but a read-only byte table.
package httpwire

import (
	"net/textproto"
	"strings"

	"github.com/hayula/gateway/internal/swar"
)

// IsToken reports whether s is an RFC 9110 token: a method or a field name.
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenTable[s[i]] {
			return false
		}
	}
	return true
}

// tokenTable marks the bytes of RFC 9110's tchar. It is written once, here, and only read.
var tokenTable = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		t[c] = 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
	}
	return t
}()

// ValidValue reports whether a field value has no control character but tab: no NUL, no bare
// CR, no line break, no DEL. It reads eight bytes a step (swar): a request's ten or so
// values cost some 1,200 instructions byte by byte, most of its head's checks; a tab sends
// the rest of the value to the byte loop.
func ValidValue(s string) bool {
	i := 0
	for ; i < len(s)-7; i += 8 {
		if controlOrDEL(swar.Word(s, i)) {
			return validBytes(s[i:])
		}
	}
	return !controlOrDEL(swar.Short(s[i:], 'a')) || validBytes(s[i:])
}

// controlOrDEL reports whether the word x may hold a control character (a tab included) or DEL.
func controlOrDEL(x uint64) bool { return swar.Below(x, ' ')|swar.Is(x, 0x7f) != 0 }

// validBytes is ValidValue byte by byte.
func validBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// IsCanonical reports whether s is already in canonical form (textproto's): each word starts
// upper case and goes on lower case.
func IsCanonical(s string) bool {
	upper := true
	for i := 0; i < len(s); i++ {
		b := s[i]
		if upper && 'a' <= b && b <= 'z' || !upper && 'A' <= b && b <= 'Z' {
			return false
		}
		upper = b == '-'
	}
	return true
}

// CanonicalKey is name in canonical form, without allocating for a name that already is or that
// is one of common (canonical names a peer often sends in lower case).
func CanonicalKey(name string, common []string) string {
	if IsCanonical(name) {
		return name
	}
	for _, k := range common {
		if len(k) == len(name) && strings.EqualFold(k, name) {
			return k
		}
	}
	return textproto.CanonicalMIMEHeaderKey(name)
}

// CutLine splits s after its first line, which it returns without its LF or CRLF.
func CutLine(s string) (line, rest string) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s, ""
	}
	line, rest = s[:i], s[i+1:]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

// Closes reports whether a message's Connection values (and its HTTP/1.minor version) say the
// connection closes after it: "close" among the tokens, or HTTP/1.0 without "keep-alive".
func Closes(conn []string, minor int) bool {
	keepAlive := false
	for _, v := range conn {
		for v != "" {
			var tok string
			tok, v, _ = strings.Cut(v, ",")
			switch tok = strings.Trim(tok, " \t"); {
			case strings.EqualFold(tok, "close"):
				return true
			case strings.EqualFold(tok, "keep-alive"):
				keepAlive = true
			}
		}
	}
	return minor == 0 && !keepAlive
}

// ParseLength reads a Content-Length value: ASCII digits only, at most 18 of them.
// strconv.ParseInt would take "+5" and "-0", which net/http and other readers refuse, and two
// readers that disagree on a length disagree on where the next message starts.
func ParseLength(v string) (int64, bool) {
	if v == "" || len(v) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(v[i]-'0')
	}
	return n, true
}

// TrimOWS is strings.Trim(v, " \t"): a field value without its optional whitespace (RFC 9110
// §5.5). strings.Trim builds its set of bytes on every call.
func TrimOWS(v string) string {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}
