package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// TestThinkOpenBrokenOffHoldingWhitespace: a translated think-open stream (Ollama, SAIF) that
// breaks off while its splitter holds only the whitespace that opened the output has nothing left
// to say before the error: that whitespace is dropped as whitespace just inside the block is, so
// no chunk with an empty delta goes out for it (as the OpenAI rewrite's closing chunk does not).
func TestThinkOpenBrokenOffHoldingWhitespace(t *testing.T) {
	now := func() time.Time { return time.Unix(1, 0) }
	id := func() string { return "id" }
	for _, tt := range []struct {
		name string
		open func(io.ReadCloser) Stream
		body string
	}{
		{"ollama", func(b io.ReadCloser) Stream {
			a := &openaiOllama{t: &core.Target{Name: "o", Model: "m", Reasoning: core.ReasoningThinkOpen}, now: now, newID: id}
			return a.newStream(b, false, a.t.Reasoning)
		}, `{"model":"m","message":{"role":"assistant","content":"\n"},"done":false}` + "\n" +
			`{"model":"m","message":{"role":"assistant","content":" \n"},"done":false}` + "\n"},
		{"saif", func(b io.ReadCloser) Stream {
			return &saifStream{target: "s", body: b, sse: newSSEReader(b), out: newChunker("id", 1, "m", core.ReasoningThinkOpen),
				header: http.Header{}}
		}, `data: {"text":"\n"}` + "\n\n" + `data: {"text":" \n"}` + "\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.open(io.NopCloser(strings.NewReader(tt.body)))
			defer s.Close()
			var events []string
			for {
				ev, err := s.Next()
				if err != nil {
					if _, ok := errors.AsType[*core.StreamError](err); !ok {
						t.Fatalf("end %v, want a stream error", err)
					}
					break
				}
				events = append(events, string(ev))
			}
			if len(events) != 1 {
				t.Fatalf("events %q, want the first chunk (the role's) alone before the error", events)
			}
			var c struct {
				Choices []struct {
					Delta map[string]json.RawMessage `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(events[0]), &c); err != nil || len(c.Choices) != 1 {
				t.Fatalf("first chunk %s: %v", events[0], err)
			}
			if string(c.Choices[0].Delta["role"]) != `"assistant"` || c.Choices[0].Delta["reasoning_content"] != nil {
				t.Errorf("first chunk %s, want the role and no reasoning", events[0])
			}
		})
	}
}

// TestSplitThinkBodyNoEmptyReasoning: a whole answer whose block held no reasoning (an empty
// one, think-open's "</think>" straight away, or whitespace alone before a tool call) gains no
// reasoning_content "" member, as its stream gains no reasoning delta and the translating
// adapters' answers carry none; a reasoning_content the upstream sent stays as it came.
func TestSplitThinkBodyNoEmptyReasoning(t *testing.T) {
	const call = `"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]`
	tests := []struct {
		name string
		r    core.Reasoning
		in   string
		want string
	}{
		{"think-open: whitespace before a tool call", core.ReasoningThinkOpen,
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"\n\n",` + call + `},"finish_reason":"tool_calls"}]}`,
			`{"choices":[{"finish_reason":"tool_calls","index":0,"message":{"content":"","role":"assistant",` + call + `}}]}`},
		{"think-open: an empty block before a tool call", core.ReasoningThinkOpen,
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"</think>\n\n",` + call + `},"finish_reason":"tool_calls"}]}`,
			`{"choices":[{"finish_reason":"tool_calls","index":0,"message":{"content":"","role":"assistant",` + call + `}}]}`},
		{"think-open: an empty block before the answer", core.ReasoningThinkOpen,
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"</think>\n\nHi"},"finish_reason":"stop"}]}`,
			`{"choices":[{"finish_reason":"stop","index":0,"message":{"content":"Hi","role":"assistant"}}]}`},
		{"think-open: the empty block a model writes itself (Qwen3's /no_think)", core.ReasoningThinkOpen,
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"<think>\n\n</think>\n\nHi"},"finish_reason":"stop"}]}`,
			`{"choices":[{"finish_reason":"stop","index":0,"message":{"content":"Hi","role":"assistant"}}]}`},
		{"think-tags: an empty block", core.ReasoningThinkTags,
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"<think>\n\n</think>\n\nHi"},"finish_reason":"stop"}]}`,
			`{"choices":[{"finish_reason":"stop","index":0,"message":{"content":"Hi","role":"assistant"}}]}`},
		{"the upstream's own empty reasoning_content stays", core.ReasoningThinkTags,
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"<think></think>Hi","reasoning_content":""},"finish_reason":"stop"}]}`,
			`{"choices":[{"finish_reason":"stop","index":0,"message":{"content":"Hi","reasoning_content":"","role":"assistant"}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(splitThinkBody([]byte(tt.in), tt.r)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestThinkOpenCutLogprobsEmptyNotNull: a whole answer to a request with logprobs, cut by
// max_tokens inside the block (think-open's headline case), has no content and so no content
// tokens: logprobs.content is [], as OpenAI answers a reasoning model that spent max_tokens on
// its reasoning and as the openai adapter answers the same output, not "logprobs": null, which
// says the upstream sent none (and fails the conformance suite's logprobs.content, which skips
// an empty array beside reasoning). Ollama sent entries; they were all the block's.
func TestThinkOpenCutLogprobsEmptyNotNull(t *testing.T) {
	for _, mode := range []struct {
		name   string
		r      core.Reasoning
		tokens []string
	}{
		{"think-open", core.ReasoningThinkOpen, []string{"Let", " me", " count"}},
		{"think-tags", core.ReasoningThinkTags, []string{"<think>", "Let", " me", " count"}},
	} {
		var entries []map[string]any
		for _, tok := range mode.tokens {
			b := make([]int, len(tok))
			for i := range len(tok) {
				b[i] = int(tok[i])
			}
			entries = append(entries, map[string]any{"token": tok, "logprob": -0.5, "bytes": b, "top_logprobs": []any{}})
		}
		content := strings.Join(mode.tokens, "")
		for _, adapter := range []core.AdapterKind{core.AdapterOpenAI, core.AdapterOllama} {
			t.Run(fmt.Sprintf("%s/%v", mode.name, adapter), func(t *testing.T) {
				srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
					if adapter == core.AdapterOllama {
						_, _ = w.Write(mustJSON(map[string]any{"model": "m", "done": true, "done_reason": "length",
							"message": map[string]string{"role": "assistant", "content": content}, "logprobs": entries}))
						return
					}
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write(mustJSON(map[string]any{"id": "c", "object": "chat.completion", "model": "m",
						"choices": []any{map[string]any{"index": 0, "finish_reason": "length", "logprobs": map[string]any{"content": entries},
							"message": map[string]string{"role": "assistant", "content": content}}}}))
				})
				tg := target(srv.URL)
				if adapter == core.AdapterOllama {
					tg = ollamaTarget(srv.URL)
				}
				tg.Reasoning = mode.r
				resp, err := newSet(t, tg).Chat(context.Background(), tg,
					chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"max_tokens":3}`))
				if err != nil {
					t.Fatal(err)
				}
				var got struct {
					Choices []struct {
						Message struct {
							Content   string `json:"content"`
							Reasoning string `json:"reasoning_content"`
						} `json:"message"`
						Logprobs json.RawMessage `json:"logprobs"`
					} `json:"choices"`
				}
				if err := json.Unmarshal(resp.Body, &got); err != nil || len(got.Choices) != 1 {
					t.Fatalf("answer %s: %v", resp.Body, err)
				}
				ch := got.Choices[0]
				var lp struct {
					Content []json.RawMessage `json:"content"`
				}
				const want = "Let me count"
				if ch.Message.Content != "" || ch.Message.Reasoning != want || json.Unmarshal(ch.Logprobs, &lp) != nil || lp.Content == nil || len(lp.Content) != 0 {
					t.Errorf("content %q, reasoning %q, logprobs %s; want \"\", %q and a logprobs.content of []", ch.Message.Content, ch.Message.Reasoning, ch.Logprobs, want)
				}
			})
		}
	}
}
