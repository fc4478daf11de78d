package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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
// adds, and the same unasked (when no chunk carries it); nothing is reported before the end. An
// end without counts reports none, asked or not, and has no usage chunk (it had one of 0/0,
// which charged a key's tpm nothing: TestTranslatedWithoutCounts).
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
				counted := !strings.Contains(tt.name, "without")
				if (asked && counted) != (chunk != nil) {
					t.Fatalf("asked %v, usage chunk %+v: the client's chunks changed", asked, chunk)
				}
				want := Usage{} // an end without counts
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

// TestTranslatedWithoutCounts: an Ollama answer or done line with neither prompt_eval_count nor
// eval_count (an /api/embed answer without prompt_eval_count), or a SAIF answer or done event
// without usage, reports no usage: Response.Usage and
// UsageStream.Usage say Reported false (so that the server charges a key's tpm the prompt's lower
// bound, as for an openai answer without usage, and the metrics count nothing), and the client
// is told no fabricated 0/0: the whole answer has no usage member, and a stream whose client
// asked for usage has no usage chunk, as a server that reports none sends none. An Ollama
// answer with one of its counts (Ollama omits a count of 0) reports usage, the other 0.
func TestTranslatedWithoutCounts(t *testing.T) {
	const (
		ollWhole  = `{"model":"m","message":{"role":"assistant","content":"ok"},"done":true,"done_reason":"stop"}`
		ollStream = `{"model":"m","message":{"role":"assistant","content":"ok"},"done":false}` + "\n" +
			`{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}` + "\n"
		saifWhole  = `{"text":"ok","finish_reason":"stop"}`
		saifStream = "data: {\"text\":\"ok\"}\n\ndata: {\"done\":true,\"finish_reason\":\"stop\"}\n\n"
	)
	tests := []struct {
		name   string
		target func(string) *core.Target
		op     core.Op
		stream bool
		ctype  string
		answer string
		want   Usage
	}{
		{"ollama chat", ollamaTarget, core.OpChat, false, "application/json", ollWhole, Usage{}},
		{"ollama chat stream", ollamaTarget, core.OpChat, true, "application/x-ndjson", ollStream, Usage{}},
		{"ollama chat, eval_count only", ollamaTarget, core.OpChat, false, "application/json",
			`{"model":"m","message":{"role":"assistant","content":"ok"},"done":true,"eval_count":3}`, Usage{Completion: 3, Reported: true}},
		{"ollama chat stream, prompt_eval_count only", ollamaTarget, core.OpChat, true, "application/x-ndjson",
			`{"model":"m","message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":4}` + "\n", Usage{Prompt: 4, Reported: true}},
		{"ollama embeddings", ollamaTarget, core.OpEmbeddings, false, "application/json", `{"model":"m","embeddings":[[1,2]]}`, Usage{}},
		{"ollama embeddings, prompt_eval_count", ollamaTarget, core.OpEmbeddings, false, "application/json",
			`{"model":"m","embeddings":[[1,2]],"prompt_eval_count":2}`, Usage{Prompt: 2, Reported: true}},
		{"saif chat", saifTarget, core.OpChat, false, "application/json", saifWhole, Usage{}},
		{"saif completions", saifTarget, core.OpCompletions, false, "application/json", saifWhole, Usage{}},
		{"saif chat stream", saifTarget, core.OpChat, true, "text/event-stream", saifStream, Usage{}},
		{"saif completions stream", saifTarget, core.OpCompletions, true, "text/event-stream", saifStream, Usage{}},
	}
	for _, tt := range tests {
		for _, asked := range []bool{true, false} {
			if !tt.stream && !asked {
				continue
			}
			t.Run(fmt.Sprintf("%s/asked=%v", tt.name, asked), func(t *testing.T) {
				srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", tt.ctype)
					_, _ = io.WriteString(w, tt.answer)
				})
				tg := tt.target(srv.URL)
				body := `{"messages":[{"role":"user","content":"x"}]}`
				switch tt.op {
				case core.OpCompletions:
					body = `{"prompt":"x"}`
				case core.OpEmbeddings:
					body = `{"input":"x"}`
				}
				req := chatRequestOf(t, body)
				req.Op, req.Stream, req.IncludeUsage = tt.op, tt.stream, tt.stream && asked
				resp, err := newSet(t, tg).Chat(context.Background(), tg, req)
				if err != nil {
					t.Fatal(err)
				}
				var got Usage
				var told []string // what the client is told of usage
				if !tt.stream {
					defer resp.Release()
					if resp.Usage == nil {
						t.Fatal("a translated answer without Response.Usage")
					}
					got = *resp.Usage
					if bytes.Contains(resp.Body, []byte(`"usage"`)) {
						told = append(told, string(resp.Body))
					}
				} else {
					defer resp.Stream.Close()
					for {
						ev, err := resp.Stream.Next()
						if err != nil {
							if !errors.Is(err, io.EOF) {
								t.Fatal(err)
							}
							break
						}
						if bytes.Contains(ev, []byte(`"usage"`)) {
							told = append(told, string(ev))
						}
					}
					got = resp.Stream.(UsageStream).Usage()
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Usage (-want +got):\n%s", diff)
				}
				if wantTold := tt.want.Reported && asked; wantTold != (len(told) > 0) {
					t.Errorf("the client is told usage in %q; want it told: %v", told, wantTold)
				}
			})
		}
	}
}
