package upstream

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/hayula/gateway/internal/jsonx"
)

// FuzzOllamaRequestMatchesEncoding holds appendOllamaRequest to mustJSON's bytes for the same
// request, which the adapter sent before: every member, omission and escape, and every float as
// encoding/json writes it.
func FuzzOllamaRequestMatchesEncoding(f *testing.F) {
	f.Add("llama3", "user", "hello", "", "", "", "", "\n\n", `{"type":"object"}`, `"as sent"`, 0.2, 0.9, int64(7), 256, 32768, int64(40), uint16(0xffff))
	f.Add("m<&>", "assistant", "a\u2028b\"\\\x00\x1f\xff", "think \xfe", "aGk=", "weather", "c1", "", `[ 1 , {"a" : "b"} ]`,
		`"a\u2028 <b>"`, 1e-7, 1e21, int64(-1), -3, 0, int64(math.MinInt64), uint16(0x5555))
	f.Add("", "", "", "", "", "", "", "", `"10m"`, "\"a\u2028b\u2029\"", 0.0, math.Copysign(0, -1), int64(0), 0, 0, int64(0), uint16(0x0e20))
	f.Add("مرحبا", "system", "ممكن تساعدني؟ 😀", "", "", "", "", "END", `true`, "\"\u2028 \xff \u00e9 é\"", 123456789.125, 5e-324,
		int64(math.MaxInt64), 1, 2, int64(1), uint16(0xaaaa))
	f.Fuzz(func(t *testing.T, model, role, content, thinking, image, toolName, callID, stop, raw, lit string,
		temp, topP float64, seed int64, numPredict, numCtx int, topK int64, flags uint16) {
		if !json.Valid([]byte(raw)) {
			raw = `{"k":[1,2]}`
		}
		if math.IsNaN(temp) || math.IsInf(temp, 0) || math.IsNaN(topP) || math.IsInf(topP, 0) {
			return // not JSON: no client sends them
		}
		on := func(bit uint) bool { return flags&(1<<bit) != 0 }
		m := ollamaMessage{Role: role, Content: content, Thinking: thinking, ToolName: toolName, ToolCallID: callID}
		// A content the client wrote as mustJSON would (verbatim) is copied as it came.
		if s, plain, ok := jsonx.UnquotePlain([]byte(lit)); ok && plain && !hasLineSeparator([]byte(s)) {
			m.Content, m.contentJSON = s, []byte(lit)
		}
		if on(0) {
			m.Images = []string{image, content}
		}
		if on(1) {
			var c ollamaToolCall
			c.ID, c.Function.Name, c.Function.Arguments = callID, toolName, json.RawMessage(`{"city": "Fes"}`)
			m.ToolCalls = []ollamaToolCall{c}
		}
		r := &ollamaChatRequest{Model: model, Stream: on(2), Truncate: on(3), Logprobs: on(4), TopLogprobs: numPredict % 21}
		if on(5) {
			r.Messages = []ollamaMessage{m, {Role: "user", Content: stop}}
		} else if on(6) {
			r.Messages = []ollamaMessage{}
		}
		if on(7) {
			r.Tools, r.Format = json.RawMessage(raw), json.RawMessage(raw)
		}
		if on(8) {
			r.Think, r.KeepAlive = json.RawMessage(raw), json.RawMessage(raw)
		}
		switch {
		case on(9):
			o := &ollamaOptions{NumPredict: numPredict, NumCtx: numCtx}
			if on(10) {
				o.Temperature, o.TopP, o.Seed, o.TopK = &temp, &topP, &seed, &topK
			}
			if on(11) {
				o.FreqPenalty, o.PresPenalty, o.MinP, o.RepeatPenalty = &topP, &temp, &temp, &topP
			}
			if on(12) {
				o.Stop = []string{stop, content}
			}
			r.Options = o
		case on(13):
			r.Options = json.RawMessage(raw)
		case on(14):
			r.Options = (*ollamaOptions)(nil)
		}
		got := appendOllamaRequest([]byte("x"), r)[1:]
		if want := mustJSON(r); !bytes.Equal(got, want) {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
	})
}

// Every float encoding/json writes in a form of its own (exponents both ways, the shortest
// digits, negative zero) is written the same.
func TestAppendJSONFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.2, 1.0 / 3, 1e-6, 9.99999e-7, 1e-7, 1.5e-300, 5e-324,
		1e20, 1e21, 123456789e15, math.MaxFloat64, -math.MaxFloat64, 1e100, -2.5e-10} {
		want := mustJSON(f)
		if got := appendJSONFloat(nil, f); !bytes.Equal(got, want) {
			t.Errorf("%v: got %s, want %s", f, got, want)
		}
	}
}

// sentText is the text m sends as its content: Content, or contentJSON's when it carries it.
func (m *ollamaMessage) sentText() string {
	if m.contentJSON != nil {
		s, ok := jsonx.Unquote(m.contentJSON)
		if !ok {
			panic("contentJSON is no JSON string: " + string(m.contentJSON))
		}
		return s
	}
	return m.Content
}
