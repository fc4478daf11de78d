package autoroute

import (
	"encoding/binary"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hayula/gateway/core"
)

// Texts picks from a chat what Classify reads: the system prompt (every "system" or "developer"
// message, joined by newlines) and the last "user" message. Content may be a string or an array of
// parts; text parts are joined by newlines and other parts (images, audio) are skipped. Content that
// is neither reads as empty.
func Texts(msgs []core.Message) (system, lastUser string) {
	var sys []string
	for _, m := range msgs {
		if m.Role == "system" || m.Role == "developer" {
			if t := contentText(m.Content); t != "" {
				sys = append(sys, t)
			}
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			lastUser = contentText(msgs[i].Content)
			break
		}
	}
	return strings.Join(sys, "\n"), lastUser
}

func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		// Read in place: json.Unmarshal validated and copied the literal a second time after the
		// server had, about a third of what model "auto" cost over an explicit route.
		if s, ok := unquote(raw); ok {
			return s
		}
		return decodedText(raw)
	}
	return partsText(raw)
}

// decodedText is contentText through encoding/json: the definition unquote is held to
// (FuzzContentText), and the answer for what unquote does not take whole.
func decodedText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if raw[0] == '"' {
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	return partsText(raw)
}

func partsText(raw json.RawMessage) string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if (p.Type == "text" || p.Type == "input_text") && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// unquote decodes q, exactly one JSON string literal, as json.Unmarshal into a string would
// (invalid UTF-8 and unpaired escaped surrogates become U+FFFD). ok is false for anything else,
// including whitespace around the literal, which decodedText then answers. The same logic as
// internal/jsonx.Unquote, which this package may not import (see internal/archtest).
func unquote(q []byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	body := q[1 : len(q)-1]
	var out strings.Builder
	for i := 0; ; {
		// Copy a run of plain text at once; only escapes and invalid UTF-8 go byte by byte.
		j := i
		for j+8 <= len(body) && !special(binary.LittleEndian.Uint64(body[j:])) {
			j += 8
		}
		for j < len(body) && body[j] >= 0x20 && body[j] != '"' && body[j] != '\\' {
			j++
		}
		if j == len(body) && i == 0 && utf8.Valid(body) {
			return string(body), true
		}
		if out.Cap() == 0 {
			out.Grow(len(body))
		}
		appendText(&out, body[i:j])
		if j == len(body) {
			return out.String(), true
		}
		if body[j] != '\\' || j+1 == len(body) {
			return "", false // a bare quote or a control character
		}
		i = j + 2
		switch body[j+1] {
		case '"', '\\', '/':
			out.WriteByte(body[j+1])
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r := getu4(body[j:])
			if r < 0 {
				return "", false
			}
			i = j + 6
			if utf16.IsSurrogate(r) {
				r = utf16.DecodeRune(r, getu4(body[i:]))
				if r != utf8.RuneError {
					i += 6
				}
			}
			out.WriteRune(r)
		default:
			return "", false
		}
	}
}

// appendText writes text with each byte of invalid UTF-8 as U+FFFD, as encoding/json decodes it.
func appendText(out *strings.Builder, text []byte) {
	if utf8.Valid(text) {
		out.Write(text)
		return
	}
	for len(text) > 0 {
		r, size := utf8.DecodeRune(text)
		if r == utf8.RuneError && size == 1 {
			out.WriteString("\uFFFD")
		} else {
			out.Write(text[:size])
		}
		text = text[size:]
	}
}

// Word masks for special.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special reports whether any byte of the little-endian word x is a quote, a backslash or a
// control character, so that plain text is scanned eight bytes at a time. Borrows only spread
// above a byte that matches, so the answer for the word as a whole is exact.
func special(x uint64) bool {
	quote := x ^ (ones * '"')
	slash := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x|(quote-ones)&^quote|(slash-ones)&^slash)&highs != 0
}

// getu4 decodes the \uXXXX escape at the start of b, or returns -1.
func getu4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(d)
	}
	return r
}
