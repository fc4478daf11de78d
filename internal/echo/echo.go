// Package echo owns how an error message repeats a value the client sent (a model name, an id
// taken from the path, a parameter's value, a header's value, a role, a tool's or a content
// part's type): at most Max bytes of it, cut between characters, with each control character
// (C0, DEL, C1) and each byte of invalid UTF-8 written as \u00XX, so that a value holding ESC[2J
// or a line break cannot clear the terminal of a client that prints the message, or split its log
// line; so too the line and paragraph separators (U+2028, U+2029), which some viewers break a line
// at, and the bidirectional controls (U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), which reorder
// what a terminal shows after them ("Trojan Source"), as \uXXXX. Everything else, quotes and backslashes included, is as sent, so that the value stays
// readable as the client wrote it. The server and the upstream adapters (their request errors)
// both repeat client values, so it imports nothing of ours. Not its: the 404 and 405 messages'
// path, shown as the request line spelt it (server's pathAsSent, which escapes as a URL does),
// and the log line (internal/logfmt), on which no client value goes as it came
// (TestRequestLogLineEchoesNoClientValue).
package echo

import (
	"strings"
	"unicode/utf8"
)

// Max is the most of a client's value, in bytes, that a message repeats; a longer one is cut,
// with "…" after it.
const Max = 256

// String is s as an error message repeats it (TestEcho).
func String(s string) string {
	s = Clip(s, Max)
	if !strings.ContainsFunc(s, escaped) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			writeU(&b, rune(s[i])) // an invalid byte, not the character U+FFFD
		case escaped(r):
			writeU(&b, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Bytes is b, a value as the client sent it (a raw JSON value, say), as an error message repeats
// it: String(string(b)).
func Bytes(b []byte) string { return String(string(b)) }

// escaped reports whether r is written as \uXXXX (TestEcho).
func escaped(r rune) bool {
	switch {
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return true
	case r < 0x200e:
		return false
	}
	return r <= 0x200f || r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// writeU writes r, below U+10000, as \uXXXX.
func writeU(b *strings.Builder, r rune) {
	const hex = "0123456789abcdef"
	b.WriteString(`\u`)
	b.WriteByte(hex[r>>12&0xf])
	b.WriteByte(hex[r>>8&0xf])
	b.WriteByte(hex[r>>4&0xf])
	b.WriteByte(hex[r&0xf])
}

// Clip is s cut to at most n bytes at a character's start, with "…" when it was cut: String's
// cut, which the server's other messages (a stream's error event, a logged error) use with
// their own lengths.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
