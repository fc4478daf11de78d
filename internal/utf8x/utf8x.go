// Package utf8x owns the facts about UTF-8 text that the gateway's scanners of a request's body
// share: decoding a rune in place from a string or a byte slice alike (jsonx's strict scan,
// filter's token bound), and the blocks of letters that text in Chinese, Japanese and Korean is
// nearly all made of (filter's token bound, autoroute's normalisation), so that a scan can pass
// over them without the unicode package's table searches. It imports nothing of ours.
package utf8x

import "unicode/utf8"

// DecodeRune is utf8.DecodeRune of s, for a string or a byte slice alike: the rune that opens s
// and its length, and U+FFFD and 1 for an invalid encoding (overlong, a surrogate, past
// U+10FFFF, cut short) or 0 for an empty s. It checks as RuneLen does, and decodes in the same
// switch: RuneLen's length and then the decode cost filter's token bound 25% more on Chinese.
// TestDecodeRuneAgrees holds it to utf8.DecodeRune.
func DecodeRune[S string | []byte](s S) (rune, int) {
	const cont = 0xc0 // a continuation byte is 10xxxxxx
	if len(s) == 0 {
		return utf8.RuneError, 0
	}
	c := s[0]
	switch {
	case c < utf8.RuneSelf:
		return rune(c), 1
	case c >= 0xc2 && c < 0xe0:
		if len(s) > 1 && s[1]&cont == 0x80 {
			return rune(c&0x1f)<<6 | rune(s[1]&0x3f), 2
		}
	case c >= 0xe0 && c < 0xf0:
		lo, hi := byte(0x80), byte(0xbf)
		switch c {
		case 0xe0:
			lo = 0xa0 // below: overlong
		case 0xed:
			hi = 0x9f // above: a surrogate
		}
		if len(s) > 2 && s[1] >= lo && s[1] <= hi && s[2]&cont == 0x80 {
			return rune(c&0x0f)<<12 | rune(s[1]&0x3f)<<6 | rune(s[2]&0x3f), 3
		}
	case c >= 0xf0 && c < 0xf5:
		lo, hi := byte(0x80), byte(0xbf)
		switch c {
		case 0xf0:
			lo = 0x90 // below: overlong
		case 0xf4:
			hi = 0x8f // above: past U+10FFFF
		}
		if len(s) > 3 && s[1] >= lo && s[1] <= hi && s[2]&cont == 0x80 && s[3]&cont == 0x80 {
			return rune(c&0x07)<<18 | rune(s[1]&0x3f)<<12 | rune(s[2]&0x3f)<<6 | rune(s[3]&0x3f), 4
		}
	}
	return utf8.RuneError, 1
}

// RuneLen is the length of the valid encoding of a rune of two to four bytes that opens s, whose
// first byte is above 0x7f, or 0 when there is none (overlong, a surrogate, past U+10FFFF, cut
// short): a scan that only checks text (jsonx's strict scan) is spared decoding the rune.
// Written as a switch on the first byte: a table of each byte's length and second-byte range
// cost Chinese text 16% more in jsonx's scan and 30% more in filter's token bound.
// TestDecodeRuneAgrees holds it to utf8.DecodeRune.
func RuneLen[S string | []byte](s S) int {
	const cont = 0xc0 // a continuation byte is 10xxxxxx
	c := s[0]
	switch {
	case c < 0xc2: // a continuation byte, or the lead of an overlong two-byte form
		return 0
	case c < 0xe0:
		if len(s) < 2 || s[1]&cont != 0x80 {
			return 0
		}
		return 2
	case c < 0xf0:
		lo, hi := byte(0x80), byte(0xbf)
		switch c {
		case 0xe0:
			lo = 0xa0 // below: overlong
		case 0xed:
			hi = 0x9f // above: a surrogate
		}
		if len(s) < 3 || s[1] < lo || s[1] > hi || s[2]&cont != 0x80 {
			return 0
		}
		return 3
	case c < 0xf5:
		lo, hi := byte(0x80), byte(0xbf)
		switch c {
		case 0xf0:
			lo = 0x90 // below: overlong
		case 0xf4:
			hi = 0x8f // above: past U+10FFFF
		}
		if len(s) < 4 || s[1] < lo || s[1] > hi || s[2]&cont != 0x80 || s[3]&cont != 0x80 {
			return 0
		}
		return 4
	}
	return 0
}

// WideLetter reports whether r is in a block whose every code point is a letter without case
// (\p{Lo}): Hiragana and Katakana letters, the CJK ideographs of the basic block and extension A,
// and Hangul syllables, each three bytes in UTF-8. TestWideLetter checks every one against the
// unicode package.
func WideLetter(r rune) bool {
	return r >= 0x4e00 && r <= 0x9fff || r >= 0xac00 && r <= 0xd7a3 || r >= 0x3400 && r <= 0x4dbf ||
		r >= 0x3041 && r <= 0x3096 || r >= 0x30a1 && r <= 0x30fa
}
