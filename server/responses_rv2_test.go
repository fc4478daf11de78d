package server_test

import (
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

// TestResponsesAllowedToolsEmpty: an allowed_tools tool_choice that allows no tool is refused
// naming it, where the bridge passed it on and an Ollama target, which has no tool_choice and
// offers the tools allowed_tools lists, offered every tool instead of none.
func TestResponsesAllowedToolsEmpty(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, target("up", up.url(), "private")+`
[routes.r]
targets = ["up"]
`, nil)
	const tools = `"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]`
	for _, tc := range []struct {
		name, choice string
		status       int
	}{
		{"empty", `{"type":"allowed_tools","mode":"auto","tools":[]}`, http.StatusBadRequest},
		{"absent", `{"type":"allowed_tools","mode":"required"}`, http.StatusBadRequest},
		{"null", `{"type":"allowed_tools","mode":"required","tools":null}`, http.StatusBadRequest},
		{"one", `{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"}]}`, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi",`+tools+`,"tool_choice":`+tc.choice+`}`)
			if rep.status != tc.status {
				t.Fatalf("%d %s, want %d", rep.status, rep.body, tc.status)
			}
			if tc.status == http.StatusOK {
				return
			}
			if p := rep.errorField(t, "param"); p != "tool_choice.tools" {
				t.Errorf("param %v: %s", p, rep.body)
			}
		})
	}
}
