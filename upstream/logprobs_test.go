package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/hayula/gateway/core"
)

// Ollama (v0.12.11 on) takes logprobs and top_logprobs as top-level /api/chat fields; an older
// one ignores them. They go as the client set them, and only then.
func TestOllamaLogprobsRequest(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	const out = `{"model":"llama3.2","messages":[{"role":"user","content":"x"}],"stream":false,"truncate":false`
	tests := []struct{ name, body, want string }{
		{"asked with alternatives", `{` + msgs + `,"logprobs":true,"top_logprobs":3}`, out + `,"logprobs":true,"top_logprobs":3}`},
		{"asked alone", `{"logprobs":true,` + msgs + `}`, out + `,"logprobs":true}`},
		{"top_logprobs null", `{` + msgs + `,"logprobs":true,"top_logprobs":null}`, out + `,"logprobs":true}`},
		{"not asked", `{` + msgs + `,"logprobs":false,"top_logprobs":0}`, out + `}`},
		{"absent", `{` + msgs + `}`, out + `}`},
		{"only in content", `{"messages":[{"role":"user","content":"\"logprobs\":true"}]}`,
			`{"model":"llama3.2","messages":[{"role":"user","content":"\"logprobs\":true"}],"stream":false,"truncate":false}`},
		{"only nested", `{` + msgs + `,"metadata":{"logprobs":true}}`, out + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
			got, err := a.translate(chatRequestOf(t, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(appendOllamaRequest(nil, got))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// ollamaLogprobsLines are /api/chat answer lines as Ollama's API documentation and api/types.go
// give them: logprobs is a member of the answer beside message, one entry per token, bytes and
// top_logprobs left out when empty.
var ollamaLogprobsLines = []string{
	`{"model":"llama3.2","created_at":"2025-11-14T22:26:10.466324Z","message":{"role":"assistant","content":"The"},"done":false,` +
		`"logprobs":[{"token":"The","logprob":-0.83,"bytes":[84,104,101],"top_logprobs":[{"token":"The","logprob":-0.83,"bytes":[84,104,101]},{"token":"Okay","logprob":-1.25,"bytes":[79,107,97,121]}]}]}`,
	`{"model":"llama3.2","created_at":"2025-11-14T22:26:10.5Z","message":{"role":"assistant","content":" sky"},"done":false,` +
		`"logprobs":[{"token":" sky","logprob":-0.5,"bytes":[32,115,107,121]}]}`,
	`{"model":"llama3.2","created_at":"2025-11-14T22:26:10.6Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":2}`,
}

// wantLogprobs is what OpenAI's choices[].logprobs.content says for those lines: top_logprobs []
// where Ollama left it out, as OpenAI's own entries always carry it.
const wantLogprobs = `[{"token":"The","logprob":-0.83,"bytes":[84,104,101],"top_logprobs":[{"token":"The","logprob":-0.83,"bytes":[84,104,101]},{"token":"Okay","logprob":-1.25,"bytes":[79,107,97,121]}]},` +
	`{"token":" sky","logprob":-0.5,"bytes":[32,115,107,121],"top_logprobs":[]}]`

// fakeOllamaLogprobs answers as Ollama does: with logprobs only when the request asks for them.
func fakeOllamaLogprobs(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream   bool `json:"stream"`
			Logprobs bool `json:"logprobs"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("request %s: %v", b, err)
		}
		lines := make([]map[string]json.RawMessage, len(ollamaLogprobsLines))
		for i, l := range ollamaLogprobsLines {
			_ = json.Unmarshal([]byte(l), &lines[i])
			if !req.Logprobs {
				delete(lines[i], "logprobs")
			}
		}
		if req.Stream {
			for _, l := range lines {
				_, _ = w.Write(append(mustJSON(l), '\n'))
			}
			return
		}
		// A whole answer is the last line with the message and logprobs of all of them.
		whole := lines[len(lines)-1]
		whole["message"] = json.RawMessage(`{"role":"assistant","content":"The sky"}`)
		if req.Logprobs {
			var all []json.RawMessage
			for _, l := range lines[:2] {
				var some []json.RawMessage
				_ = json.Unmarshal(l["logprobs"], &some)
				all = append(all, some...)
			}
			whole["logprobs"] = mustJSON(all)
		}
		_, _ = w.Write(mustJSON(whole))
	}
}

func TestOllamaLogprobsAnswer(t *testing.T) {
	for _, asked := range []bool{true, false} {
		want := "null"
		if asked {
			want = `{"content":` + wantLogprobs + `}`
		}
		body := `{"messages":[{"role":"user","content":"why?"}]`
		if asked {
			body += `,"logprobs":true,"top_logprobs":2`
		}
		t.Run(fmt.Sprintf("whole asked=%v", asked), func(t *testing.T) {
			srv := serve(t, fakeOllamaLogprobs(t))
			tg := ollamaTarget(srv.URL)
			resp, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, body+`}`))
			if err != nil {
				t.Fatal(err)
			}
			var c struct {
				Choices []struct {
					Message  struct{ Content string }
					Logprobs json.RawMessage
				}
			}
			if err := json.Unmarshal(resp.Body, &c); err != nil || len(c.Choices) != 1 {
				t.Fatalf("answer %s: %v", resp.Body, err)
			}
			if diff := cmp.Diff(want, string(c.Choices[0].Logprobs)); diff != "" || c.Choices[0].Message.Content != "The sky" {
				t.Errorf("asked %v: content %q, logprobs (-want +got):\n%s", asked, c.Choices[0].Message.Content, diff)
			}
		})
		t.Run(fmt.Sprintf("stream asked=%v", asked), func(t *testing.T) {
			srv := serve(t, fakeOllamaLogprobs(t))
			tg := ollamaTarget(srv.URL)
			resp, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, body+`,"stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Stream.Close()
			events, end := drain(resp.Stream)
			var entries []json.RawMessage
			content := ""
			for _, e := range events {
				var c struct {
					Choices []struct {
						Delta    struct{ Content string }
						Logprobs *struct{ Content []json.RawMessage }
					}
				}
				if err := json.Unmarshal([]byte(e), &c); err != nil || len(c.Choices) != 1 {
					t.Fatalf("chunk %s: %v", e, err)
				}
				content += c.Choices[0].Delta.Content
				if lp := c.Choices[0].Logprobs; lp != nil {
					entries = append(entries, lp.Content...)
				}
			}
			got := "null"
			if entries != nil {
				got = `{"content":` + string(mustJSON(entries)) + `}`
			}
			if diff := cmp.Diff(want, got); diff != "" || content != "The sky" || end != "EOF" {
				t.Errorf("asked %v: content %q, end %s, logprobs (-want +got):\n%s", asked, content, end, diff)
			}
		})
	}
}

// With reasoning = "think-tags" the think block leaves the content, and so do its tokens'
// logprobs: logprobs.content covers the content's tokens (OpenAI's definition), so the tokens
// the SDK's accumulator gathers spell the message it gathers, streamed or not. Ollama sends the
// entries of every token it generates, the block's tags and reasoning included.
func TestOllamaThinkTagsLogprobsAreTheContents(t *testing.T) {
	tests := []struct {
		name   string
		tokens []string
		want   string // the content, which the entries' tokens must spell
	}{
		{"block then answer", []string{"<think>", "\n", "hmm", "</think>", "\n\n", "Hi", "!"}, "Hi!"},
		{"tags split across tokens", []string{"<th", "ink>", "x", "</th", "ink>", "Hi"}, "Hi"},
		{"a tag's prefix that is not one", []string{"<", "b", ">", "bold"}, "<b>bold"},
		{"leading whitespace then the answer", []string{"  ", "Hi"}, "  Hi"},
		{"no block", []string{"Hi", " there"}, "Hi there"},
	}
	for _, tt := range tests {
		lines := make([]string, 0, len(tt.tokens)+1)
		var whole []logprobJSON
		for _, tok := range tt.tokens {
			e := logprobJSON{Token: tok, Logprob: -0.5}
			whole = append(whole, e)
			lines = append(lines, string(mustJSON(map[string]any{"model": "m", "done": false,
				"message": map[string]string{"role": "assistant", "content": tok}, "logprobs": []logprobJSON{e}})))
		}
		lines = append(lines, `{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}`)
		wholeAnswer := string(mustJSON(map[string]any{"model": "m", "done": true, "done_reason": "stop",
			"message": map[string]string{"role": "assistant", "content": strings.Join(tt.tokens, "")}, "logprobs": whole}))
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
					if !stream {
						_, _ = io.WriteString(w, wholeAnswer)
						return
					}
					_, _ = io.WriteString(w, strings.Join(lines, "\n")+"\n")
				})
				tg := ollamaTarget(srv.URL)
				tg.Reasoning = core.ReasoningThinkTags
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"x"}],"logprobs":true,"stream":%v}`, stream)
				resp, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, body))
				if err != nil {
					t.Fatal(err)
				}
				var got openai.ChatCompletion
				if stream {
					defer resp.Stream.Close()
					events, end := drain(resp.Stream)
					if end != "EOF" {
						t.Fatalf("stream ended with %s", end)
					}
					got = accumulate(t, events)
				} else if err := json.Unmarshal(resp.Body, &got); err != nil {
					t.Fatal(err)
				}
				if len(got.Choices) != 1 {
					t.Fatalf("choices: %d", len(got.Choices))
				}
				if spelt := spelling(got); got.Choices[0].Message.Content != tt.want || spelt != tt.want {
					t.Errorf("content %q, the logprobs' tokens spell %q; want both %q", got.Choices[0].Message.Content, spelt, tt.want)
				}
			})
		}
	}
}

// With Ollama's own thinking (message.thinking, reasoning not think-tags), a streamed line of
// thinking carries its tokens' entries too; they are the reasoning's, so a stream's
// logprobs.content spells the content alone.
func TestOllamaThinkingLinesLogprobsDropped(t *testing.T) {
	line := func(field, tok string, done bool) string {
		return string(mustJSON(map[string]any{"model": "m", "done": done,
			"message":  map[string]string{"role": "assistant", field: tok},
			"logprobs": []logprobJSON{{Token: tok, Logprob: -0.5}}}))
	}
	body := strings.Join([]string{line("thinking", "Let me", false), line("thinking", " see", false),
		line("content", "Hi", false), line("content", "!", false),
		`{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}`}, "\n") + "\n"
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, body) })
	tg := ollamaTarget(srv.URL)
	resp, err := newSet(t, tg).Chat(context.Background(), tg,
		chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Stream.Close()
	events, end := drain(resp.Stream)
	acc := accumulate(t, events)
	if end != "EOF" || len(acc.Choices) != 1 {
		t.Fatalf("end %s, choices %d", end, len(acc.Choices))
	}
	if got, spelt := acc.Choices[0].Message.Content, spelling(acc); got != "Hi!" || spelt != "Hi!" {
		t.Errorf("content %q, the logprobs' tokens spell %q; want both \"Hi!\"", got, spelt)
	}
}

// accumulate is what the OpenAI SDK makes of a stream's chunks.
func accumulate(t *testing.T, events []string) openai.ChatCompletion {
	t.Helper()
	var acc openai.ChatCompletionAccumulator
	for _, e := range events {
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(e), &c); err != nil || !acc.AddChunk(c) {
			t.Fatalf("chunk %s: %v, or the accumulator refused it", e, err)
		}
	}
	return acc.ChatCompletion
}

// spelling is the first choice's logprobs.content tokens, joined.
func spelling(c openai.ChatCompletion) string {
	var b strings.Builder
	for _, e := range c.Choices[0].Logprobs.Content {
		b.WriteString(e.Token)
	}
	return b.String()
}

// With think-tags on an openai target (vLLM or llama-server serving R1), the think block moves
// into reasoning_content, and logprobs.content keeps the answer's entries alone, whole or
// streamed, and each entry as the upstream sent it: the tokens spell the content.
func TestThinkTagsLogprobs(t *testing.T) {
	tests := []struct {
		name   string
		tokens []string
		want   string
	}{
		{"block then answer", []string{"<think>", "\n", "hmm", "</think>", "\n\n", "Hi", "!"}, "Hi!"},
		{"tags split across tokens", []string{"<th", "ink>", "x", "</th", "ink>", "Hi"}, "Hi"},
		{"no block", []string{"Hi", " there"}, "Hi there"},
		// Held to the end (it may open a block): the finishing chunk, logprobs null, gives the
		// bytes and must give their entries too.
		{"an answer that is a tag's start", []string{"<", "th"}, "<th"},
	}
	entry := func(tok string) map[string]any {
		return map[string]any{"token": tok, "logprob": -0.5, "bytes": []byte(tok), "top_logprobs": []any{}, "x_vendor": 1}
	}
	for _, tt := range tests {
		var entries []map[string]any
		var chunks []string
		for _, tok := range tt.tokens {
			entries = append(entries, entry(tok))
			chunks = append(chunks, string(mustJSON(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": "m",
				"choices": []any{map[string]any{"index": 0, "delta": map[string]string{"content": tok},
					"logprobs": map[string]any{"content": []any{entry(tok)}}, "finish_reason": nil}}})))
		}
		chunks = append(chunks, `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`)
		whole := string(mustJSON(map[string]any{"id": "c", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": map[string]any{"content": entries},
				"message": map[string]string{"role": "assistant", "content": strings.Join(tt.tokens, "")}}}}))
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
					if !stream {
						w.Header().Set("Content-Type", "application/json")
						_, _ = io.WriteString(w, whole)
						return
					}
					w.Header().Set("Content-Type", "text/event-stream")
					for _, c := range chunks {
						_, _ = io.WriteString(w, "data: "+c+"\n\n")
					}
					_, _ = io.WriteString(w, "data: [DONE]\n\n")
				})
				tg := target(srv.URL)
				tg.Reasoning = core.ReasoningThinkTags
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"x"}],"logprobs":true,"stream":%v}`, stream)
				resp, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, body))
				if err != nil {
					t.Fatal(err)
				}
				var got openai.ChatCompletion
				raw := string(resp.Body)
				if stream {
					defer resp.Stream.Close()
					events, end := drain(resp.Stream)
					if end != "EOF" {
						t.Fatalf("stream ended with %s", end)
					}
					raw = strings.Join(events, "\n")
					got = accumulate(t, events)
				} else if err := json.Unmarshal(resp.Body, &got); err != nil {
					t.Fatal(err)
				}
				if spelt := spelling(got); got.Choices[0].Message.Content != tt.want || spelt != tt.want {
					t.Errorf("content %q, the logprobs' tokens spell %q; want both %q", got.Choices[0].Message.Content, spelt, tt.want)
				}
				if !strings.Contains(raw, `"x_vendor":1`) {
					t.Errorf("an entry lost a member the upstream sent: %s", raw)
				}
			})
		}
	}
}

// A chunk whose logprob entries come without content beside them (the content in a chunk of its
// own) still has its block's entries taken out: the entries' splitter reads their tokens.
func TestThinkTagsLogprobsWithoutContent(t *testing.T) {
	s := newThinkStream(nil, core.ReasoningThinkTags)
	out, keep, _ := s.rewrite([]byte(`{"id":"c","choices":[{"index":0,"delta":{},"logprobs":{"content":[{"token":"<think>","logprob":-1}]},"finish_reason":null}]}`))
	if keep && strings.Contains(string(out), "<think>") {
		t.Errorf("the block's opening tag is left in logprobs.content: %s", out)
	}
	out, keep, _ = s.rewrite([]byte(`{"id":"c","choices":[{"index":0,"delta":{},"logprobs":{"content":[{"token":"hmm","logprob":-1},{"token":"</think>","logprob":-1},{"token":"Hi","logprob":-1}]},"finish_reason":null}]}`))
	if !keep || strings.Contains(string(out), "hmm") || !strings.Contains(string(out), `"Hi"`) {
		t.Errorf("got %s (kept %v), want the answer's entry alone", out, keep)
	}
}
