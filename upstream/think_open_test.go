package upstream

// reasoning = "think-open": a chat template that puts <think> into the prompt, so the output
// starts inside the block (R1's distills under vLLM without --reasoning-parser, llama-server,
// SGLang). Everything up to the first </think> is reasoning, as vLLM's deepseek_r1 parser reads
// it; a <think> at the very start is dropped; an output that never writes </think> is all
// reasoning.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/hayula/gateway/core"
)

// feedMode runs pieces through one splitter for r.
func feedMode(r core.Reasoning, pieces ...string) thinkResult {
	s := newThinkSplitter(r)
	var res thinkResult
	for _, p := range pieces {
		c, rs := s.split(p)
		res.Content += c
		res.Reasoning += rs
	}
	c, rs := s.flush()
	res.Content += c
	res.Reasoning += rs
	return res
}

var thinkOpenCases = []struct {
	name, in string
	want     thinkResult
}{
	{"no opening tag", "plan the reply</think>\n\nParis.", thinkResult{"Paris.", "plan the reply"}},
	{"with an opening tag", "<think>\nplan</think>\n\nParis.", thinkResult{"Paris.", "plan"}},
	{"leading whitespace then the tag", " \n<think>a</think>b", thinkResult{"b", "a"}},
	{"leading whitespace is inside the block", "\n\nstep 1\nstep 2\n</think>\n\nDone", thinkResult{"Done", "step 1\nstep 2"}},
	{"never closed is all reasoning", "still thinking", thinkResult{"", "still thinking"}},
	{"never closed after the tag", "<think>still thinking", thinkResult{"", "still thinking"}},
	{"never closed keeps its trailing whitespace", "a \n", thinkResult{"", "a \n"}},
	{"a lone opening tag prefix is reasoning", "<thi", thinkResult{"", "<thi"}},
	{"a lone closing tag prefix is reasoning", "</thi", thinkResult{"", "</thi"}},
	{"empty reasoning", "</think>\n\nParis.", thinkResult{"Paris.", ""}},
	{"empty block", "<think></think>", thinkResult{"", ""}},
	{"only whitespace", " \n ", thinkResult{"", ""}},
	{"only the first </think> closes", "a</think>b</think>c", thinkResult{"b</think>c", "a"}},
	{"a second <think> is reasoning", "<think><think>a</think>b", thinkResult{"b", "<think>a"}},
	{"a tag later on stays in the answer", "a</think>Wrap it in <think> tags.", thinkResult{"Wrap it in <think> tags.", "a"}},
	{"near-miss closing tags stay reasoning", "a</thinking>b<</think>c", thinkResult{"c", "a</thinking>b<"}},
	{"double angle is reasoning", "<<think>x</think>y", thinkResult{"y", "<<think>x"}},
	{"arabic", "أفكر في السؤال</think>\nالجواب: نعم", thinkResult{"الجواب: نعم", "أفكر في السؤال"}},
	{"whitespace inside the tags is dropped", "  a b \t</think>c", thinkResult{"c", "a b"}},
	{"whitespace before a near-miss tag stays", "a \n</th>b", thinkResult{"", "a \n</th>b"}},
	{"only whitespace after the block", "x</think>  \n", thinkResult{"", "x"}},
}

func TestThinkOpenSplitterEveryBytePosition(t *testing.T) {
	for _, tt := range thinkOpenCases {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, feedMode(core.ReasoningThinkOpen, tt.in)); diff != "" {
				t.Fatalf("whole (-want +got):\n%s", diff)
			}
			for i := 0; i <= len(tt.in); i++ {
				for j := i; j <= len(tt.in); j++ {
					if got := feedMode(core.ReasoningThinkOpen, tt.in[:i], tt.in[i:j], tt.in[j:]); got != tt.want {
						t.Fatalf("split at %d and %d: got %+v, want %+v", i, j, got, tt.want)
					}
				}
			}
			pieces := make([]string, len(tt.in))
			for i := range len(tt.in) {
				pieces[i] = tt.in[i : i+1]
			}
			if diff := cmp.Diff(tt.want, feedMode(core.ReasoningThinkOpen, pieces...)); diff != "" {
				t.Fatalf("byte by byte (-want +got):\n%s", diff)
			}
		})
	}
}

// thinkOpenSpec is think-open as CONFIG.md states it, written plainly over the whole output: the
// output begins inside the block (after leading whitespace and one <think>, both dropped);
// everything up to the first </think> is reasoning, whitespace just inside the tags and just after
// </think> dropped; an output without </think> is all reasoning (its trailing whitespace kept, as
// think-tags keeps an unclosed block's).
func thinkOpenSpec(in string) thinkResult {
	const ws = " \t\r\n"
	rest := strings.TrimLeft(strings.TrimPrefix(strings.TrimLeft(in, ws), openThink), ws)
	reasoning, answer, closed := strings.Cut(rest, closeThink)
	if !closed {
		return thinkResult{Reasoning: rest}
	}
	return thinkResult{strings.TrimLeft(answer, ws), strings.TrimRight(reasoning, ws)}
}

// FuzzThinkOpenSplit checks the think-open splitter against thinkOpenSpec as FuzzThinkSplit
// checks think-tags': whole, cut anywhere (three cuts), and a byte at a time.
func FuzzThinkOpenSplit(f *testing.F) {
	for _, tt := range thinkOpenCases {
		f.Add(tt.in, uint8(len(tt.in)/2), uint8(len(tt.in)/3), uint8(1))
	}
	for _, tt := range thinkCases {
		f.Add(tt.in, uint8(len(tt.in)/2), uint8(len(tt.in)/3), uint8(1))
	}
	f.Fuzz(func(t *testing.T, in string, a, b, c uint8) {
		want := thinkOpenSpec(in)
		if got := feedMode(core.ReasoningThinkOpen, in); got != want {
			t.Fatalf("%q whole: %+v, want %+v", in, got, want)
		}
		cuts := []int{int(a) % (len(in) + 1), int(b) % (len(in) + 1), int(c) % (len(in) + 1)}
		slices.Sort(cuts)
		pieces := []string{in[:cuts[0]], in[cuts[0]:cuts[1]], in[cuts[1]:cuts[2]], in[cuts[2]:]}
		if got := feedMode(core.ReasoningThinkOpen, pieces...); got != want {
			t.Fatalf("%q in %q: %+v, want %+v", in, pieces, got, want)
		}
		bytewise := make([]string, len(in))
		for i := range len(in) {
			bytewise[i] = in[i : i+1]
		}
		if got := feedMode(core.ReasoningThinkOpen, bytewise...); got != want {
			t.Fatalf("%q byte by byte: %+v, want %+v", in, got, want)
		}
	})
}

// openChunk is an OpenAI chunk of content s for choice 0.
func openChunk(s string) string {
	b, _ := json.Marshal(s)
	return `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`
}

// streamed is what a client reads of a stream's chunks: the content and reasoning deltas joined,
// the finish_reasons, and each event's reasoning.
type streamed struct {
	thinkResult
	finish    string
	reasoning []string
}

func readChunks(t *testing.T, events []string) streamed {
	t.Helper()
	var got streamed
	for _, ev := range events {
		var c struct {
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					Reasoning string  `json:"reasoning_content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("not JSON: %s", ev)
		}
		r := ""
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				got.Content += *ch.Delta.Content
			}
			got.Reasoning += ch.Delta.Reasoning
			r += ch.Delta.Reasoning
			if ch.FinishReason != nil {
				got.finish += *ch.FinishReason
			}
		}
		got.reasoning = append(got.reasoning, r)
	}
	return got
}

// FuzzThinkOpenStream checks the think-open stream rewrite against thinkOpenSpec as
// FuzzThinkStream checks think-tags': the output cut into chunks anywhere between characters,
// then a finishing chunk whose finish_reason ("length": a block cut short) is kept.
func FuzzThinkOpenStream(f *testing.F) {
	for _, tt := range thinkOpenCases {
		f.Add(tt.in, uint8(len(tt.in)/2), uint8(len(tt.in)/3))
	}
	f.Fuzz(func(t *testing.T, in string, a, b uint8) {
		if !utf8.ValidString(in) {
			return // a JSON string holds characters
		}
		cuts := []int{int(a) % (len(in) + 1), int(b) % (len(in) + 1)}
		slices.Sort(cuts)
		for i := range cuts {
			for cuts[i] < len(in) && !utf8.RuneStart(in[cuts[i]]) {
				cuts[i]++
			}
		}
		evs := []string{openChunk(in[:cuts[0]]), openChunk(in[cuts[0]:max(cuts[0], cuts[1])]), openChunk(in[max(cuts[0], cuts[1]):]),
			`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`}
		events, end := drain(newThinkStream(&listStream{evs: evs}, core.ReasoningThinkOpen))
		got := readChunks(t, events)
		if want := thinkOpenSpec(in); got.thinkResult != want || got.finish != "length" || end != "EOF" {
			t.Fatalf("%q cut at %v: %+v, finish %q, end %s; want %+v", in, cuts, got.thinkResult, got.finish, end, want)
		}
	})
}

// TestThinkOpenStreamEveryBytePosition: the output cut in two at every byte, </think> included.
// Since the stream starts inside the block, nothing is held back but whitespace and what may
// still be </think>: the first chunk's reasoning goes out with it.
func TestThinkOpenStreamEveryBytePosition(t *testing.T) {
	const finish = `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	want := thinkResult{"The first.", "Compare both."}
	for _, content := range []string{"Compare both.</think>\n\nThe first.", "<think>\nCompare both.</think>\n\nThe first."} {
		at := strings.Index(content, closeThink)
		for i := 0; i <= len(content); i++ {
			events, end := drain(newThinkStream(&listStream{evs: []string{openChunk(content[:i]), openChunk(content[i:]), finish}}, core.ReasoningThinkOpen))
			for _, ev := range events {
				if strings.Contains(ev, `"delta":{},"finish_reason":null`) {
					t.Fatalf("split at %d: an emptied chunk was sent: %s", i, ev)
				}
			}
			got := readChunks(t, events)
			if got.thinkResult != want || got.finish != "stop" || end != "EOF" {
				t.Fatalf("%q split at %d: got %+v, finish %q, end %s; want %+v", content, i, got.thinkResult, got.finish, end, want)
			}
			if !strings.HasPrefix(content, "<") && i > 0 {
				if first := strings.TrimRight(content[:min(i, at)], " "); got.reasoning[0] != first {
					t.Fatalf("%q split at %d: the first chunk's reasoning is %q, want %q (held back)", content, i, got.reasoning[0], first)
				}
			}
		}
	}
}

// TestSplitThinkBodyOpen: a whole chat.completion from a think-open target.
func TestSplitThinkBodyOpen(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no opening tag",
			`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hmm</think>\n\n42"},"finish_reason":"stop"}]}`,
			`{"choices":[{"finish_reason":"stop","index":0,"message":{"content":"42","reasoning_content":"hmm","role":"assistant"}}],"id":"x"}`},
		{"with an opening tag",
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"<think>\nhmm\n</think>\n\n42"},"finish_reason":"stop"}]}`,
			`{"choices":[{"finish_reason":"stop","index":0,"message":{"content":"42","reasoning_content":"hmm","role":"assistant"}}]}`},
		{"never closed: all reasoning, cut by length",
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"Let me count: 1, 2,"},"finish_reason":"length"}]}`,
			`{"choices":[{"finish_reason":"length","index":0,"message":{"content":"","reasoning_content":"Let me count: 1, 2,","role":"assistant"}}]}`},
		{"a tag escaped by a Go server",
			`{"choices":[{"message":{"content":"a\u003c/think\u003eb"}}]}`,
			`{"choices":[{"message":{"content":"b","reasoning_content":"a"}}]}`},
		{"null content (tool calls) is left alone",
			`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"x"}]}}]}`,
			`{"choices":[{"message":{"content":null,"tool_calls":[{"id":"x"}]}}]}`},
		{"not JSON passes", `oops`, `oops`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, string(splitThinkBody([]byte(tt.in), core.ReasoningThinkOpen))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// thinkOpenUpstream serves out, cut into pieces, as the adapter's upstream writes an answer:
// whole or streamed, finishing with finish ("stop" or "length").
func thinkOpenUpstream(adapter core.AdapterKind, pieces []string, finish string) http.HandlerFunc {
	whole := strings.Join(pieces, "")
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		switch adapter {
		case core.AdapterOllama:
			if !body.Stream {
				_, _ = w.Write(mustJSON(map[string]any{"model": "m", "done": true, "done_reason": finish,
					"message": map[string]string{"role": "assistant", "content": whole}}))
				return
			}
			for _, p := range pieces {
				_, _ = w.Write(append(mustJSON(map[string]any{"model": "m", "done": false,
					"message": map[string]string{"role": "assistant", "content": p}}), '\n'))
			}
			_, _ = w.Write(append(mustJSON(map[string]any{"model": "m", "done": true, "done_reason": finish,
				"message": map[string]string{"role": "assistant", "content": ""}}), '\n'))
		case core.AdapterSAIF:
			if !body.Stream {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(mustJSON(map[string]any{"id": "s", "specialist": "webapp", "text": whole, "finish_reason": finish}))
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, p := range pieces {
				_, _ = fmt.Fprintf(w, "data: %s\n\n", mustJSON(map[string]any{"text": p, "specialist": "webapp"}))
			}
			_, _ = fmt.Fprintf(w, "data: %s\n\n", mustJSON(map[string]any{"done": true, "finish_reason": finish}))
		default:
			if !body.Stream {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(mustJSON(map[string]any{"id": "c", "object": "chat.completion", "model": "m",
					"choices": []any{map[string]any{"index": 0, "finish_reason": finish,
						"message": map[string]string{"role": "assistant", "content": whole}}}}))
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for _, p := range pieces {
				_, _ = fmt.Fprintf(w, "data: %s\n\n", openChunk(p))
			}
			_, _ = fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\ndata: [DONE]\n\n", finish)
		}
	}
}

// TestThinkOpenAdapters: every adapter that has think-tags has think-open, whole and streamed:
// an answer with no opening tag, one with it, and one cut by max_tokens inside the block
// (content "" and all reasoning, finish_reason "length", as think-tags answers an unclosed
// block).
func TestThinkOpenAdapters(t *testing.T) {
	cases := []struct {
		name   string
		pieces []string
		finish string
		want   thinkResult
	}{
		{"no opening tag", []string{"Compare", " 3 and 5.\n</th", "ink>\n", "\n5 is", " larger."}, "stop", thinkResult{"5 is larger.", "Compare 3 and 5."}},
		{"with an opening tag", []string{"<th", "ink>\nCompare", " 3 and 5.</think>", "\n\n5 is larger."}, "stop", thinkResult{"5 is larger.", "Compare 3 and 5."}},
		{"never closed", []string{"Compare", " 3 and", " 5, then <"}, "length", thinkResult{"", "Compare 3 and 5, then <"}},
	}
	targets := map[string]func(string) *core.Target{
		"openai": target, "ollama": ollamaTarget, "saif": saifTarget,
	}
	for _, name := range []string{"openai", "ollama", "saif"} {
		for _, tc := range cases {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", name, tc.name, stream), func(t *testing.T) {
					tg := targets[name]("")
					srv := serve(t, thinkOpenUpstream(tg.Adapter, tc.pieces, tc.finish))
					tg = targets[name](srv.URL)
					tg.Reasoning = core.ReasoningThinkOpen
					body := fmt.Sprintf(`{"messages":[{"role":"user","content":"3 or 5?"}],"stream":%v}`, stream)
					resp, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, body))
					if err != nil {
						t.Fatal(err)
					}
					var got thinkResult
					var finish string
					if stream {
						defer resp.Stream.Close()
						events, end := drain(resp.Stream)
						if end != "EOF" {
							t.Fatalf("stream ended with %s", end)
						}
						s := readChunks(t, events)
						got, finish = s.thinkResult, s.finish
					} else {
						var c struct {
							Choices []struct {
								Message struct {
									Content   *string `json:"content"`
									Reasoning string  `json:"reasoning_content"`
								} `json:"message"`
								FinishReason string `json:"finish_reason"`
							} `json:"choices"`
						}
						if err := json.Unmarshal(resp.Body, &c); err != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content == nil {
							t.Fatalf("answer %s: %v, want one choice with a content", resp.Body, err)
						}
						got = thinkResult{*c.Choices[0].Message.Content, c.Choices[0].Message.Reasoning}
						finish = c.Choices[0].FinishReason
					}
					if got != tc.want || finish != tc.finish {
						t.Errorf("got %+v, finish %q; want %+v, finish %q", got, finish, tc.want, tc.finish)
					}
				})
			}
		}
	}
}

// TestThinkOpenLogprobs: logprobs.content keeps the answer's entries alone, as with think-tags:
// the block's (its reasoning, the tags) are dropped, and a token that closes the block and
// starts the answer is kept whole; openai and ollama, whole and streamed.
func TestThinkOpenLogprobs(t *testing.T) {
	tests := []struct {
		name          string
		tokens        []string
		content, kept string // the answer, and what the kept entries' tokens spell
	}{
		{"reasoning then answer", []string{"hmm", "\n", "</think>", "\n\n", "Hi", "!"}, "Hi!", "Hi!"},
		{"with an opening tag", []string{"<think>", "\n", "hmm", "</think>", "\n\n", "Hi"}, "Hi", "Hi"},
		{"closing tag split across tokens", []string{"x", "</th", "ink>", "Hi"}, "Hi", "Hi"},
		{"the token that closes the block starts the answer", []string{"x", "</think>\n\nHi", "!"}, "Hi!", "</think>\n\nHi!"},
		{"never closed", []string{"hmm", " more"}, "", ""},
	}
	entry := func(tok string) map[string]any {
		b := make([]int, len(tok)) // as both servers write bytes
		for i := range len(tok) {
			b[i] = int(tok[i])
		}
		return map[string]any{"token": tok, "logprob": -0.5, "bytes": b, "top_logprobs": []any{}}
	}
	for _, tt := range tests {
		whole := strings.Join(tt.tokens, "")
		for _, adapter := range []core.AdapterKind{core.AdapterOpenAI, core.AdapterOllama} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%v/stream=%v", tt.name, adapter, stream), func(t *testing.T) {
					var entries []map[string]any
					for _, tok := range tt.tokens {
						entries = append(entries, entry(tok))
					}
					srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
						if adapter == core.AdapterOllama {
							if !stream {
								_, _ = w.Write(mustJSON(map[string]any{"model": "m", "done": true, "done_reason": "stop",
									"message": map[string]string{"role": "assistant", "content": whole}, "logprobs": entries}))
								return
							}
							for i, tok := range tt.tokens {
								_, _ = w.Write(append(mustJSON(map[string]any{"model": "m", "done": false,
									"message": map[string]string{"role": "assistant", "content": tok}, "logprobs": entries[i : i+1]}), '\n'))
							}
							_, _ = io.WriteString(w, `{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}`+"\n")
							return
						}
						if !stream {
							w.Header().Set("Content-Type", "application/json")
							_, _ = w.Write(mustJSON(map[string]any{"id": "c", "object": "chat.completion", "model": "m",
								"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": map[string]any{"content": entries},
									"message": map[string]string{"role": "assistant", "content": whole}}}}))
							return
						}
						w.Header().Set("Content-Type", "text/event-stream")
						for i, tok := range tt.tokens {
							_, _ = fmt.Fprintf(w, "data: %s\n\n", mustJSON(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": "m",
								"choices": []any{map[string]any{"index": 0, "delta": map[string]string{"content": tok},
									"logprobs": map[string]any{"content": entries[i : i+1]}, "finish_reason": nil}}}))
						}
						_, _ = io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
					})
					tg := target(srv.URL)
					if adapter == core.AdapterOllama {
						tg = ollamaTarget(srv.URL)
					}
					tg.Reasoning = core.ReasoningThinkOpen
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
					if spelt := spelling(got); got.Choices[0].Message.Content != tt.content || spelt != tt.kept {
						t.Errorf("content %q, the logprobs' tokens spell %q; want %q and %q", got.Choices[0].Message.Content, spelt, tt.content, tt.kept)
					}
				})
			}
		}
	}
}

// TestThinkOpenBesideUpstreamReasoning: a server that splits the reasoning out itself (vLLM run
// with --reasoning-parser, as reasoning_content or, newer, reasoning; Ollama's thinking) sends
// content that is the answer alone. think-open reads it as think-tags does, or a target
// configured for the template would have its whole answer taken for reasoning when the server
// gains a parser.
func TestThinkOpenBesideUpstreamReasoning(t *testing.T) {
	t.Run("openai whole", func(t *testing.T) {
		for _, field := range []string{"reasoning_content", "reasoning"} {
			in := `{"choices":[{"index":0,"message":{"role":"assistant","` + field + `":"hmm","content":"\n\n42"},"finish_reason":"stop"}]}`
			if got := string(splitThinkBody([]byte(in), core.ReasoningThinkOpen)); got != in {
				t.Errorf("%s: got %s, want it as it came", field, got)
			}
		}
	})
	t.Run("openai stream", func(t *testing.T) {
		for _, field := range []string{"reasoning_content", "reasoning"} {
			evs := []string{
				`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
				`{"id":"c","choices":[{"index":0,"delta":{"` + field + `":"hmm"},"finish_reason":null}]}`,
				openChunk("\n\n"), openChunk("Hi"),
				`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			}
			events, _ := drain(newThinkStream(&listStream{evs: evs}, core.ReasoningThinkOpen))
			// The whitespace waits for what follows, as think-tags holds it before a <think>.
			if got := readChunks(t, events); got.Content != "\n\nHi" || got.finish != "stop" {
				t.Errorf("%s: content %q, finish %q; want \"\\n\\nHi\" and stop", field, got.Content, got.finish)
			}
		}
	})
	line := func(field, tok string) string {
		return string(mustJSON(map[string]any{"model": "m", "done": false,
			"message":  map[string]string{"role": "assistant", field: tok},
			"logprobs": []logprobJSON{{Token: tok, Logprob: -0.5}}}))
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("ollama/stream=%v", stream), func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if !stream {
					_, _ = io.WriteString(w, `{"model":"m","message":{"role":"assistant","thinking":"Let me see","content":"Hi!"},"done":true,"done_reason":"stop",`+
						`"logprobs":[{"token":"Let me see","logprob":-1},{"token":"Hi","logprob":-1},{"token":"!","logprob":-1}]}`)
					return
				}
				_, _ = io.WriteString(w, strings.Join([]string{line("thinking", "Let me"), line("thinking", " see"),
					line("content", "Hi"), line("content", "!"),
					`{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}`}, "\n")+"\n")
			})
			tg := ollamaTarget(srv.URL)
			tg.Reasoning = core.ReasoningThinkOpen
			resp, err := newSet(t, tg).Chat(context.Background(), tg,
				chatRequestOf(t, fmt.Sprintf(`{"messages":[{"role":"user","content":"x"}],"logprobs":true,"stream":%v}`, stream)))
			if err != nil {
				t.Fatal(err)
			}
			var got openai.ChatCompletion
			var reasoning string
			if stream {
				defer resp.Stream.Close()
				events, _ := drain(resp.Stream)
				got = accumulate(t, events)
				reasoning = readChunks(t, events).Reasoning
			} else {
				if err := json.Unmarshal(resp.Body, &got); err != nil {
					t.Fatal(err)
				}
				reasoning = got.Choices[0].Message.JSON.ExtraFields["reasoning_content"].Raw()
				_ = json.Unmarshal([]byte(reasoning), &reasoning)
			}
			if c := got.Choices[0].Message.Content; c != "Hi!" || reasoning != "Let me see" {
				t.Errorf("content %q, reasoning %q; want \"Hi!\" and \"Let me see\"", c, reasoning)
			}
			if !stream {
				return // a whole answer keeps every entry Ollama sends: it does not say which were thinking
			}
			if spelt := spelling(got); spelt != "Hi!" {
				t.Errorf("the logprobs' tokens spell %q, want \"Hi!\"", spelt)
			}
		})
	}
}

// TestThinkOpenThinkingOff: an ollama target's request sent with think false (the client's
// reasoning_effort "none") has a model that writes no think block, and so no </think>: its answer
// is read as think-tags reads it, an answer, where think-open took it for reasoning whole. With
// thinking left on, the same output is reasoning, as the rule says (CONFIG.md).
func TestThinkOpenThinkingOff(t *testing.T) {
	pieces := []string{"5 is", " larger."}
	for _, stream := range []bool{false, true} {
		for _, tc := range []struct {
			effort string
			want   thinkResult
		}{
			{`"none"`, thinkResult{"5 is larger.", ""}},
			{`{"effort":"none"}`, thinkResult{"5 is larger.", ""}},
			{`"low"`, thinkResult{"", "5 is larger."}},
		} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.effort, stream), func(t *testing.T) {
				srv := serve(t, thinkOpenUpstream(core.AdapterOllama, pieces, "stop"))
				tg := ollamaTarget(srv.URL)
				tg.Reasoning = core.ReasoningThinkOpen
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"3 or 5?"}],"reasoning_effort":%s,"stream":%v}`, tc.effort, stream)
				resp, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, body))
				if err != nil {
					t.Fatal(err)
				}
				var got thinkResult
				if stream {
					defer resp.Stream.Close()
					events, end := drain(resp.Stream)
					if end != "EOF" {
						t.Fatalf("stream ended with %s", end)
					}
					got = readChunks(t, events).thinkResult
				} else {
					var c struct {
						Choices []struct {
							Message struct {
								Content   string `json:"content"`
								Reasoning string `json:"reasoning_content"`
							} `json:"message"`
						} `json:"choices"`
					}
					if err := json.Unmarshal(resp.Body, &c); err != nil || len(c.Choices) != 1 {
						t.Fatalf("answer %s: %v", resp.Body, err)
					}
					got = thinkResult{c.Choices[0].Message.Content, c.Choices[0].Message.Reasoning}
				}
				if got != tc.want {
					t.Errorf("got %+v, want %+v", got, tc.want)
				}
			})
		}
	}
}
