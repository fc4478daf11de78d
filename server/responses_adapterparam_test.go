package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestResponsesAdapterErrorsNameInput: a 400 an adapter answers for the chat request the bridge
// built (the ollama adapter's, for an image by URL, a call's arguments that are no JSON object, a
// reasoning effort that is no level, a json_schema format without a schema) names the field of
// the Responses body the client sent, where it named the chat field the client never saw:
// messages[2].content[1].image_url for input[1].content[1].image_url (instructions are message
// 0, and calls in a row are one message), reasoning_effort for reasoning.effort, response_format's
// for text.format's. Nothing reaches the upstream.
func TestResponsesAdapterErrorsNameInput(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, "[targets.o]\nadapter = \"ollama\"\nurl = \""+up.srv.URL+"\"\nmodel = \"q\"\n\n[routes.o]\ntargets = [\"o\"]\n", nil)
	image := `{"role":"user","content":[{"type":"input_text","text":"see"},{"type":"input_image","image_url":"data:image/png;base64,***"}]}`
	call := func(id, args string) string {
		return `{"type":"function_call","call_id":"` + id + `","name":"f","arguments":"` + args + `"}`
	}
	out := func(id string) string { return `{"type":"function_call_output","call_id":"` + id + `","output":"ok"}` }
	for _, tc := range []struct{ name, body, param string }{
		{"image after instructions", `{"model":"o","instructions":"be brief","input":[{"role":"user","content":"hi"},` + image + `]}`,
			"input[1].content[1].image_url"},
		{"image after merged system", `{"model":"o","instructions":"a","input":[{"role":"developer","content":"b"},` + image + `]}`,
			"input[1].content[1].image_url"},
		{"arguments", `{"model":"o","instructions":"x","input":[{"role":"user","content":"hi"},` + call("c", "[1]") + `,` + out("c") + `]}`,
			"input[1].arguments"},
		{"second call of a message", `{"model":"o","input":[{"role":"user","content":"hi"},{"role":"assistant","content":"let me"},` +
			call("a", "{}") + `,` + call("b", "7") + `,` + out("a") + `,` + out("b") + `]}`, "input[3].arguments"},
		{"reasoning effort", `{"model":"o","input":"hi","reasoning":{"effort":"bogus"}}`, "reasoning.effort"},
		{"schema", `{"model":"o","input":"hi","text":{"format":{"type":"json_schema","name":"x"}}}`, "text.format.schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", tc.body)
			if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != tc.param {
				t.Errorf("%d %s, want 400 naming %s", rep.status, rep.body, tc.param)
			}
			// The message names what the client sent too: it said "response_format json_schema
			// needs a schema object" beside param text.format.schema.
			for _, chat := range []string{"messages", "response_format", "reasoning_effort", "max_tokens"} {
				if m, _ := rep.errorField(t, "message").(string); strings.Contains(m, chat) {
					t.Errorf("message %q names %s, a field the client never sent", m, chat)
				}
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Errorf("the upstream was asked %d times", n)
	}
}
