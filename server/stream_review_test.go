package server_test

// The streaming review's tests: what a client sees of a stream through each adapter, with
// upstreams that misbehave on the wire.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
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
