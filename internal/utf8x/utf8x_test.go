package utf8x

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestDecodeRuneAgrees holds DecodeRune and RuneLen to utf8.DecodeRune on every sequence of up to three bytes
// (two when the first is below 0xe0, whose third byte is never read), each cut short too, and on
// four-byte ones at the continuation range's edges, as a byte slice and as a string.
func TestDecodeRuneAgrees(t *testing.T) {
	check := func(s []byte) {
		t.Helper()
		wr, wn := utf8.DecodeRune(s)
		if r, n := DecodeRune(s); r != wr || n != wn {
			t.Fatalf("DecodeRune(% x) = %U, %d; utf8.DecodeRune %U, %d", s, r, n, wr, wn)
		}
		if r, n := DecodeRune(string(s)); r != wr || n != wn {
			t.Fatalf("DecodeRune(%q) = %U, %d; utf8.DecodeRune %U, %d", s, r, n, wr, wn)
		}
		if len(s) > 0 && s[0] >= utf8.RuneSelf {
			want := wn
			if wn == 1 {
				want = 0 // invalid
			}
			if n := RuneLen(s); n != want {
				t.Fatalf("RuneLen(% x) = %d, want %d", s, n, want)
			}
		}
	}
	check(nil)
	var b [4]byte
	for c0 := range 256 {
		b[0] = byte(c0)
		check(b[:1])
		for c1 := range 256 {
			b[1] = byte(c1)
			check(b[:2])
			if c0 < 0xe0 {
				continue
			}
			for c2 := range 256 {
				b[2] = byte(c2)
				check(b[:3])
			}
		}
	}
	edges := []byte{0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xff}
	for c0 := 0xf0; c0 <= 0xff; c0++ {
		for c1 := range 256 {
			for _, c2 := range edges {
				for _, c3 := range edges {
					b = [4]byte{byte(c0), byte(c1), c2, c3}
					check(b[:])
				}
			}
		}
	}
}

// TestWideLetter checks every rune WideLetter takes: a letter without case, three bytes long.
func TestWideLetter(t *testing.T) {
	n := 0
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !WideLetter(r) {
			continue
		}
		n++
		if !unicode.Is(unicode.Lo, r) || utf8.RuneLen(r) != 3 {
			t.Fatalf("WideLetter(%U), but it is not a letter without case of three bytes", r)
		}
	}
	if n < 30000 {
		t.Fatalf("WideLetter took %d runes, want the CJK, kana and Hangul blocks", n)
	}
}
