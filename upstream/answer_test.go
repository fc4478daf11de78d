package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/hayula/gateway/core"
)

// A 2xx answer without a choice (or, for embeddings, without an embedding) gives the client's SDK
// nothing to read (openai-go's Choices[0] panics): it is a broken answer, so the chain moves on.
func TestNonStreamAnswerWithoutChoices(t *testing.T) {
	const choice = `{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}`
	tests := []struct {
		name   string
		op     core.Op
		body   string
		broken bool
	}{
		{"chat: choices empty", core.OpChat, `{"id":"c","object":"chat.completion","choices":[]}`, true},
		{"chat: choices empty, spaced", core.OpChat, `{"id":"c", "choices" : [ ` + "\n" + ` ] }`, true},
		{"chat: no choices", core.OpChat, `{"id":"c","object":"chat.completion","usage":{"total_tokens":1}}`, true},
		{"chat: choices null", core.OpChat, `{"id":"c","choices":null}`, true},
		{"chat: choices an object", core.OpChat, `{"id":"c","choices":{"0":` + choice + `}}`, true},
		{"chat: choices only nested", core.OpChat, `{"id":"c","x":{"choices":[` + choice + `]}}`, true},
		{"chat: the key only in content", core.OpChat, `{"id":"c","note":"\"choices\":[1]"}`, true},
		{"chat: one choice", core.OpChat, `{"id":"c","choices":[` + choice + `]}`, false},
		{"chat: choices last", core.OpChat, `{"id":"c","usage":{"choices":[]},"choices":[` + choice + `]}`, false},
		{"chat: key escaped", core.OpChat, `{"id":"c","\u0063hoices":[` + choice + `]}`, false},
		{"completions: choices empty", core.OpCompletions, `{"id":"c","object":"text_completion","choices":[]}`, true},
		{"completions: one choice", core.OpCompletions, `{"id":"c","object":"text_completion","choices":[{"text":"ok","index":0}]}`, false},
		{"embeddings: data empty", core.OpEmbeddings, `{"object":"list","data":[],"model":"e"}`, true},
		{"embeddings: no data", core.OpEmbeddings, `{"object":"list","model":"e"}`, true},
		{"embeddings: one", core.OpEmbeddings, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"model":"e"}`, false},
		{"embeddings: no choices needed", core.OpEmbeddings, `{"object":"list","data":[{"embedding":[0.1]}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tt.body)
			})
			tg := target(srv.URL)
			req := &core.Request{Op: tt.op, Model: "auto", Body: []byte(`{"model":"auto","input":"x","prompt":"x"}`)}
			resp, err := newSet(t, tg).Chat(context.Background(), tg, req)
			if !tt.broken {
				if err != nil || string(resp.Body) != tt.body {
					t.Fatalf("Chat = %v, want the answer passed through", err)
				}
				return
			}
			var ea *EmptyAnswerError
			if !errors.As(err, &ea) || !errors.As(err, new(*core.ProtocolError)) {
				t.Fatalf("Chat error = %v (%T), want *core.ProtocolError with *EmptyAnswerError", err, err)
			}
		})
	}
}
