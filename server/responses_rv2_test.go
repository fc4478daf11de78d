package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestResponsesRefusesMessages: a Responses body that also carries chat's "messages" is refused
// naming it, where the bridge built its chat messages from "input" and dropped the client's
// "messages" unread; explain, which takes a body with "messages" for a chat body, would have
// described a request the call did not send (an image in messages, text in input: explain said
// images, the call sent none).
func TestResponsesRefusesMessages(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, target("up", up.url(), "private")+`
[routes.r]
targets = ["up"]
`, nil)
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"input and messages", `{"model":"r","input":"hi","messages":[{"role":"user","content":"other"}]}`, http.StatusBadRequest},
		{"input and empty messages", `{"model":"r","input":"hi","messages":[]}`, http.StatusBadRequest},
		{"messages null", `{"model":"r","input":"hi","messages":null}`, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", tc.body)
			if rep.status != tc.status {
				t.Fatalf("%d %s, want %d", rep.status, rep.body, tc.status)
			}
			if tc.status == http.StatusOK {
				return
			}
			if p := rep.errorField(t, "param"); p != "messages" {
				t.Errorf("param %v: %s", p, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, "input") || !strings.Contains(msg, "/v1/chat/completions") {
				t.Errorf("message %q does not say where messages go", msg)
			}
		})
	}
}

// TestResponsesAllowedToolsEmpty: an allowed_tools tool_choice that lists no tool (an empty list,
// or none at all) offers none, as chat reads it (core.Params.OffersTools): a target declared
// tools = false serves the request, sent without the tools, and a target with tools is sent
// chat's allowed_tools listing none. (The bridge refused it 400 naming tool_choice.tools while
// chat took the same choice; this test failed first.) A mode other than auto or required stays
// refused.
func TestResponsesAllowedToolsEmpty(t *testing.T) {
	plain, up := newFake(t, "plain"), newFake(t, "up")
	plain.set(llamaServerNoJinja("plain"))
	g := newGateway(t, target("plain", plain.url(), "private", "tools = false")+target("up", up.url(), "private")+`
[routes.r]
targets = ["plain"]

[routes.t]
targets = ["up"]
`, nil)
	const tools = `"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]`
	for _, tc := range []struct {
		name, choice string
		offers       bool
	}{
		{"empty", `{"type":"allowed_tools","mode":"auto","tools":[]}`, false},
		{"absent", `{"type":"allowed_tools","mode":"required"}`, false},
		{"null", `{"type":"allowed_tools","mode":"required","tools":null}`, false},
		{"one", `{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"}]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `"input":"hi",` + tools + `,"tool_choice":` + tc.choice + `}`
			rep := g.post(t, "/v1/responses", `{"model":"r",`+body)
			if !tc.offers {
				if rep.status != http.StatusOK || rep.header.Get("x-hayula-chain") != "plain" {
					t.Fatalf("the target without tools: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
				}
				sent := plain.lastBody(t)
				for _, k := range []string{"tools", "tool_choice"} {
					if _, ok := sent[k]; ok {
						t.Errorf("the target without tools got %s: %v", k, sent)
					}
				}
			} else if rep.status != http.StatusBadRequest {
				t.Errorf("the target without tools: %d, want 400: %s", rep.status, rep.body)
			}
			rep = g.post(t, "/v1/responses", `{"model":"t",`+body)
			if rep.status != http.StatusOK {
				t.Fatalf("the target with tools: %d %s", rep.status, rep.body)
			}
			choice, _ := json.Marshal(up.lastBody(t)["tool_choice"])
			want := `{"allowed_tools":{"mode":"auto","tools":[]},"type":"allowed_tools"}`
			if tc.name != "empty" {
				want = strings.Replace(want, "auto", "required", 1)
			}
			if tc.offers {
				want = `{"allowed_tools":{"mode":"required","tools":[{"function":{"name":"f"},"type":"function"}]},"type":"allowed_tools"}`
			}
			if string(choice) != want {
				t.Errorf("the target with tools got tool_choice %s, want %s", choice, want)
			}
		})
	}
	rep := g.post(t, "/v1/responses", `{"model":"t","input":"hi",`+tools+`,"tool_choice":{"type":"allowed_tools","mode":"none","tools":[]}}`)
	if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != "tool_choice.mode" {
		t.Errorf("mode none: %d %s", rep.status, rep.body)
	}
}
