package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestResponsesParametersLeft: n, which OpenAI's Responses API does not have, is refused as
// unknown (400 unknown_parameter naming n), where the bridge dropped it; truncation "auto", which
// a chat upstream cannot honour (it drops no items), is refused naming truncation, and "disabled"
// (what a chat upstream does: a 400 when the input is too long) is served; max_tool_calls, which
// caps built-in tools' calls and none runs behind the gateway, is served and not sent on, and a
// value of the wrong type, or below 1 as OpenAI's API refuses it (integer_below_min_value; a
// negative one passed and was echoed), is refused naming it. null is unset for each. A value
// quoted back is clipped.
func TestResponsesParametersLeft(t *testing.T) {
	g, up := oneTarget(t)
	long := strings.Repeat("y", 5000)
	refused := []struct{ name, member, param, code string }{
		{"n 2", `"n":2`, "n", "unknown_parameter"},
		{"n 1", `"n":1`, "n", "unknown_parameter"},
		{"truncation auto", `"truncation":"auto"`, "truncation", "unsupported_value"},
		{"truncation unknown", `"truncation":"` + long + `"`, "truncation", "invalid_value"},
		{"truncation a number", `"truncation":1`, "truncation", "invalid_type"},
		{"max_tool_calls a string", `"max_tool_calls":"3"`, "max_tool_calls", "invalid_type"},
		{"max_tool_calls a fraction", `"max_tool_calls":1.5`, "max_tool_calls", "invalid_type"},
		{"max_tool_calls negative", `"max_tool_calls":-1`, "max_tool_calls", "integer_below_min_value"},
		{"max_tool_calls 0", `"max_tool_calls":0`, "max_tool_calls", "integer_below_min_value"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi",`+tc.member+`}`)
			if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != tc.param || rep.errorField(t, "code") != tc.code {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); len(msg) > 1000 {
				t.Errorf("message of %d bytes quotes the value unclipped", len(msg))
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("upstream asked %d times", n)
	}
	for _, member := range []string{`"n":null`, `"truncation":"disabled"`, `"truncation":null`, `"max_tool_calls":3`, `"max_tool_calls":1`, `"max_tool_calls":null`} {
		t.Run(member, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi",`+member+`}`)
			if rep.status != http.StatusOK {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
			body := up.lastBody(t)
			for _, k := range []string{"n", "truncation", "max_tool_calls"} {
				if _, ok := body[k]; ok {
					t.Errorf("%s sent upstream: %v", k, body)
				}
			}
		})
	}
}
