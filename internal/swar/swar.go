// Package swar owns the word-at-a-time test the request path's short-string checks share: is any
// byte of a string one of a small class (a control character, a space, a byte above 0x7e…)?
// A header value, a request's target, an ID or a log line's key is a few to a few dozen bytes,
// and a loop that compares each byte with three or four others costs five to fifteen
// instructions a byte; read eight bytes at a time, a string of any length under eight in one
// word, it costs a few a byte and a fixed twenty or so. The checks keep their byte loops for the
// strings the test flags, so the test need only never miss: it may flag a string with no such
// byte (a tab in a header value, a borrow past a true hit), never pass one with it. It imports
// nothing of ours. (A helper that took the test as a func would not be inlined, and would call
// the test for every word; so each check writes its loop, as Word's doc shows.)
package swar

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// Word is the little-endian word at s[i:i+8], one load. A check reads s eight bytes a step and
// its last few in one word (Short):
//
//	i := 0
//	for ; i < len(s)-7; i += 8 { // this form of the bound leaves Word no bounds check
//		if swar.Below(swar.Word(s, i), ' ') != 0 {
//			return false
//		}
//	}
//	return swar.Below(swar.Short(s[i:], 'a'), ' ') == 0
func Word(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// Short is s, shorter than eight bytes, in one word: every byte of s is a byte of the word (some
// twice), and the bytes s does not fill are pad. A test that marks no byte of the word then
// marks no byte of s, if pad is not of its class. Four bytes from each end cover four to seven;
// the first, middle and last, one to three.
func Short(s string, pad byte) uint64 {
	n := len(s)
	switch {
	case n >= 4:
		lo := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
		hi := uint64(s[n-4]) | uint64(s[n-3])<<8 | uint64(s[n-2])<<16 | uint64(s[n-1])<<24
		return lo | hi<<32
	case n > 0:
		return uint64(s[0]) | uint64(s[n>>1])<<8 | uint64(s[n-1])<<16 | ones*uint64(pad)&^0xffffff
	}
	return ones * uint64(pad)
}

// Below marks (in its high bit) each byte of x below c, c at most 0x80, and may mark a byte
// above one it marks truly, never a word without one.
func Below(x uint64, c byte) uint64 { return (x - ones*uint64(c)) &^ x & highs }

// Is marks each byte of x that is c, with Below's caveat.
func Is(x uint64, c byte) uint64 {
	y := x ^ ones*uint64(c)
	return (y - ones) &^ y & highs
}

// High marks each byte of x at 0x80 or above, exactly.
func High(x uint64) uint64 { return x & highs }
