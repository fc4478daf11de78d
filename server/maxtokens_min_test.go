package server_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTokenLimitBelowOne: a max_tokens or max_completion_tokens below 1 (0 as well as a negative)
// is refused before any target is asked, as OpenAI refuses it: 400 invalid_request_error,
// integer_below_min_value, naming the field sent ("Invalid 'max_completion_tokens': integer below
// minimum value. Expected a value >= 1, but got 0 instead."); a max_completion_tokens of 0 beside a
// max_tokens too, which OpenAI refuses as well. The Responses API's max_output_tokens, which the
// bridge sends as max_tokens, is refused naming it. (This test failed first: 0 was accepted, and
// a target that reads 0 as no limit, as SAIF and Ollama do, answered without one.)
func TestTokenLimitBelowOne(t *testing.T) {
	g, up := oneTarget(t)
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	type refusal struct{ Status, Type, Param, Code, Message any }
	want := func(param, got string) refusal {
		return refusal{400.0, "invalid_request_error", param, "integer_below_min_value",
			"Invalid '" + param + "': integer below minimum value. Expected a value >= 1, but got " + got + " instead."}
	}
	for _, tc := range []struct {
		path, members string
		want          refusal
	}{
		{"/v1/chat/completions", `"max_tokens":0`, want("max_tokens", "0")},
		{"/v1/chat/completions", `"max_completion_tokens":0`, want("max_completion_tokens", "0")},
		{"/v1/chat/completions", `"max_completion_tokens":0,"max_tokens":1000`, want("max_completion_tokens", "0")},
		{"/v1/chat/completions", `"max_tokens":1000,"max_completion_tokens":0`, want("max_completion_tokens", "0")},
		{"/v1/chat/completions", `"max_tokens":0,"max_completion_tokens":10`, want("max_tokens", "0")},
		{"/v1/chat/completions", `"max_tokens":-1`, want("max_tokens", "-1")},
		{"/v1/chat/completions", `"max_completion_tokens":-7`, want("max_completion_tokens", "-7")},
		{"/v1/responses", `"max_output_tokens":0`, want("max_output_tokens", "0")},
		{"/v1/responses", `"max_output_tokens":-1`, want("max_output_tokens", "-1")},
	} {
		t.Run(tc.path+" "+tc.members, func(t *testing.T) {
			in := msgs
			if tc.path == "/v1/responses" {
				in = `"input":"x"`
			}
			rep := g.post(t, tc.path, `{"model":"r",`+tc.members+`,`+in+`}`)
			got := refusal{float64(rep.status), nil, nil, nil, nil}
			if rep.status != http.StatusOK {
				got = refusal{float64(rep.status), rep.errorField(t, "type"), rep.errorField(t, "param"),
					rep.errorField(t, "code"), rep.errorField(t, "message")}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Errorf("the upstream was asked %d times", n)
	}
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"r","max_tokens":1,"max_completion_tokens":null,` + msgs + `}`},
		{"/v1/chat/completions", `{"model":"r","max_completion_tokens":1,"max_tokens":null,` + msgs + `}`},
		{"/v1/responses", `{"model":"r","max_output_tokens":1,"input":"x"}`},
	} {
		if rep := g.post(t, tc.path, tc.body); rep.status != http.StatusOK {
			t.Errorf("%s: %d %s", tc.body, rep.status, rep.body)
		}
	}
}
