package swar

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// classes are the byte classes the gateway's checks test, each as a word test and byte by byte.
var classes = []struct {
	name  string
	word  func(uint64) uint64
	bytes func(byte) bool
}{
	{"control or DEL", func(x uint64) uint64 { return Below(x, ' ') | Is(x, 0x7f) },
		func(b byte) bool { return b < ' ' || b == 0x7f }},
	{"space, control or DEL", func(x uint64) uint64 { return Below(x, '!') | Is(x, 0x7f) },
		func(b byte) bool { return b <= ' ' || b == 0x7f }},
	{"quote, equals, space or above 0x7f", func(x uint64) uint64 { return Below(x, '!') | Is(x, '=') | Is(x, '"') | High(x) },
		func(b byte) bool { return b <= ' ' || b == '=' || b == '"' || b >= 0x80 }},
	{"path specials", func(x uint64) uint64 { return Is(x, '%') | Is(x, '?') | Is(x, '#') | Is(x, 0x7f) | High(x) },
		func(b byte) bool { return b == '%' || b == '?' || b == '#' || b >= 0x7f }},
	{"below 0x60", func(x uint64) uint64 { return Below(x, 0x60) }, func(b byte) bool { return b < 0x60 }},
	{"NUL", func(x uint64) uint64 { return Is(x, 0) }, func(b byte) bool { return b == 0 }},
}

// flagged reads s as a check does, eight bytes a step and its last few in one word, and says
// whether a word was marked.
func flagged(s string, word func(uint64) uint64, pad byte) bool {
	i := 0
	for ; i < len(s)-7; i += 8 {
		if word(Word(s, i)) != 0 {
			return true
		}
	}
	return word(Short(s[i:], pad)) != 0
}

func hasByte(s string, in func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if in(s[i]) {
			return true
		}
	}
	return false
}

// TestFlagsExactly holds the word tests, read as a check reads them with a pad of no class, to the byte
// loops: a word is marked if and only if a byte of s is of the class, for every length from 0 to
// 40 and every place of one or two such bytes among plain ones.
func TestFlagsExactly(t *testing.T) {
	const pad = 'a'
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range classes {
		var plain, odd []byte // bytes of the class and not, the pad excluded
		for b := range 256 {
			if c.bytes(byte(b)) {
				odd = append(odd, byte(b))
			} else if b != pad {
				plain = append(plain, byte(b))
			}
		}
		if c.bytes(pad) {
			t.Fatalf("%s: the pad is of the class", c.name)
		}
		for n := 0; n <= 40; n++ {
			for trial := 0; trial < 200; trial++ {
				b := make([]byte, n)
				for i := range b {
					b[i] = plain[r.IntN(len(plain))]
				}
				if n > 0 && trial%4 != 0 {
					b[r.IntN(n)] = odd[r.IntN(len(odd))]
					if trial%3 == 0 {
						b[r.IntN(n)] = odd[r.IntN(len(odd))]
					}
				}
				s := string(b)
				if got, want := flagged(s, c.word, pad), hasByte(s, c.bytes); got != want {
					t.Fatalf("%s: %q flagged %v, has a byte of the class %v", c.name, s, got, want)
				}
			}
		}
	}
}

// TestShortCoversEveryByte checks that each byte of a string under eight bytes is in the word
// Short makes, and only pad besides.
func TestShortCoversEveryByte(t *testing.T) {
	for n := 0; n < 8; n++ {
		s := strings.Repeat("x", n)
		for i := 0; i < n; i++ {
			b := []byte(s)
			b[i] = 'Z'
			x := Short(string(b), '.')
			if Is(x, 'Z') == 0 {
				t.Errorf("Short(%q) = %#x: byte %d is not in it", b, x, i)
			}
			for k := 0; k < 8; k++ {
				if c := byte(x >> (8 * k)); c != 'x' && c != 'Z' && c != '.' {
					t.Errorf("Short(%q) = %#x: byte %d of the word is %q", b, x, k, c)
				}
			}
		}
		if n < 8 && n > 0 && Is(Short(s, '.'), 'x') == 0 {
			t.Errorf("Short(%q) has none of its bytes", s)
		}
	}
}

func FuzzFlagsExactly(f *testing.F) {
	for _, s := range []string{"", "a", "abc", "a\tb", "GET /v1/chat/completions", "x=\"y\"", "é", "\x7f1234567", "12345678\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range classes {
			if got, want := flagged(s, c.word, 'a'), hasByte(s, c.bytes); got != want {
				t.Fatalf("%s: %q flagged %v, has a byte of the class %v", c.name, s, got, want)
			}
		}
	})
}
