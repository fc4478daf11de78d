package jsonx

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// TextError is why a body is not a JSON text Text would walk: invalid UTF-8 at Offset, or, with
// Deep set, the bracket at Offset opens a container nested deeper than Depth.
type TextError struct {
	Offset int
	Deep   bool
	Depth  int
}

func (e *TextError) Error() string {
	if e.Deep {
		return fmt.Sprintf("the request body nests arrays and objects deeper than %d levels (at byte offset %d)",
			e.Depth, e.Offset)
	}
	return fmt.Sprintf("the request body is not valid UTF-8 (RFC 8259 §8.1): invalid byte at offset %d", e.Offset)
}

// FixText is the slow path beside Text, for a body Text's walk declined: it rewrites in place
// every escaped surrogate that is not half of a pair to \ufffd (the same six bytes, so nothing
// moves), which is what encoding/json decodes it to, so that any other decoder reads the same;
// and it reports the first byte of invalid UTF-8 anywhere in b, or the first bracket nested
// deeper than depth. It does not validate the rest of the JSON (the decoder that follows does):
// brackets are counted outside strings, and unbalanced ones count as they come.
func FixText(b []byte, depth int) error {
	level := 0
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return &TextError{Offset: i}
			}
			i += size
			continue
		case c == '{' || c == '[':
			if level++; level > depth {
				return &TextError{Offset: i, Deep: true, Depth: depth}
			}
		case c == '}' || c == ']':
			level--
		case c == '"':
			end, err := fixString(b, i+1)
			if err != nil {
				return err
			}
			i = end
			continue
		}
		i++
	}
	return nil
}

// fixString walks the string whose text starts at b[i] to just past its closing quote (or the
// end of b), checking UTF-8 and repairing lone surrogate escapes as FixText says.
func fixString(b []byte, i int) (int, error) {
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 < len(b) && b[i+1] == 'u' {
				r := getu4(b[i:])
				if r < 0 {
					i += 2 // not an escape: the decoder refuses it
					continue
				}
				if utf16.IsSurrogate(r) {
					if utf16.DecodeRune(r, getu4(b[i+6:])) != utf8.RuneError {
						i += 12
						continue
					}
					copy(b[i+2:i+6], "fffd")
				}
				i += 6
				continue
			}
			i += 2
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, &TextError{Offset: i}
			}
			i += size
		default:
			i++
		}
	}
	return len(b), nil
}
