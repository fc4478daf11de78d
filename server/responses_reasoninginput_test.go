package server_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResponsesReasoningInputRules: a reasoning item sent back in input gives its text to the
// assistant message the turn's next message or function_call item builds, as that message's
// reasoning_content: its reasoning_text content; several before one assistant message are joined
// by a blank line, in order. A summary (OpenAI's account of its model's reasoning) is not sent
// on, nor is encrypted_content: OpenAI's own items carry nothing; reasoning that no assistant item follows
// before a user, system or developer message (or the end of input) is dropped.
func TestResponsesReasoningInputRules(t *testing.T) {
	g, up := oneTarget(t)
	const user = `{"role":"user","content":"hi"}`
	call := func(id string) string {
		return `{"type":"function_call","call_id":"` + id + `","name":"f","arguments":"{}"}`
	}
	output := func(id string) string {
		return `{"type":"function_call_output","call_id":"` + id + `","output":"42"}`
	}
	const both = `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"short"}],"content":[{"type":"reasoning_text","text":"long "},{"type":"reasoning_text","text":"thought"}]}`
	const summary = `{"type":"reasoning","id":"rs_2","summary":[{"type":"summary_text","text":"one"},{"type":"summary_text","text":"two"}],"encrypted_content":"gAAAA"}`
	const encrypted = `{"type":"reasoning","id":"rs_3","summary":[],"encrypted_content":"gAAAA"}`
	asst := func(content any, reasoning string, calls ...string) map[string]any {
		m := map[string]any{"role": "assistant", "content": content}
		if reasoning != "" {
			m["reasoning_content"] = reasoning
		}
		if len(calls) > 0 {
			var tc []any
			for _, id := range calls {
				tc = append(tc, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}})
			}
			m["tool_calls"] = tc
		}
		return m
	}
	u := map[string]any{"role": "user", "content": "hi"}
	tool := func(id string) map[string]any {
		return map[string]any{"role": "tool", "tool_call_id": id, "content": "42"}
	}
	tests := []struct {
		name, input string
		want        []any
	}{
		{"content before summary", user + `,` + both + `,{"role":"assistant","content":"ok"},` + user,
			[]any{u, asst("ok", "long thought"), u}},
		{"summary alone", user + `,` + summary + `,` + call("c1") + `,` + output("c1"),
			[]any{u, asst(nil, "", "c1"), tool("c1")}},
		{"encrypted alone", user + `,` + encrypted + `,` + call("c1") + `,` + output("c1"),
			[]any{u, asst(nil, "", "c1"), tool("c1")}},
		{"interleaved joins the message", user + `,` + both + `,{"role":"assistant","content":"ok"},` + summary + `,` + call("c1") + `,` + output("c1"),
			[]any{u, asst("ok", "long thought", "c1"), tool("c1")}},
		{"two before one message", user + `,` + both + `,` + both + `,{"role":"assistant","content":"ok"}`,
			[]any{u, asst("ok", "long thought\n\nlong thought")}},
		{"after an output", user + `,` + call("c1") + `,` + output("c1") + `,` + summary + `,` + call("c2") + `,` + output("c2"),
			[]any{u, asst(nil, "", "c1"), tool("c1"), asst(nil, "", "c2"), tool("c2")}},
		{"content after an output", user + `,` + call("c1") + `,` + output("c1") + `,` + both + `,` + call("c2") + `,` + output("c2"),
			[]any{u, asst(nil, "", "c1"), tool("c1"), asst(nil, "long thought", "c2"), tool("c2")}},
		{"no assistant before the user", user + `,` + summary + `,` + user, []any{u, u}},
		{"trailing", user + `,` + summary, []any{u}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", `{"model":"r","input":[`+tc.input+`]}`)
			if rep.status != http.StatusOK {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
			if d := cmp.Diff(tc.want, upstreamMessages(t, up)); d != "" {
				t.Errorf("upstream messages (-want +got):\n%s", d)
			}
		})
	}
	hits := up.hits.Load()
	for _, tc := range []struct{ name, item, param, code string }{
		{"summary a string", `{"type":"reasoning","summary":"x"}`, "input[1].summary", "invalid_type"},
		{"content an object", `{"type":"reasoning","summary":[],"content":{"text":"x"}}`, "input[1].content", "invalid_type"},
		{"summary part of another type", `{"type":"reasoning","summary":[{"type":"input_text","text":"x"}]}`, "input[1].summary[0].type", "invalid_value"},
		{"content part of another type", `{"type":"reasoning","summary":[],"content":[{"type":"summary_text","text":"x"}]}`, "input[1].content[0].type", "invalid_value"},
		{"text a number", `{"type":"reasoning","summary":[{"type":"summary_text","text":1}]}`, "input[1].summary[0].text", "invalid_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", `{"model":"r","input":[`+user+`,`+tc.item+`,{"role":"assistant","content":"ok"},`+user+`]}`)
			if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != tc.param || rep.errorField(t, "code") != tc.code {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
		})
	}
	if n := up.hits.Load(); n != hits {
		t.Fatalf("upstream asked %d times for refused reasoning", n-hits)
	}
}

// TestResponsesReasoningInputToOllama: the reasoning a Responses input sends back reaches an
// ollama target as the assistant message's thinking, as a chat client's reasoning_content does
// (TestOllamaReplaysReasoning), with a tool loop's call and output around it.
func TestResponsesReasoningInputToOllama(t *testing.T) {
	g, oll, _ := ollamaAndOpenAI(t)
	rep := g.post(t, "/v1/responses", `{"model":"olla","input":[{"role":"user","content":"q"},`+
		`{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"6 times 7"}]},`+
		`{"type":"function_call","call_id":"c1","name":"mul","arguments":"{\"a\":6,\"b\":7}"},`+
		`{"type":"function_call_output","call_id":"c1","output":"42"}]}`)
	if rep.status != http.StatusOK {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	msgs, _ := oll.lastBody(t)["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages %v", msgs)
	}
	if m, _ := msgs[1].(map[string]any); m["role"] != "assistant" || m["thinking"] != "6 times 7" || m["tool_calls"] == nil {
		t.Errorf("assistant message %v", msgs[1])
	}
}

// TestResponsesReasoningAloneWithInstructions: input of reasoning alone is a 400 naming input
// only when there are no instructions (TestResponsesReasoningInputSentBack); with them the
// request goes on as the one system message they make, as input [] with instructions does.
func TestResponsesReasoningAloneWithInstructions(t *testing.T) {
	g, up := oneTarget(t)
	up.set(wholeHandler(`{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}`))
	rep := g.post(t, "/v1/responses", `{"model":"r","instructions":"be brief","input":[{"type":"reasoning","id":"rs_1","summary":[]}]}`)
	if rep.status != http.StatusOK {
		t.Fatalf("reasoning alone with instructions: %d %s", rep.status, rep.body)
	}
	want := []any{map[string]any{"role": "system", "content": "be brief"}}
	if d := cmp.Diff(want, upstreamMessages(t, up)); d != "" {
		t.Errorf("upstream messages (-want +got):\n%s", d)
	}
}
