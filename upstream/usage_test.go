package upstream

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/metrics"
)

// TestTranslatedUsage: an answer the Ollama or SAIF adapter builds carries its token counts in
// Response.Usage, the same that metrics.Usage reads from the JSON it built (which the server
// read them from before); an answer passed through carries none, and is read from the end.
func TestTranslatedUsage(t *testing.T) {
	tests := []struct {
		name   string
		target func(string) *core.Target
		op     core.Op
		answer string
	}{
		{"ollama chat", ollamaTarget, core.OpChat,
			`{"model":"m","message":{"role":"assistant","content":"ok"},"done":true,"done_reason":"stop","prompt_eval_count":12,"eval_count":7}`},
		{"ollama chat without counts", ollamaTarget, core.OpChat,
			`{"model":"m","message":{"role":"assistant","content":"ok"},"done":true}`},
		{"ollama chat, negative", ollamaTarget, core.OpChat,
			`{"model":"m","message":{"role":"assistant","content":"ok"},"done":true,"prompt_eval_count":-3,"eval_count":5}`},
		{"ollama embeddings", ollamaTarget, core.OpEmbeddings, `{"model":"e","embeddings":[[0.1]],"prompt_eval_count":4}`},
		{"saif chat", saifTarget, core.OpChat, `{"text":"ok","usage":{"prompt_tokens":30,"completion_tokens":2}}`},
		{"saif completions", saifTarget, core.OpCompletions, `{"text":"ok","usage":{"prompt_tokens":9,"completion_tokens":1}}`},
		{"saif without usage", saifTarget, core.OpChat, `{"text":"ok"}`},
		{"openai passthrough", func(url string) *core.Target {
			return &core.Target{Name: "oa", Adapter: core.AdapterOpenAI, URL: url, Model: "m", Stats: &core.Stats{}}
		}, core.OpChat,
			`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tt.answer)
			})
			tg := tt.target(srv.URL)
			body := `{"messages":[{"role":"user","content":"x"}]}`
			switch tt.op {
			case core.OpEmbeddings:
				body = `{"input":"x"}`
			case core.OpCompletions:
				body = `{"prompt":"x"}`
			}
			req := chatRequestOf(t, body)
			req.Op = tt.op
			resp, err := newSet(t, tg).Chat(context.Background(), tg, req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Release()
			p, c, ok := metrics.Usage(resp.Body)
			if tg.Adapter == core.AdapterOpenAI {
				if resp.Usage != nil || !ok {
					t.Errorf("passthrough: Usage %+v, body's usage found %v; want it left to the body", resp.Usage, ok)
				}
				return
			}
			if diff := cmp.Diff(&Usage{Prompt: p, Completion: c, Reported: ok}, resp.Usage); diff != "" {
				t.Errorf("Usage (-read from the body +the adapter's):\n%s\nbody %s", diff, resp.Body)
			}
		})
	}
}
