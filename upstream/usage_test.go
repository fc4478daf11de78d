package upstream

import (
	"context"
	"errors"
	"fmt"
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

// TestTranslatedStreamUsage: a stream the Ollama or SAIF adapter translates knows its usage from
// the upstream's own end (Ollama's done line, SAIF's done event) whether or not the client asked
// for a usage chunk: UsageStream.Usage is what metrics.Usage reads from the chunk include_usage
// adds, and the same unasked (when no chunk carries it); nothing is reported before the end.
func TestTranslatedStreamUsage(t *testing.T) {
	tests := []struct {
		name   string
		target func(string) *core.Target
		op     core.Op
		ctype  string
		answer string
	}{
		{"ollama chat", ollamaTarget, core.OpChat, "application/x-ndjson",
			`{"model":"m","message":{"role":"assistant","content":"ok"},"done":false}` + "\n" +
				`{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":12,"eval_count":7}` + "\n"},
		{"ollama chat without counts", ollamaTarget, core.OpChat, "application/x-ndjson",
			`{"model":"m","message":{"role":"assistant","content":"ok"},"done":true}` + "\n"},
		{"ollama chat, negative", ollamaTarget, core.OpChat, "application/x-ndjson",
			`{"model":"m","message":{"role":"assistant","content":"ok"},"done":true,"prompt_eval_count":-3,"eval_count":5}` + "\n"},
		{"saif chat", saifTarget, core.OpChat, "text/event-stream",
			"data: {\"text\":\"ok\",\"specialist\":\"webapp\"}\n\ndata: {\"done\":true,\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":2}}\n\n"},
		{"saif completions", saifTarget, core.OpCompletions, "text/event-stream",
			"data: {\"text\":\"ok\"}\n\ndata: {\"done\":true,\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1}}\n\n"},
		{"saif without usage", saifTarget, core.OpChat, "text/event-stream",
			"data: {\"text\":\"ok\"}\n\ndata: {\"done\":true}\n\n"},
	}
	for _, tt := range tests {
		for _, asked := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/asked=%v", tt.name, asked), func(t *testing.T) {
				srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", tt.ctype)
					_, _ = io.WriteString(w, tt.answer)
				})
				tg := tt.target(srv.URL)
				body := `{"stream":true,"messages":[{"role":"user","content":"x"}]}`
				if tt.op == core.OpCompletions {
					body = `{"stream":true,"prompt":"x"}`
				}
				req := chatRequestOf(t, body)
				req.Op, req.Stream, req.IncludeUsage = tt.op, true, asked
				resp, err := newSet(t, tg).Chat(context.Background(), tg, req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Stream.Close()
				us, ok := resp.Stream.(UsageStream)
				if !ok {
					t.Fatalf("%T is no UsageStream", resp.Stream)
				}
				if u := us.Usage(); u.Reported {
					t.Errorf("before the end: %+v, want nothing reported", u)
				}
				var chunk *Usage
				for {
					ev, err := resp.Stream.Next()
					if err != nil {
						if !errors.Is(err, io.EOF) {
							t.Fatal(err)
						}
						break
					}
					if p, c, ok := metrics.Usage(ev); ok {
						chunk = &Usage{Prompt: p, Completion: c, Reported: true}
					}
				}
				if asked != (chunk != nil) {
					t.Fatalf("asked %v, usage chunk %+v: the client's chunks changed", asked, chunk)
				}
				want := Usage{Reported: true}
				switch {
				case chunk != nil:
					want = *chunk
				case tt.name == "ollama chat":
					want = Usage{Prompt: 12, Completion: 7, Reported: true}
				case tt.name == "ollama chat, negative":
					want = Usage{Completion: 5, Reported: true}
				case tt.name == "saif chat":
					want = Usage{Prompt: 30, Completion: 2, Reported: true}
				case tt.name == "saif completions":
					want = Usage{Prompt: 9, Completion: 1, Reported: true}
				}
				if diff := cmp.Diff(want, us.Usage()); diff != "" {
					t.Errorf("Usage (-the usage chunk's, or the upstream's +the stream's):\n%s", diff)
				}
			})
		}
	}
}
