package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestResponsesDuplicateCallIDs: a call_id two function_call items share, or that two
// function_call_output items answer, is refused naming the later item's call_id, as OpenAI's API
// wants each call_id once (one call, one output): sent on, the chat upstream got two tool calls
// of one id, or two tool messages for one call, and a template pairs the outputs with the wrong
// call. An output no earlier call made stays refused; the call_id each refusal quotes is clipped.
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
		{"a call_id reused in a later turn", user + call("c1") + `,` + output("c1") + `,` + call("c1") + `,` + output("c1"), "input[3].call_id"},
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
