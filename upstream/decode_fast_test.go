package upstream

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hayula/gateway/internal/jsonx"
)

// FuzzOllamaLineMatchesUnmarshal holds decodeOllamaLine to json.Unmarshal, which the stream
// read every line with before: the same fields for any line, and an error for the same lines.
// The message's role is not read (the stream has no use for it); without head, model and
// created_at are left out too, and nothing else changes.
func FuzzOllamaLineMatchesUnmarshal(f *testing.F) {
	for _, l := range []string{
		ollamaTokenLine, ollamaDoneLine,
		`{"model":"m","message":{"role":"assistant","content":"a\n\u00e9\ud83d\ude00","thinking":"t"},"done":false}`,
		`{"Model":"m","message":{"Content":"x"}}`, `{"done":"true"}`, `{"eval_count":1.5}`, `{"eval_count":1e2}`,
		`{"eval_count":null,"message":null}`, `{"message":{"content":"a"},"message":{"thinking":"b"}}`,
		`{"message":{"tool_calls":[{"function":{"name":"f","arguments":{}}}]}}`, `{"error":"boom"}`,
		`{"m\u006fdel":"x"}`, `{"\u212aey":1}`, `{"done":true} x`, `[1]`, `null`, `{"content":"\xff"}`,
		`{"message":{"content":"\xff\u2028"}}`, `{"prompt_eval_count":-0,"eval_count":99999999999999999999}`,
		// A token's line as Ollama writes it (readTokenLine), and lines a byte away from one.
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":"a\n\"b\" \u00e9\xff"},"done":false}` + "\r\n",
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":"x"},"done":false} `,
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":"x"},"done":false}x`,
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":"x"},"done":true}`,
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":"x\q"},"done":false}`,
		`{"model":"m","created_at":"t","message":{"role":1,"content":"x"},"done":false}`,
		`{"model":"\xff","created_at":"\ud800","message":{"role":"assistant","content":"\ud83d\ude00"},"done":false}`,
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":"x","thinking":"y"},"done":false}`,
		// Tokens a stream may keep as their literals (plainToken), and ones it may not.
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":" ممكن 😀"},"done":false}`,
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":"a` + "\u2028" + `b"},"done":false}`,
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":"a\xe2\x80"},"done":false}`,
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":"\u003cb\u003e"},"done":false}`,
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":""},"done":false}`,
		// A whole answer's content, kept as its literal or not, and read twice (the last wins).
		`{"model":"m","message":{"role":"assistant","content":"line one\nline \"two\""},"done":true,"done_reason":"stop"}`,
		`{"message":{"content":"kept\n","content":"\u003cb\u003e"},"done":true}`,
		`{"message":{"content":"\u003cb\u003e","content":"kept\n"},"done":true}`,
		`{"message":{"content":"first"},"message":{"thinking":"t"},"done":true}`,
		// Ollama's timings, read by name, and names a byte or a case away from them.
		`{"total_duration":1,"load_duration":"x","prompt_eval_duration":null,"eval_duration":[1],"Eval_Count":3}`,
		`{"total_duration":1,"eval_durations":2,"EVAL_DURATION":3,"eval_Count":4,"Done":true}`,
	} {
		f.Add([]byte(ollamaTokenLine), []byte(l))
	}
	// A stream's line after another, whose literals it may repeat or only seem to.
	const m = `{"model":"m","created_at":"t","message":{"role":"assistant","content":"x"},"done":false}`
	for _, l := range []string{m, `{"model":"m\"","created_at":"t","message":{"role":"assistant","content":"x"},"done":false}`,
		`{"model":"m","created_at":"t","message":{"role":"assistant\u0022","content":"x"},"done":false}`,
		`{"model":"mm","created_at":"t","message":{"role":"assistan","content":"x"},"done":false}`,
		`{"model":"m","created_at":"t","message":{"role":"assistant","content":"x"}}`,
		// The same lengths as the last line's literals, but not the same bytes, nor valid.
		"{\"model\":\"\x01\",\"created_at\":\"t\",\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"done\":false}",
		"{\"model\":\"m\",\"created_at\":\"t\",\"message\":{\"role\":\"assistan\x01\",\"content\":\"x\"},\"done\":false}"} {
		f.Add([]byte(m), []byte(l))
		f.Add([]byte(l), []byte(m))
	}
	f.Fuzz(func(t *testing.T, prev, line []byte) {
		var want ollamaChatResponse
		wantErr := json.Unmarshal(line, &want)
		var got ollamaChatResponse
		err := decodeOllamaLine(line, true, false, nil, &got)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, json.Unmarshal's %v", line, err, wantErr)
		}
		if err != nil {
			var shape tokenShape
			_ = decodeOllamaLine(prev, true, true, &shape, &got)
			if decodeOllamaLine(line, false, true, &shape, &got) == nil {
				t.Fatalf("%q after %q: no error, json.Unmarshal's %v", line, prev, wantErr)
			}
			return
		}
		noRole := cmp.Options{cmpopts.IgnoreFields(ollamaMessage{}, "Role"), cmpopts.IgnoreUnexported(ollamaMessage{})}
		if got.Message.contentJSON != nil {
			t.Fatalf("%q: a literal %q, not asked for", line, got.Message.contentJSON)
		}
		if diff := cmp.Diff(want, got, noRole); diff != "" {
			t.Errorf("%q (-json.Unmarshal +decodeOllamaLine):\n%s", line, diff)
		}
		_ = decodeOllamaLine(line, false, false, nil, &got)
		if diff := cmp.Diff(want, got, noRole, cmpopts.IgnoreFields(ollamaChatResponse{}, "Model", "CreatedAt")); diff != "" {
			t.Errorf("%q without head (-json.Unmarshal +decodeOllamaLine):\n%s", line, diff)
		}
		// As a whole answer reads it, its text as its literal where it can be (no shape); then as
		// a stream reads it, after prev, whose literals the shape may then hold.
		if err = decodeOllamaLine(line, true, true, nil, &got); err != nil {
			t.Fatalf("%q with literal: %v", line, err)
		}
		got.Message.Content = resolvedText(t, got.Message.Content, got.Message.contentJSON)
		if diff := cmp.Diff(want, got, noRole); diff != "" {
			t.Errorf("%q with literal (-json.Unmarshal +decodeOllamaLine):\n%s", line, diff)
		}
		for _, head := range []bool{true, false} {
			var shape tokenShape
			_ = decodeOllamaLine(prev, true, true, &shape, &got)
			if err = decodeOllamaLine(line, head, true, &shape, &got); err != nil {
				t.Fatalf("%q after %q: %v", line, prev, err)
			}
			got.Message.Content = resolvedText(t, got.Message.Content, got.Message.contentJSON)
			opts := noRole
			if !head {
				opts = append(opts, cmpopts.IgnoreFields(ollamaChatResponse{}, "Model", "CreatedAt"))
			}
			if diff := cmp.Diff(want, got, opts); diff != "" {
				t.Errorf("%q after %q, head %v (-json.Unmarshal +decodeOllamaLine):\n%s", line, prev, head, diff)
			}
		}
	})
}

// FuzzSAIFEventMatchesUnmarshal holds decodeSAIFEvent to json.Unmarshal as
// FuzzOllamaLineMatchesUnmarshal does decodeOllamaLine.
func FuzzSAIFEventMatchesUnmarshal(f *testing.F) {
	for _, l := range []string{
		`{"text":" token","specialist":"webapp"}`,
		`{"done":true,"finish_reason":"stop","usage":{"prompt_tokens":26,"completion_tokens":298}}`,
		`{"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2}}`, `{"usage":null}`, `{"Usage":{}}`,
		`{"text":null}`, `{"text":"\ud800"}`, `{"usage":{"Prompt_Tokens":3}}`, `{"done":1}`, `"x"`,
		// A text event as CONFIG.md writes it (readTextEvent), and events a byte away from one.
		`{"text": " a\n\"b\" \u00e9\xff", "specialist": "webapp"}` + "\n", "\t{ \"text\" :\"x\" ,\"specialist\":\"\\u0041\"}\r\n",
		`{"text":"x","specialist":"s"} x`, `{"text":"x","specialist":"s",}`, `{"text":"x","specialist":null}`,
		`{"text":"x\q","specialist":"s"}`, `{"text":"x","specialist":"\x01"}`, `{"text":"\ud83d\ude00","specialist":"\xff"}`,
		`{"text":"x","specialist":"s","done":true}`, `{"specialist":"s","text":"x"}`, `{"text":"x","Specialist":"s"}`,
		`{"text":" ممكن 😀","specialist":"s"}`, `{"text":"a` + "\u2029" + `","specialist":"s"}`, `{"text":"\xf0\x9f","specialist":"s"}`,
		`{"text":"","specialist":"s"}`, `{"text":"<b>","specialist":"s"}`,
	} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want saifEvent
		wantErr := json.Unmarshal(data, &want)
		got, err := decodeSAIFEvent(data, true, false)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, json.Unmarshal's %v", data, err, wantErr)
		}
		if err != nil {
			return
		}
		if got.textJSON != nil {
			t.Fatalf("%q: a literal %q, not asked for", data, got.textJSON)
		}
		unexported := cmpopts.IgnoreUnexported(saifEvent{})
		if diff := cmp.Diff(want, got, unexported); diff != "" {
			t.Errorf("%q (-json.Unmarshal +decodeSAIFEvent):\n%s", data, diff)
		}
		got, _ = decodeSAIFEvent(data, false, false)
		if diff := cmp.Diff(want, got, unexported, cmpopts.IgnoreFields(saifEvent{}, "Specialist")); diff != "" {
			t.Errorf("%q without the specialist (-json.Unmarshal +decodeSAIFEvent):\n%s", data, diff)
		}
		got, err = decodeSAIFEvent(data, true, true)
		if err != nil {
			t.Fatalf("%q with literal: %v", data, err)
		}
		got.Text = resolvedText(t, got.Text, got.textJSON)
		if diff := cmp.Diff(want, got, unexported); diff != "" {
			t.Errorf("%q with literal (-json.Unmarshal +decodeSAIFEvent):\n%s", data, diff)
		}
	})
}

// FuzzSAIFAnswerMatchesUnmarshal holds decodeSAIFAnswer to json.Unmarshal, which the adapter
// read a whole answer with before: the same fields for any answer, and an error for the same.
func FuzzSAIFAnswerMatchesUnmarshal(f *testing.F) {
	for _, l := range []string{
		`{"id":"saif-91","specialist":"webapp","routed_by":"hint","confidence":1.0,"text":"Encode output.","finish_reason":"stop",` +
			`"usage":{"prompt_tokens":61,"completion_tokens":12}}`,
		`{"id": "saif-1", "specialist": "exploit", "routed_by": "router", "confidence": 0.35, "text": "a\n\u00e9\ud83d\ude00"}`,
		`{"text":null}`, `{"text":"a","text":"b"}`, `{"confidence":null,"text":""}`, `{"confidence":-0,"text":""}`,
		`{"confidence":1e400,"text":""}`, `{"confidence":"1","text":""}`, `{"confidence":12.5e-3,"text":""}`,
		`{"Text":"x","ROUTED_BY":"hint"}`, `{"t\u0065xt":"x"}`, `{"\u212aey":1}`, `{"text":"\xff\u2028"}`,
		`{"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2},"text":"x"}`, `{"usage":null,"text":"x"}`,
		`{"usage":{"prompt_tokens":1.5},"text":"x"}`, `{"text":"a\nb","text":"\u00e9"}`, `{"text":"\u00e9","text":"a\nb"}`,
		`{"text":"kept \"as\" is\n","finish_reason":"stop"}`, `{"text":"x","text":null}`, `{"text":"x"} x`, `[1]`, `null`, `{"id":7}`, `{"text":"x","other":[1,{"a":null}]}`,
	} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want saifAnswer
		wantErr := json.Unmarshal(data, &want)
		got, err := decodeSAIFAnswer(data, false)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, json.Unmarshal's %v", data, err, wantErr)
		}
		if err != nil {
			return
		}
		unexported := cmpopts.IgnoreUnexported(saifAnswer{})
		if got.textJSON != nil {
			t.Fatalf("%q: a literal %q, not asked for", data, got.textJSON)
		}
		if diff := cmp.Diff(want, got, unexported); diff != "" {
			t.Errorf("%q (-json.Unmarshal +decodeSAIFAnswer):\n%s", data, diff)
		}
		// With the text as its literal where plainToken takes it (the chat answer's reading).
		got, err = decodeSAIFAnswer(data, true)
		if err != nil {
			t.Fatalf("%q with literal: %v", data, err)
		}
		if got.textJSON != nil {
			if got.Text != nil {
				t.Fatalf("%q: both a text and a literal", data)
			}
			s := resolvedText(t, "", got.textJSON)
			got.Text, got.textJSON = &s, nil
		}
		if diff := cmp.Diff(want, got, unexported); diff != "" {
			t.Errorf("%q with literal (-json.Unmarshal +decodeSAIFAnswer):\n%s", data, diff)
		}
	})
}

// resolvedText is the text a decoder that may keep a token's literal (decodeOllamaLine's and
// decodeSAIFEvent's literal) gave: text, or, when lit is set, lit's text, which must then be
// what appendJSONString writes lit for, with text empty.
func resolvedText(t *testing.T, text string, lit []byte) string {
	t.Helper()
	if lit == nil {
		return text
	}
	if text != "" {
		t.Fatalf("both a text %q and a literal %q", text, lit)
	}
	s, ok := jsonx.Unquote(lit)
	if w := appendJSONString(nil, s); !ok || string(w) != string(lit) || s == "" {
		t.Fatalf("literal %q, which appendJSONString writes %q", lit, w)
	}
	return s
}
