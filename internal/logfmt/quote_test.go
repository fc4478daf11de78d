package logfmt

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// quotesByRune is needsQuoting one rune at a time, as slog's TextHandler decides.
func quotesByRune(s string) bool {
	if s == "" {
		return true
	}
	for _, r := range s {
		if r == utf8.RuneError || r <= ' ' || r == '=' || r == '"' || unicode.IsSpace(r) || (r >= utf8.RuneSelf && !unicode.IsPrint(r)) {
			return true
		}
	}
	return false
}

// TestNeedsQuotingByWord holds the word-at-a-time scan to the rune-at-a-time rule: every byte
// value at every position of strings that cross word boundaries, and random strings.
func TestNeedsQuotingByWord(t *testing.T) {
	for n := 1; n <= 19; n++ {
		for pos := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("a", n))
				b[pos] = byte(c)
				if s := string(b); needsQuoting(s) != quotesByRune(s) {
					t.Fatalf("needsQuoting(%q) = %v, want %v", s, needsQuoting(s), quotesByRune(s))
				}
			}
		}
	}
	alphabet := []string{"a", "Z", "0", "-", "_", "/", ".", " ", "=", "\"", "\x00", "\x1f", "\x7f", "µ", "é", "ع", "\u00a0", "\u2028", "😀", "\xff", "\xc3"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		if s := b.String(); needsQuoting(s) != quotesByRune(s) {
			t.Fatalf("needsQuoting(%q) = %v, want %v", s, needsQuoting(s), quotesByRune(s))
		}
	}
}
