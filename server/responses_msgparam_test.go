package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestResponsesUpstreamParamMessagesIsInput: an upstream's 400 about the chat messages as a whole
// (param "messages", no index: a conversation its template refuses, one too long) names the
// Responses body's input, which they were built from. It named messages, a field the client
// never sent and whose Responses form is refused (unknown_parameter).
func TestResponsesUpstreamParamMessagesIsInput(t *testing.T) {
	g, up := oneTarget(t)
	up.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"Conversation roles must alternate user/assistant/user/assistant/...","type":"invalid_request_error","param":"messages","code":null}}`)
	})
	for _, stream := range []string{"false", "true"} {
		rep := g.post(t, "/v1/responses", `{"model":"r","stream":`+stream+`,"input":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`)
		if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != "input" {
			t.Errorf("stream %s: %d %s, want 400 naming input", stream, rep.status, rep.body)
		}
	}
}

// TestResponsesUpstreamMessageNamesInput: an upstream's refusal names the chat field it refuses in
// its message as well as in param (OpenAI's "Invalid 'messages[2].content': …"), and the client,
// told param input[1].content, read in the message a field it never sent, at an index that
// instructions made message 0. The message names the field as param does; words that merely
// contain "messages" (the client's own text quoted back, system_messages) are left as they are.
func TestResponsesUpstreamMessageNamesInput(t *testing.T) {
	g, up := oneTarget(t)
	body := `{"model":"r","instructions":"be brief","input":[{"role":"user","content":"a"},{"role":"user","content":"my messages[0]"}]}`
	for _, tc := range []struct{ name, param, message, wantParam, wantMessage string }{
		{"indexed", "messages[2].content",
			`Invalid 'messages[2].content': string too long ("my messages[0]", "messages[2]"). See messages[2]. Not system_messages[1] nor messages[9].`,
			"input[1].content",
			`Invalid 'input[1].content': string too long ("my messages[0]", "input[1]"). See input[1]. Not system_messages[1] nor messages[9].`},
		{"instructions", "messages[0].content", "Invalid type for 'messages[0].content'.", "instructions", "Invalid type for 'instructions'."},
		{"whole", "messages",
			"'messages' must contain the word 'json' in some form; these messages do not.",
			"input",
			"'input' must contain the word 'json' in some form; these messages do not."},
	} {
		up.set(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": tc.message, "type": "invalid_request_error", "param": tc.param, "code": nil}})
			w.Write(b)
		})
		for _, stream := range []string{"false", "true"} {
			rep := g.post(t, "/v1/responses", strings.Replace(body, `{"model":"r",`, `{"model":"r","stream":`+stream+`,`, 1))
			if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != tc.wantParam || rep.errorField(t, "message") != tc.wantMessage {
				t.Errorf("%s, stream %s: %d %s, want 400 naming %s: %q", tc.name, stream, rep.status, rep.body, tc.wantParam, tc.wantMessage)
			}
		}
	}
}
