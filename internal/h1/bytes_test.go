package h1

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// The byte loops visible and plainPath were, kept as their oracles.
func visibleByByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b <= ' ' || b == 0x7f {
			return false
		}
	}
	return true
}

func plainPathByByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b == '%' || b == '?' || b == '#' || b >= 0x7f {
			return false
		}
	}
	return true
}

// TestWordChecksAgree holds visible and plainPath, eight bytes a step, to their byte loops:
// every byte at every place of strings of 0 to 19 bytes, and random targets.
func TestWordChecksAgree(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := visible(s), visibleByByte(s); got != want {
			t.Fatalf("visible(%q) = %v, byte by byte %v", s, got, want)
		}
		if got, want := plainPath(s), plainPathByByte(s); got != want {
			t.Fatalf("plainPath(%q) = %v, byte by byte %v", s, got, want)
		}
	}
	check("")
	for n := 1; n <= 19; n++ {
		for pos := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("/", n))
				b[pos] = byte(c)
				check(string(b))
			}
		}
	}
	alphabet := []byte("/v1chat?%#= \t\x00\x7f\x80\xffé")
	rng := rand.New(rand.NewPCG(9, 10))
	for range 50000 {
		b := make([]byte, rng.IntN(48))
		for i := range b {
			if b[i] = 'a'; rng.IntN(4) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		check(string(b))
	}
}
