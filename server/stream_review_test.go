package server_test

// The streaming review's tests: what a client sees of a stream through each adapter, with
// upstreams that misbehave on the wire.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// rawStream posts body to the chat endpoint and returns the status, content type and the SSE data
// payloads of the answer, in order.
func rawStream(t *testing.T, g *gateway, body string) (int, string, []string) {
	t.Helper()
	resp, err := g.ts.Client().Post(g.ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	var ev []string
	for _, l := range strings.Split(string(raw), "\n") {
		if p, ok := strings.CutPrefix(l, "data: "); ok {
			ev = append(ev, p)
		}
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), ev
}

// checkChunks checks the invariants every stream a client gets must keep: [DONE] exactly once
// and last; the same id, created and model on every chunk; finish_reason on the last choice
// chunk only; a usage chunk (no choices) exactly when wantUsage, after the finishing chunk.
func checkChunks(t *testing.T, ev []string, wantUsage bool) {
	t.Helper()
	if len(ev) == 0 || ev[len(ev)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", ev)
	}
	var id, model string
	var created float64
	usage, finishes, lastChoice := 0, 0, -1
	for i, e := range ev[:len(ev)-1] {
		if e == "[DONE]" {
			t.Fatalf("[DONE] at %d of %d: %q", i, len(ev), ev)
		}
		var c struct {
			ID      string  `json:"id"`
			Object  string  `json:"object"`
			Created float64 `json:"created"`
			Model   string  `json:"model"`
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("event %d is not JSON: %v: %s", i, err, e)
		}
		if i == 0 {
			id, created, model = c.ID, c.Created, c.Model
		} else if c.ID != id || c.Created != created || c.Model != model {
			t.Errorf("event %d: id/created/model %q/%v/%q, first had %q/%v/%q", i, c.ID, c.Created, c.Model, id, created, model)
		}
		if len(c.Choices) == 0 {
			usage++
			if lastChoice < 0 || finishes == 0 {
				t.Errorf("usage chunk %d before the finishing chunk: %q", i, ev)
			}
			continue
		}
		lastChoice = i
		if c.Choices[0].FinishReason != nil {
			finishes++
		}
	}
	if finishes != 1 {
		t.Errorf("%d chunks carry a finish_reason, want 1: %q", finishes, ev)
	}
	if lastChoice >= 0 && !strings.Contains(ev[lastChoice], `"finish_reason":"`) {
		t.Errorf("the last choice chunk has no finish_reason: %s", ev[lastChoice])
	}
	if want := map[bool]int{true: 1, false: 0}[wantUsage]; usage != want {
		t.Errorf("%d usage chunks, want %d: %q", usage, want, ev)
	}
}

func ollamaGateway(t *testing.T, h func(w http.ResponseWriter, r *http.Request, body map[string]any), extra string) *gateway {
	t.Helper()
	up := newAdUpstream(t, h)
	return newGateway(t, fmt.Sprintf(`
[targets.o]
adapter = "ollama"
url     = %q
model   = "m:7b"
%s

[routes.o]
targets = ["o"]
`, up.srv.URL, extra), nil)
}

func saifGateway(t *testing.T, h func(w http.ResponseWriter, r *http.Request, body map[string]any)) *gateway {
	t.Helper()
	up := newAdUpstream(t, h)
	return newGateway(t, fmt.Sprintf(`
[targets.s]
adapter = "saif"
url     = %q
model   = "saif"
tools = false
vision = false

[routes.s]
targets = ["s"]
`, up.srv.URL), nil)
}

func usageBody(model string, usage bool) string {
	so := ""
	if usage {
		so = `,"stream_options":{"include_usage":true}`
	}
	return fmt.Sprintf(`{"model":%q,"stream":true%s,"messages":[{"role":"user","content":"hi"}]}`, model, so)
}

func TestReviewStreamInvariantsPerAdapter(t *testing.T) {
	ollama := func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, l := range []string{
			`{"model":"m:7b","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":"Hel"},"done":false}`,
			`{"model":"m:7b","created_at":"2026-11-30T12:00:01Z","message":{"role":"assistant","content":"lo"},"done":false}`,
			`{"model":"m:7b","created_at":"2026-11-30T12:00:02Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":2}`,
		} {
			_, _ = io.WriteString(w, l+"\n")
			w.(http.Flusher).Flush()
		}
	}
	saif := func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{`{"text":"Hel","specialist":"webapp"}`, `{"text":"lo","specialist":"webapp"}`,
			`{"done":true,"finish_reason":"stop","usage":{"prompt_tokens":3,"completion_tokens":2}}`} {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
	}
	for _, usage := range []bool{false, true} {
		t.Run(fmt.Sprintf("ollama/usage=%v", usage), func(t *testing.T) {
			g := ollamaGateway(t, ollama, "")
			st, _, ev := rawStream(t, g, usageBody("o", usage))
			if st != 200 {
				t.Fatalf("status %d", st)
			}
			checkChunks(t, ev, usage)
		})
		t.Run(fmt.Sprintf("ollama-think/usage=%v", usage), func(t *testing.T) {
			g := ollamaGateway(t, ollama, `reasoning = "think-tags"`)
			_, _, ev := rawStream(t, g, usageBody("o", usage))
			checkChunks(t, ev, usage)
		})
		t.Run(fmt.Sprintf("saif/usage=%v", usage), func(t *testing.T) {
			g := saifGateway(t, saif)
			_, _, ev := rawStream(t, g, usageBody("s", usage))
			checkChunks(t, ev, usage)
		})
	}
}

func chunk(content string, finish string) string {
	f := "null"
	if finish != "" {
		f = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":%q},"finish_reason":%s}]}`, content, f)
}

// openaiGateway is a gateway with one openai target "a" behind h, and a second "b" that serves,
// on a route "a" that tries a then b.
func openaiGateway(t *testing.T, h http.HandlerFunc) (*gateway, *fake) {
	t.Helper()
	a, b := newFake(t, "a"), newFake(t, "b")
	a.set(h)
	return newGateway(t, target("a", a.url(), "private")+target("b", b.url(), "private")+`
[routes.a]
targets = ["a", "b"]
`, nil), b
}

func TestReviewOpenAIWire(t *testing.T) {
	t.Parallel()
	big4k, big1m := strings.Repeat("x", 5<<10), strings.Repeat("y", 1<<20+17)
	tests := []struct {
		name string
		wire string // what the upstream sends, written in pieces of `piece` bytes
		// want: the data payloads the client gets ("ERR" for an error event)
		want []string
	}{
		{"crlf comments names", ": hello\r\nevent: message\r\ndata: " + chunk("a", "") + "\r\n\r\n:keepalive\r\n\r\nid: 7\r\ndata: " + chunk("b", "stop") + "\r\n\r\ndata: [DONE]\r\n\r\n",
			[]string{chunk("a", ""), chunk("b", "stop"), "[DONE]"}},
		{"multi-line data", "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\ndata: \"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
			[]string{`{"id":"c1","object":"chat.completion.chunk", "choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}`, "[DONE]"}},
		{"over 4 KiB", "data: " + chunk(big4k, "") + "\n\ndata: " + chunk("", "stop") + "\n\ndata: [DONE]\n\n",
			[]string{chunk(big4k, ""), chunk("", "stop"), "[DONE]"}},
		{"over 1 MiB", "data: " + chunk(big1m, "") + "\n\ndata: " + chunk("", "stop") + "\n\ndata: [DONE]\n\n",
			[]string{chunk(big1m, ""), chunk("", "stop"), "[DONE]"}},
		{"no [DONE] after finish", "data: " + chunk("a", "") + "\n\ndata: " + chunk("", "stop") + "\n\n",
			[]string{chunk("a", ""), chunk("", "stop"), "[DONE]"}},
		{"no [DONE] no finish", "data: " + chunk("a", "") + "\n\n",
			[]string{chunk("a", ""), "ERR"}},
		{"[DONE] then more", "data: " + chunk("a", "stop") + "\n\ndata: [DONE]\n\ndata: " + chunk("late", "") + "\n\n",
			[]string{chunk("a", "stop"), "[DONE]"}},
		{"error object mid-stream", "data: " + chunk("a", "") + "\n\ndata: {\"error\":{\"message\":\"oom\",\"type\":\"server_error\"}}\n\n",
			[]string{chunk("a", ""), "ERR"}},
		{"error event name mid-stream", "data: " + chunk("a", "") + "\n\nevent: error\ndata: boom\n\n",
			[]string{chunk("a", ""), "ERR"}},
	}
	for _, tc := range tests {
		for _, piece := range []int{0, 1, 7} {
			if piece == 1 && len(tc.wire) > 64<<10 {
				continue
			}
			t.Run(fmt.Sprintf("%s/piece=%d", tc.name, piece), func(t *testing.T) {
				g, _ := openaiGateway(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(200)
					w.(http.Flusher).Flush()
					if piece == 0 {
						_, _ = io.WriteString(w, tc.wire)
						return
					}
					for s := tc.wire; s != ""; {
						n := min(piece, len(s))
						_, _ = io.WriteString(w, s[:n])
						w.(http.Flusher).Flush()
						s = s[n:]
					}
				})
				st, _, ev := rawStream(t, g, streamBody("a"))
				if st != 200 {
					t.Fatalf("status %d", st)
				}
				for i, e := range ev {
					if strings.HasPrefix(e, `{"error":`) {
						ev[i] = "ERR"
					}
				}
				if len(ev) != len(tc.want) {
					t.Fatalf("got %d events, want %d: %.300q", len(ev), len(tc.want), ev)
				}
				for i := range ev {
					if ev[i] != tc.want[i] {
						t.Errorf("event %d: %.200q, want %.200q", i, ev[i], tc.want[i])
					}
				}
			})
		}
	}
}

// A stream that fails before its first event falls through; so does a 200 whose first event is
// an error, a JSON answer to a stream request, and a stream answer to a whole request.
func TestReviewFallThroughBeforeFirstEvent(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		h      http.HandlerFunc
	}{
		{"json to a stream", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[]}`)
		}},
		{"json error as 200 event stream", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"error":{"message":"no","type":"x"}}`+"\n\n")
		}},
		{"[DONE] at once", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
		}},
		{"empty stream", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
		}},
		{"event stream to a whole request", false, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: "+chunk("a", "stop")+"\n\ndata: [DONE]\n\n")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, b := openaiGateway(t, tc.h)
			body := streamBody("a")
			if !tc.stream {
				body = `{"model":"a","messages":[{"role":"user","content":"hi"}]}`
			}
			resp, err := g.ts.Client().Post(g.ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if b.hits.Load() != 1 || resp.Header.Get("x-hayula-chain") != "a→b (served by b)" {
				t.Errorf("chain %q, b hits %d; answer %d %s", resp.Header.Get("x-hayula-chain"), b.hits.Load(), resp.StatusCode, raw)
			}
		})
	}
}

// A client that leaves mid-stream: the upstream's connection is closed (its request's context
// ends), and the target's in-flight count goes back to zero, whether the upstream was sending or
// silent when the client left.
func TestReviewClientLeavesMidStream(t *testing.T) {
	for _, silent := range []bool{false, true} {
		t.Run(fmt.Sprintf("silent=%v", silent), func(t *testing.T) {
			upDone := make(chan struct{})
			g, _ := openaiGateway(t, func(w http.ResponseWriter, r *http.Request) {
				defer close(upDone)
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: "+chunk("first", "")+"\n\n")
				w.(http.Flusher).Flush()
				if silent {
					<-r.Context().Done()
					return
				}
				for i := 0; ; i++ {
					if _, err := io.WriteString(w, "data: "+chunk(strings.Repeat("z", 512), "")+"\n\n"); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return
					case <-time.After(time.Millisecond):
					}
				}
			})
			g.openStream(t, streamBody("a"))()
			select {
			case <-upDone:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream's request did not end after the client left")
			}
			tg := mustTarget(t, g, "a")
			settles(func() bool { return tg.Stats.InFlight() == 0 })
			if n := tg.Stats.InFlight(); n != 0 {
				t.Errorf("in flight %d after the client left", n)
			}
		})
	}
}

// ndjson answers /api/chat with lines, flushed one by one.
func ndjson(lines ...string) func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, l := range lines {
			_, _ = io.WriteString(w, l+"\n")
			w.(http.Flusher).Flush()
		}
	}
}

// deltas gathers a stream's reasoning, content and tool calls as a client's accumulator would.
type gathered struct {
	content, reasoning string
	calls              map[int]*[3]string // index → id, name, arguments
	ids                map[int]int        // index → fragments carrying an id
	errored            bool
}

func gather(t *testing.T, ev []string) gathered {
	t.Helper()
	g := gathered{calls: map[int]*[3]string{}, ids: map[int]int{}}
	for _, e := range ev {
		if e == "[DONE]" {
			continue
		}
		if strings.HasPrefix(e, `{"error":`) {
			g.errored = true
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content          *string `json:"content"`
					ReasoningContent string  `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    *int   `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("not JSON: %s", e)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				g.content += *ch.Delta.Content
			}
			g.reasoning += ch.Delta.ReasoningContent
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil {
					t.Fatalf("tool call delta without index: %s", e)
				}
				c := g.calls[*tc.Index]
				if c == nil {
					c = new([3]string)
					g.calls[*tc.Index] = c
				}
				if tc.ID != "" {
					c[0] = tc.ID
					g.ids[*tc.Index]++
				}
				c[1] += tc.Function.Name
				c[2] += tc.Function.Arguments
			}
		}
	}
	return g
}

func TestReviewOllamaStreams(t *testing.T) {
	line := func(content, thinking string) string {
		b, _ := json.Marshal(map[string]any{"model": "m:7b", "created_at": "2026-11-30T12:00:00Z",
			"message": map[string]any{"role": "assistant", "content": content, "thinking": thinking}, "done": false})
		return string(b)
	}
	done := `{"model":"m:7b","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":1}`
	t.Run("thinking field", func(t *testing.T) {
		g := ollamaGateway(t, ndjson(line("", "Let me"), line("", " see."), line("Yes.", ""), done), "")
		_, _, ev := rawStream(t, g, streamBody("o"))
		checkChunks(t, ev, false)
		if got := gather(t, ev); got.reasoning != "Let me see." || got.content != "Yes." {
			t.Errorf("reasoning %q content %q", got.reasoning, got.content)
		}
	})
	t.Run("think tags a byte at a time", func(t *testing.T) {
		text := "  <think>\nhmm, <b> </thin k?\n</think>\n\nThe answer: <think>x</think>"
		var lines []string
		for i := 0; i < len(text); i++ {
			lines = append(lines, line(text[i:i+1], ""))
		}
		g := ollamaGateway(t, ndjson(append(lines, done)...), `reasoning = "think-tags"`)
		_, _, ev := rawStream(t, g, usageBody("o", true))
		checkChunks(t, ev, true)
		if got := gather(t, ev); got.reasoning != "hmm, <b> </thin k?" || got.content != "The answer: <think>x</think>" {
			t.Errorf("reasoning %q content %q", got.reasoning, got.content)
		}
	})
	t.Run("unclosed think", func(t *testing.T) {
		g := ollamaGateway(t, ndjson(line("<think>a", ""), line("b </thi", ""), done), `reasoning = "think-tags"`)
		_, _, ev := rawStream(t, g, streamBody("o"))
		checkChunks(t, ev, false)
		if got := gather(t, ev); got.reasoning != "ab </thi" || got.content != "" {
			t.Errorf("reasoning %q content %q", got.reasoning, got.content)
		}
	})
	t.Run("tool calls", func(t *testing.T) {
		call := `{"model":"m:7b","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}},{"function":{"name":"g","arguments":{}}}]},"done":false}`
		call2 := `{"model":"m:7b","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"h","arguments":{"b":"x"}}}]},"done":false}`
		g := ollamaGateway(t, ndjson(call, call2, done), "")
		_, _, ev := rawStream(t, g, streamBody("o"))
		checkChunks(t, ev, false)
		got := gather(t, ev)
		if len(got.calls) != 3 || got.calls[0][1] != "f" || got.calls[0][2] != `{"a":1}` || got.calls[1][1] != "g" ||
			got.calls[2][1] != "h" || got.calls[2][2] != `{"b":"x"}` {
			t.Errorf("calls %v", got.calls)
		}
		for i, n := range got.ids {
			if n != 1 || !strings.HasPrefix(got.calls[i][0], "call_") {
				t.Errorf("call %d: %d ids, %q", i, n, got.calls[i][0])
			}
		}
		if !strings.Contains(ev[len(ev)-2], `"finish_reason":"tool_calls"`) {
			t.Errorf("finishing chunk %s", ev[len(ev)-2])
		}
	})
	for name, tail := range map[string][]string{
		"error line": {`{"error":"model runner crashed"}`},
		"ends early": nil,
		"cut line":   {`{"model":"m:7b","message":{"content":"x"`},
	} {
		t.Run("mid-stream "+name, func(t *testing.T) {
			g := ollamaGateway(t, ndjson(append([]string{line("partial", "")}, tail...)...), "")
			_, _, ev := rawStream(t, g, streamBody("o"))
			if len(ev) < 2 || !strings.HasPrefix(ev[len(ev)-1], `{"error":`) || strings.Contains(strings.Join(ev, "\n"), "[DONE]") {
				t.Errorf("events %q", ev)
			}
		})
	}
}

func TestReviewSAIFStreamFailures(t *testing.T) {
	for name, tail := range map[string]string{
		"error data":  `data: {"error":"specialist crashed"}` + "\n\n",
		"error event": "event: error\ndata: {\"message\":\"x\"}\n\n",
		"ends early":  "",
		"cut":         `data: {"text":"y"`,
	} {
		t.Run(name, func(t *testing.T) {
			g := saifGateway(t, func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, `data: {"text":"partial","specialist":"webapp"}`+"\n\n")
				w.(http.Flusher).Flush()
				_, _ = io.WriteString(w, tail)
			})
			_, _, ev := rawStream(t, g, streamBody("s"))
			if len(ev) < 2 || !strings.HasPrefix(ev[len(ev)-1], `{"error":`) || strings.Contains(strings.Join(ev, "\n"), "[DONE]") {
				t.Errorf("events %q", ev)
			}
		})
	}
}

func TestReviewOpenAIThinkTagsEveryByte(t *testing.T) {
	text := "<think>\nstep </think>\n\nAnswer </think>"
	for _, usage := range []bool{false, true} {
		t.Run(fmt.Sprintf("usage=%v", usage), func(t *testing.T) {
			var wire strings.Builder
			u := ""
			if usage {
				u = `,"usage":null`
			}
			fmt.Fprintf(&wire, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]%s}\n\n", u)
			for i := 0; i < len(text); i++ {
				fmt.Fprintf(&wire, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]%s}\n\n", text[i:i+1], u)
			}
			fmt.Fprintf(&wire, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]%s}\n\n", u)
			if usage {
				wire.WriteString("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}\n\n")
			}
			wire.WriteString("data: [DONE]\n\n")
			a := newFake(t, "a")
			a.set(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, wire.String())
			})
			g := newGateway(t, target("a", a.url(), "private", `reasoning = "think-tags"`)+"[routes.a]\ntargets = [\"a\"]\n", nil)
			_, _, ev := rawStream(t, g, usageBody("a", usage))
			checkChunks(t, ev, usage)
			if got := gather(t, ev); got.reasoning != "step" || got.content != "Answer </think>" {
				t.Errorf("reasoning %q content %q", got.reasoning, got.content)
			}
		})
	}
}

// With think-tags, a chunk the rewrite empties (a piece of a tag, whitespace held before one)
// is skipped; the chunk before it must still reach the client without waiting for the
// upstream's next event (TestStreamFlushesEachEvent's promise).
func TestReviewThinkTagsEventNotHeldBehindEmptiedChunk(t *testing.T) {
	ev := func(content string) string {
		return fmt.Sprintf("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", content)
	}
	got := make(chan struct{})
	a := newFake(t, "a")
	a.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		// One write: the reasoning "bc" and, behind it, whitespace the splitter holds.
		fmt.Fprint(w, ev("<think>a")+ev("bc")+ev(" "))
		w.(http.Flusher).Flush()
		// The rest waits for the client to have "bc": a gateway that holds it until the next
		// event gets that only when the test gives up.
		select {
		case <-got:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, ev("d</think>x")+"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	})
	g := newGateway(t, target("a", a.url(), "private", `reasoning = "think-tags"`)+"[routes.a]\ntargets = [\"a\"]\n", nil)
	br, first := openStream(t, g, "a")
	if !strings.Contains(first, `"reasoning_content":"a"`) {
		t.Fatalf("first event %q", first)
	}
	second := make(chan string, 1)
	go func() {
		for {
			line, err := br.ReadString('\n')
			if err != nil || strings.HasPrefix(line, "data: ") {
				second <- line
				return
			}
		}
	}()
	// The upstream sends nothing more until got is closed, so "bc" either comes now or only
	// after it: the bound is a hang's, not a speed (it was 3 s, which a loaded machine can miss).
	var line string
	select {
	case line = <-second:
	case <-time.After(time.Minute):
	}
	close(got)
	if line == "" {
		line = <-second
		t.Errorf("the reasoning chunk %q reached the client only after the upstream's next event", line)
	} else if !strings.Contains(line, `"reasoning_content":"bc"`) {
		t.Errorf("second event %q", line)
	}
	_, _ = io.ReadAll(br)
}

// The official SDK reads the error event that ends a broken stream as an error, after the
// content that came before it, and a whole stream as a success with its usage.
func TestReviewSDKSeesStreamError(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) {
			g, _ := openaiGateway(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: "+chunk("partial", "")+"\n\n")
				if broken {
					_, _ = io.WriteString(w, `data: {"error":{"message":"CUDA out of memory","type":"server_error"}}`+"\n\n")
					return
				}
				_, _ = io.WriteString(w, "data: "+chunk("", "stop")+"\n\n"+
					`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`+"\n\ndata: [DONE]\n\n")
			})
			c := openai.NewClient(option.WithBaseURL(g.ts.URL+"/v1/"), option.WithAPIKey("unused"),
				option.WithHTTPClient(g.ts.Client()), option.WithMaxRetries(0))
			s := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "a",
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			_ = s.Close()
			if len(acc.Choices) == 0 || acc.Choices[0].Message.Content != "partial" {
				t.Fatalf("accumulated %+v", acc.Choices)
			}
			if err := s.Err(); broken != (err != nil) || broken && !strings.Contains(err.Error(), "CUDA out of memory") {
				t.Errorf("broken=%v: Err() = %v", broken, err)
			}
			if !broken && (acc.Usage.TotalTokens != 2 || acc.Choices[0].FinishReason != "stop") {
				t.Errorf("usage %+v finish %q", acc.Usage, acc.Choices[0].FinishReason)
			}
		})
	}
}

func TestReviewSAIFCompletionsStream(t *testing.T) {
	for _, usage := range []bool{false, true} {
		t.Run(fmt.Sprintf("usage=%v", usage), func(t *testing.T) {
			g := saifGateway(t, func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
				w.Header().Set("Content-Type", "text/event-stream")
				for _, e := range []string{`{"text":"a","specialist":"webapp"}`, `{"text":"b"}`,
					`{"done":true,"finish_reason":"length","usage":{"prompt_tokens":3,"completion_tokens":2}}`} {
					fmt.Fprintf(w, "data: %s\n\n", e)
				}
			})
			so := ""
			if usage {
				so = `,"stream_options":{"include_usage":true}`
			}
			resp, err := g.ts.Client().Post(g.ts.URL+"/v1/completions", "application/json",
				strings.NewReader(`{"model":"s","stream":true,"prompt":"x"`+so+`}`))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var ev []string
			for _, l := range strings.Split(string(raw), "\n") {
				if p, ok := strings.CutPrefix(l, "data: "); ok {
					ev = append(ev, p)
				}
			}
			checkChunks(t, ev, usage)
		})
	}
}

// Ollama lines longer than the reader's buffer, CRLF endings and blank lines, written in pieces.
func TestReviewOllamaLongLines(t *testing.T) {
	t.Parallel()
	for _, size := range []int{5 << 10, 1<<20 + 3} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			content := strings.Repeat("q", size)
			b, _ := json.Marshal(map[string]any{"model": "m:7b", "message": map[string]any{"role": "assistant", "content": content}, "done": false})
			wire := string(b) + "\r\n\r\n" + `{"model":"m:7b","message":{"role":"assistant","content":"!"},"done":true,"done_reason":"length"}` + "\r\n"
			g := ollamaGateway(t, func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
				w.Header().Set("Content-Type", "application/x-ndjson")
				for s := wire; s != ""; {
					n := min(1000, len(s))
					_, _ = io.WriteString(w, s[:n])
					w.(http.Flusher).Flush()
					s = s[n:]
				}
			}, "")
			_, _, ev := rawStream(t, g, streamBody("o"))
			checkChunks(t, ev, false)
			if got := gather(t, ev); got.content != content+"!" {
				t.Errorf("content of %d bytes, want %d", len(got.content), len(content)+1)
			}
			if !strings.Contains(ev[len(ev)-2], `"finish_reason":"length"`) {
				t.Errorf("finishing chunk %.200s", ev[len(ev)-2])
			}
		})
	}
}

// A stream that broke off (an error event mid-stream, the upstream keeping its connection open
// after it) has its upstream connection closed, not drained for reuse or left open, and the
// next request is served.
func TestReviewBrokenStreamClosesUpstream(t *testing.T) {
	upDone := make(chan struct{}, 2)
	g, _ := openaiGateway(t, func(w http.ResponseWriter, r *http.Request) {
		defer func() { upDone <- struct{}{} }()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+chunk("a", "")+"\n\ndata: {\"error\":{\"message\":\"oom\"}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	for i := 0; i < 2; i++ {
		_, _, ev := rawStream(t, g, streamBody("a"))
		if len(ev) != 2 || !strings.HasPrefix(ev[1], `{"error":`) {
			t.Fatalf("events %q", ev)
		}
		select {
		case <-upDone:
		case <-time.After(5 * time.Second):
			t.Fatal("the upstream's connection was left open after the stream broke off")
		}
	}
	tg := mustTarget(t, g, "a")
	settles(func() bool { return tg.Stats.InFlight() == 0 })
	if n := tg.Stats.InFlight(); n != 0 {
		t.Errorf("in flight %d", n)
	}
}
