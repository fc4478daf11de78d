package autoroute

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

// Texts picks from a chat what Classify reads: the system prompt (every "system" or "developer"
// message, joined by newlines) and the last "user" message. Content may be a string or an array of
// parts; text parts are joined by newlines and other parts (images, audio) are skipped. Content that
// is neither reads as empty. RouteMessagesFor classifies a chat without building these two strings.
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
		if s, ok := jsonx.Unquote(raw); ok {
			return s
		}
		return decodedText(raw)
	}
	return partsText(raw)
}

// decodedText is contentText through encoding/json: the definition jsonx.Unquote is held to
// (FuzzContentText), and the answer for what it does not take whole.
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

// RouteMessagesFor is Route(Texts(msgs)) with hint, for the server's "auto" requests: the same
// answer (TestRouteMessages and FuzzRouteMessages hold it to that), without the strings Texts
// builds. A string content without escapes is read where it lies in msgs; one with escapes is
// unquoted into pooled scratch space, as are several system messages joined. Only an array of
// parts still goes through encoding/json (and allocates). msgs must not change during the call.
//
// A long system prompt seen before in partition part is not read again (see systems): the
// server passes each API key's own partition, so that no key's timing tells of another's
// prompts. Keeping one allocates, once.
func (c *Classifier) RouteMessagesFor(part uint64, msgs []core.Message, hint string) (route, intent string) {
	if r, _, _ := c.hintRoute(hint); r != "" {
		return r, IntentHint
	}
	s := c.pool.Get().(*scratch)
	system, user := s.texts(msgs)
	c.runIn(s, system, user, part, true)
	return c.routeOf(s)
}

// texts is Texts reading into s.text: each returned string lies either in msgs or in s.text,
// and is valid until s is used again. An in-place text keeps the bytes of invalid UTF-8 that
// Texts would turn into U+FFFD; scan reads each such byte as a U+FFFD, so the words are the same.
func (s *scratch) texts(msgs []core.Message) (system, user string) {
	buf := s.text[:0]
	var userIn, sysIn []byte  // texts read in place
	userAt, userEnd := -1, -1 // or where they lie in buf
	sysAt := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			mark := len(buf)
			var in bool
			if userIn, in, buf = content(buf, msgs[i].Content); !in {
				userAt, userEnd = mark, len(buf)
			}
			break
		}
	}
	for _, m := range msgs {
		if m.Role != "system" && m.Role != "developer" {
			continue
		}
		if sysIn == nil && sysAt < 0 {
			// The first text, the only one in most chats, is read in place if it can be.
			mark := len(buf)
			v, in, out := content(buf, m.Content)
			buf = out
			switch {
			case in && len(v) > 0:
				sysIn = v
			case !in && len(buf) > mark:
				sysAt = mark
			}
			continue
		}
		if sysIn != nil {
			// A second text: the first is copied to join it.
			sysAt = len(buf)
			buf = append(buf, sysIn...)
			sysIn = nil
		}
		mark := len(buf)
		buf = append(buf, '\n')
		v, in, out := content(buf, m.Content)
		if buf = out; in {
			buf = append(buf, v...)
		}
		if len(buf) == mark+1 {
			// An empty text is left out, separator and all, as Texts leaves it out.
			buf = buf[:mark]
		}
	}
	s.text = buf
	switch {
	case userIn != nil:
		user = view(userIn)
	case userAt >= 0:
		user = view(buf[userAt:userEnd])
	}
	switch {
	case sysIn != nil:
		system = view(sysIn)
	case sysAt >= 0:
		system = view(buf[sysAt:])
	}
	return system, user
}

// view is b as a string without a copy. The texts it makes are read by scan alone, during the
// call that made them, while nothing writes to b; none is kept.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// content reads a message's content as contentText does: a string literal without escapes in
// place (text, with inPlace set), anything else appended to dst. A literal's plain runs are found
// eight bytes at a time and copied whole, and its one-letter escapes decoded here; the rest (\u
// escapes, invalid UTF-8, malformed literals, arrays of parts) goes the slower ways of
// appendContent.
func content(dst []byte, raw json.RawMessage) (text []byte, inPlace bool, out []byte) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		body := raw[1 : n-1]
		k := plainPrefix(body)
		if k == len(body) {
			return body, true, dst
		}
		if out, ok := unquoteFrom(dst, body, k); ok {
			return nil, false, out
		}
	}
	return nil, false, appendContent(dst, raw)
}

// plainPrefix is the length of body's run of bytes that need no unquoting: up to the first
// control character, quote or backslash. The quote and the backslash are found by the runtime's
// vector search, most texts having neither, and only the bytes before them are tested for a
// control character, eight at a time: one test a word where a test of all three took three.
// A kept system prompt's 16 KiB were a third of what its request cost: BenchmarkRouteLongSystem's
// "kept" 135,589 → 97,578 instructions (cachegrind). TestPlainPrefix holds it to a
// byte-at-a-time reading.
func plainPrefix(body []byte) int {
	end := len(body)
	if q := bytes.IndexByte(body, '"'); q >= 0 {
		end = q
	}
	if b := bytes.IndexByte(body[:end], '\\'); b >= 0 {
		end = b
	}
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	t, i := body[:end], 0
	for ; i < len(t)-7; i += 8 {
		if x := binary.LittleEndian.Uint64(t[i : i+8]); (x-ones*0x20)&^x&highs != 0 {
			break // a byte below 0x20 in this word
		}
	}
	for i < len(t) && t[i] >= 0x20 {
		i++
	}
	return i
}

// unquoteFrom appends the text of a literal's body, of which body[:k] needs no unquoting, as
// jsonx.Unquote decodes it. It answers false, having appended nothing that counts, for what it
// leaves to jsonx.AppendUnquote: invalid UTF-8, a \u escape, or a malformed literal.
func unquoteFrom(dst, body []byte, k int) ([]byte, bool) {
	if !utf8.Valid(body) {
		return dst, false
	}
	out := append(dst, body[:k]...)
	for i := k; ; {
		// body[i] is a control character, a quote or a backslash.
		if body[i] != '\\' || i+1 == len(body) {
			return dst, false
		}
		var c byte
		switch e := body[i+1]; e {
		case '"', '\\', '/':
			c = e
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default:
			return dst, false
		}
		out = append(out, c)
		i += 2
		j := i + plainPrefix(body[i:])
		out = append(out, body[i:j]...)
		if j == len(body) {
			return out, true
		}
		i = j
	}
}

// appendContent appends what contentText returns for raw.
func appendContent(dst []byte, raw json.RawMessage) []byte {
	switch {
	case len(raw) > 0 && raw[0] == '"':
		if out, ok := jsonx.AppendUnquote(dst, raw); ok {
			return out
		}
	case string(raw) == "null":
		return dst
	}
	return append(dst, contentText(raw)...)
}
