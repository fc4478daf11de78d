package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/hayula/gateway/core"
)

// A 2xx from /api/chat that is no finished answer (Ollama's always says done: true), or from
// /api/embed with no embedding, is a broken answer and falls through, as an OpenAI-compatible
// answer without choices does: passed on, it is an empty completion the client takes for the
// model's, or a list whose data[0] panics in openai-go.
func TestOllamaNonStreamAnswerNotFinished(t *testing.T) {
	tests := []struct {
		name   string
		op     core.Op
		body   string
		broken bool
	}{
		{"chat: null", core.OpChat, `null`, true},
		{"chat: empty object", core.OpChat, `{}`, true},
		{"chat: another service's 200", core.OpChat, `{"status":"success"}`, true},
		{"chat: not done", core.OpChat, `{"model":"m","message":{"role":"assistant","content":"The"},"done":false}`, true},
		{"chat: done", core.OpChat, `{"model":"m","message":{"role":"assistant","content":"ok"},"done":true,"done_reason":"stop"}`, false},
		{"chat: done with nothing said", core.OpChat, `{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}`, false},
		// An empty list is 0 embeddings for 1 input, a count mismatch (class endpoint, as
		// through an openai target: TestEmbeddingsOllamaUnusableEmbedding); no list at all is
		// no /api/embed answer.
		{"embed: none", core.OpEmbeddings, `{"model":"e"}`, true},
		{"embed: null list", core.OpEmbeddings, `{"model":"e","embeddings":null}`, true},
		{"embed: null", core.OpEmbeddings, `null`, true},
		{"embed: one", core.OpEmbeddings, `{"model":"e","embeddings":[[0.1,0.2]]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tt.body)
			})
			tg := ollamaTarget(srv.URL)
			body := `{"messages":[{"role":"user","content":"x"}]}`
			if tt.op == core.OpEmbeddings {
				body = `{"input":"x"}`
			}
			req := chatRequestOf(t, body)
			req.Op = tt.op
			resp, err := newSet(t, tg).Chat(context.Background(), tg, req)
			if !tt.broken {
				if err != nil {
					t.Fatalf("Chat = %v, want an answer", err)
				}
				return
			}
			if !errors.As(err, new(*core.ProtocolError)) {
				t.Fatalf("Chat = %v (%T), answer %s; want a *core.ProtocolError", err, err, resp.Body)
			}
		})
	}
}
