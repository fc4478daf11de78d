package server_test

import (
	"fmt"
	"net/http"
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
