package echo

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestEcho: control characters (C0, DEL, C1) and invalid bytes come back as \u00XX, the line
// and paragraph separators and the bidirectional controls as \uXXXX, everything else as sent; a
// long value is cut between characters.
func TestEcho(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"gpt-4o", "gpt-4o"},
		{"", ""},
		{"a\x1b[2Jb", `a\u001b[2Jb`},
		{"a\nb\r\tc\x00", `a\u000ab\u000d\u0009c\u0000`},
		{"a\x7fb", `a\u007fb`},
		{"a\u009bb\u0085c\u0080", `a\u009bb\u0085c\u0080`},
		{"a\xffb\xc3", `a\u00ffb\u00c3`},
		{"é ÿ \uFFFD \u00a0 \\u001b \"q\"", "é ÿ \uFFFD \u00a0 \\u001b \"q\""},
		{"a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"x\u202eevil\u202c \u2066\u2069 \u200e\u200f", `x\u202eevil\u202c \u2066\u2069 \u200e\u200f`},
		{"\u200d\u2010\u2030", "\u200d\u2010\u2030"},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := Bytes([]byte(c.in)); got != c.want {
			t.Errorf("Bytes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := strings.Repeat("x", Max-1) + "é" + "\x1b"
	got := String(long)
	if want := strings.Repeat("x", Max-1) + "…"; got != want {
		t.Errorf("a long value: %q, want %q", got, want)
	}
	if !utf8.ValidString(got) || strings.ContainsFunc(got, unicode.IsControl) {
		t.Errorf("a long value: %q", got)
	}
}

func FuzzEcho(f *testing.F) {
	f.Add("a\x1b[2J\n\u009b\xff")
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if !utf8.ValidString(got) || strings.ContainsFunc(got, unicode.IsControl) || strings.ContainsFunc(got, escaped) {
			t.Errorf("String(%q) = %q", s, got)
		}
		if len(s) <= Max && !strings.ContainsFunc(s, escaped) && utf8.ValidString(s) && got != s {
			t.Errorf("String(%q) = %q, changed a printable value", s, got)
		}
	})
}
