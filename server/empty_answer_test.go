package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A whole 2xx answer with no choices (or an embeddings answer with no data) is a broken answer:
// the chain moves on, and a chain with nothing else to try answers a well-formed 502, not a 200
// that makes openai-go's Choices[0] panic in the client's code.
func TestEmptyAnswerFallsThrough(t *testing.T) {
	tests := []struct{ name, path, body, answer string }{
		{"chat choices empty", "/v1/chat/completions", `{"model":"a","messages":[{"role":"user","content":"hi"}]}`,
			`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`},
		{"chat no choices", "/v1/chat/completions", `{"model":"a","messages":[{"role":"user","content":"hi"}]}`,
			`{"id":"x","object":"chat.completion","created":1,"model":"m","usage":{"total_tokens":1}}`},
		{"completions choices empty", "/v1/completions", `{"model":"a","prompt":"hi"}`,
			`{"id":"x","object":"text_completion","created":1,"model":"m","choices":[]}`},
		{"embeddings data empty", "/v1/embeddings", `{"model":"a","input":"hi"}`, `{"object":"list","data":[],"model":"m"}`},
	}
	for _, tc := range tests {
		empty := func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, tc.answer)
		}
		t.Run(tc.name, func(t *testing.T) {
			g, b := openaiGateway(t, empty)
			resp, err := g.ts.Client().Post(g.ts.URL+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || b.hits.Load() != 1 || resp.Header.Get("x-hayula-chain") != "a→b (served by b)" {
				t.Errorf("%d, chain %q, b hits %d: %s; want b to serve it", resp.StatusCode, resp.Header.Get("x-hayula-chain"), b.hits.Load(), raw)
			}
			b.set(empty)
			rep := g.post(t, tc.path, tc.body)
			if rep.status != http.StatusBadGateway || rep.errorField(t, "code") != "bad_upstream_response" {
				t.Errorf("both targets empty: %d %s, want a 502 bad_upstream_response", rep.status, rep.body)
			}
		})
	}
}
