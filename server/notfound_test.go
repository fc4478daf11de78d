package server_test

import (
	"strings"
	"testing"
)

// TestModelNotFoundSaysWhereTheListIs: a user who asks for the upstream's tag ("llama3.1:8b")
// or a model of another gateway's config instead of a route name is told where the names are,
// on every path that answers model_not_found, and the answer stays the same for a route the
// key may not use (input_test.go holds that).
func TestModelNotFoundSaysWhereTheListIs(t *testing.T) {
	g, _ := keyed(t)
	auth := []string{"Authorization", "Bearer " + laptopKey}
	const hint = "GET /v1/models lists the models you may use"
	for _, tc := range []struct{ name, method, path, body string }{
		{"chat", "POST", "/v1/chat/completions", `{"model":"llama3.1:8b","messages":[{"role":"user","content":"x"}]}`},
		{"embeddings", "POST", "/v1/embeddings", `{"model":"llama3.1:8b","input":"x"}`},
		{"explain", "POST", "/v1/route/explain", `{"model":"llama3.1:8b","messages":[{"role":"user","content":"x"}]}`},
		{"a route the key may not use", "POST", "/v1/chat/completions", `{"model":"cloud","messages":[{"role":"user","content":"x"}]}`},
		{"models/{id}", "GET", "/v1/models/llama3.1:8b", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.do(t, tc.method, tc.path, tc.body, auth...)
			if rep.status != 404 || rep.errorField(t, "code") != "model_not_found" {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, hint) {
				t.Errorf("message %q does not contain %q", msg, hint)
			}
		})
	}
}
