package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResponsesDuplicateCallIDs: a call_id two function_call items share while the first has no
// output yet, or that two function_call_output items answer, is refused naming the later item's
// call_id (one call, one output): sent on, the chat upstream got two tool calls of one id, or two
// tool messages for one call, and a template pairs the outputs with the wrong call. Once answered,
// an id may come again (TestResponsesCallIDReusedOnceAnswered). An output no earlier call made stays refused; the call_id each refusal quotes is clipped.
func TestResponsesDuplicateCallIDs(t *testing.T) {
	g, up := oneTarget(t)
	const user = `{"role":"user","content":"hi"},`
	call := func(id string) string {
		return `{"type":"function_call","call_id":"` + id + `","name":"f","arguments":"{}"}`
	}
	output := func(id string) string {
		return `{"type":"function_call_output","call_id":"` + id + `","output":"42"}`
	}
	long := strings.Repeat("x", 5000)
	tests := []struct{ name, input, param string }{
		{"two calls in one turn", user + call("c1") + `,` + call("c1") + `,` + output("c1"), "input[2].call_id"},
		{"two outputs", user + call("c1") + `,` + output("c1") + `,` + output("c1"), "input[3].call_id"},
		{"an output without its call", user + output(long), "input[1].call_id"},
		{"a call without its output", user + call(long), "input[1].call_id"},
		{"a long duplicate", user + call(long) + `,` + call(long) + `,` + output(long), "input[2].call_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", `{"model":"r","input":[`+tc.input+`]}`)
			if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != tc.param ||
				rep.errorField(t, "code") != "invalid_value" {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); len(msg) > 1000 {
				t.Errorf("message of %d bytes quotes the call_id unclipped", len(msg))
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("upstream asked %d times", n)
	}
}

// TestResponsesRoleEchoClipped: an input message's role the bridge does not know is quoted back
// clipped, as every echo of a client's value is, where it was quoted whole.
func TestResponsesRoleEchoClipped(t *testing.T) {
	g, _ := oneTarget(t)
	rep := g.post(t, "/v1/responses", `{"model":"r","input":[{"role":"`+strings.Repeat("r", 5000)+`","content":"hi"}]}`)
	if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != "input[0].role" {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	if msg, _ := rep.errorField(t, "message").(string); len(msg) > 1000 {
		t.Errorf("message of %d bytes quotes the role unclipped", len(msg))
	}
}

// TestResponsesCallIDReusedOnceAnswered: a call_id that an earlier call had is taken once that
// call has its output, so that a tool loop against a server that numbers its calls in each answer
// (call_0, call_1, …) can send its history back: each output goes with the call just before it.
// A second call of the id while the first waits for its output is still refused
// (TestResponsesDuplicateCallIDs).
func TestResponsesCallIDReusedOnceAnswered(t *testing.T) {
	g, up := oneTarget(t)
	call := func(id, args string) string {
		return `{"type":"function_call","call_id":"` + id + `","name":"f","arguments":"` + args + `"}`
	}
	output := func(id, out string) string {
		return `{"type":"function_call_output","call_id":"` + id + `","output":"` + out + `"}`
	}
	rep := g.post(t, "/v1/responses", `{"model":"r","input":[{"role":"user","content":"hi"},`+
		call("call_0", "{}")+`,`+output("call_0", "first")+`,{"role":"assistant","content":"and again"},`+
		call("call_0", "{}")+`,`+output("call_0", "second")+`]}`)
	if rep.status != http.StatusOK {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	tc := []any{map[string]any{"id": "call_0", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}
	want := []any{
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": tc},
		map[string]any{"role": "tool", "tool_call_id": "call_0", "content": "first"},
		map[string]any{"role": "assistant", "content": "and again", "tool_calls": tc},
		map[string]any{"role": "tool", "tool_call_id": "call_0", "content": "second"},
	}
	if d := cmp.Diff(want, upstreamMessages(t, up)); d != "" {
		t.Errorf("upstream messages (-want +got):\n%s", d)
	}
}
