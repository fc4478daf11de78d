package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The first chunk vLLM, llama-server and SGLang send before any token: the role, and nothing of
// the answer (vLLM's content "", llama-server's null, SGLang's nulls beside them).
var roleChunks = map[string]string{
	"vllm": `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",` +
		`"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	"llama-server": `{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],` +
		`"created":1,"id":"chatcmpl-1","model":"m","system_fingerprint":"b6097-9515c613","object":"chat.completion.chunk"}`,
	"sglang": `{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,` +
		`"delta":{"role":"assistant","content":"","reasoning_content":null,"tool_calls":null},"logprobs":null,` +
		`"finish_reason":null,"matched_stop":null}],"usage":null}`,
}

// leadThen answers a stream whose events are lead, flushed, and then fails as fail says: the
// body ends without [DONE] ("broken"), an error event ("error event"), the engine's abort with
// nothing in it ("abort"), or nothing more until the gateway goes ("stall", for idle_timeout).
func leadThen(fail string, lead ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range lead {
			fmt.Fprintf(w, "data: %s\n\n", ev)
		}
		w.(http.Flusher).Flush()
		switch fail {
		case "error event":
			fmt.Fprint(w, `data: {"error":{"message":"engine died","type":"server_error"}}`+"\n\n")
		case "abort":
			fmt.Fprint(w, "data: "+quirkChunk(`{}`, `"abort"`)+"\n\ndata: [DONE]\n\n")
		case "stall":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
	}
}

// holdGateway is route ab over a (h, a short idle_timeout unless extra sets one) then b (okHandler), and route a over a
// alone, logging to logs.
func holdGateway(t *testing.T, logs *syncBuffer, h http.HandlerFunc, extra ...string) (*gateway, *fake) {
	t.Helper()
	a, b := newFake(t, "a"), newFake(t, "b")
	a.set(h)
	if !strings.Contains(strings.Join(extra, "\n"), "idle_timeout") {
		// Short against a stall that lasts until the test ends; nothing waits on it to pass.
		extra = append(extra, `idle_timeout = "100ms"`)
	}
	return newGateway(t, target("a", a.url(), "private", extra...)+
		target("b", b.url(), "private")+"[routes.ab]\ntargets = [\"a\", \"b\"]\n[routes.a]\ntargets = [\"a\"]\n",
		nil, withLog(logs)), b
}

// TestHeldLeadFallsThrough: a stream whose first chunk carries only the role (vLLM's,
// llama-server's, SGLang's, sent before the first token) and that then fails (the upstream
// breaks off, sends an error event, aborts, or falls silent past idle_timeout) has sent the client
// nothing of an answer: the chunk is held, and the failure falls through as one before the first
// event does. The official SDK reads b's whole stream; x-hayula-chain, the request line and the
// attempt metrics name both targets, a's attempt failed and was logged, and no stream of a's
// counts as begun.
func TestHeldLeadFallsThrough(t *testing.T) {
	fails := map[string]string{"broken": "server_error", "error event": "server_error", "abort": "server_error", "stall": "timeout"}
	for server, lead := range roleChunks {
		for fail, class := range fails {
			t.Run(server+"/"+fail, func(t *testing.T) {
				var logs syncBuffer
				g, b := holdGateway(t, &logs, leadThen(fail, lead))
				var hr *http.Response
				acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "ab",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, option.WithResponseInto(&hr))
				if err != nil || b.hits.Load() != 1 || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "hello from b" {
					t.Fatalf("err %v, b hits %d, choices %d: want b's whole stream", err, b.hits.Load(), len(acc.Choices))
				}
				if chain := hr.Header.Get("X-Hayula-Chain"); chain != "a→b (served by b)" {
					t.Errorf("x-hayula-chain %q", chain)
				}
				if line := pathLine(t, &logs, "/v1/chat/completions"); !strings.Contains(line, "chain=a→b") || strings.Contains(line, "stream=") {
					t.Errorf("request line %q: want chain a→b and a whole stream", line)
				}
				if lines := logLines(&logs, 1, func(l string) bool {
					return strings.Contains(l, `msg="attempt failed"`) && strings.Contains(l, "target=a ") && strings.Contains(l, "class="+class)
				}); len(lines) != 1 {
					t.Errorf("no attempt failed line for a (class %s) in:\n%s", class, logs.String())
				}
				_, lines := scrape(t, g)
				for _, want := range []string{
					`hayula_upstream_attempts_total{target="a",result="` + class + `"} 1`,
					`hayula_upstream_attempts_total{target="b",result="ok"} 1`,
				} {
					if !lines[want] {
						t.Errorf("no %s", want)
					}
				}
				settleStreamEnds(t, g, []string{`hayula_stream_ends_total{endpoint="chat",route="ab",target="b",end="done"} 1`})
			})
		}
	}
}

// sseLines reads a stream's data payloads from r one at a time.
type sseLines struct{ sc *bufio.Scanner }

func (s sseLines) next(t *testing.T) string {
	t.Helper()
	for s.sc.Scan() {
		if p, ok := strings.CutPrefix(s.sc.Text(), "data: "); ok {
			return p
		}
	}
	t.Fatalf("the stream ended: %v", s.sc.Err())
	return ""
}

// openHeld posts a stream for route ab, whose upstream a sends events, flushed, and then waits
// for the test to release it before it finishes; the client must read what the gateway sends
// before that. A gateway that held what it has, waiting for a's next event, would never send it:
// the request's context ends the test's wait instead of go test's timeout.
func openHeld(t *testing.T, events ...string) (sseLines, chan<- struct{}) {
	t.Helper()
	release := make(chan struct{})
	var logs syncBuffer
	g, _ := holdGateway(t, &logs, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range events {
			fmt.Fprintf(w, "data: %s\n\n", ev)
		}
		w.(http.Flusher).Flush()
		if !waitRelease(r, release) {
			return
		}
		fmt.Fprint(w, "data: "+quirkChunk(`{}`, `"stop"`)+"\n\ndata: [DONE]\n\n")
	}, `idle_timeout = "0s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.ts.URL+"/v1/chat/completions", strings.NewReader(streamBody("ab")))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := g.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.Header.Get("X-Hayula-Chain") != "a" {
		t.Fatalf("x-hayula-chain %q", resp.Header.Get("X-Hayula-Chain"))
	}
	return sseLines{bufio.NewScanner(resp.Body)}, release
}

// TestHeldLeadGoesWithFirstContent: the held chunks go out, unchanged and in order, with the
// first event that has something in it, at once: not after a's next event. A stream whose first
// event has content commits on it, as before; so does one of more leading chunks with nothing in
// them than the gateway holds (64 here), without waiting for content: the client reads the
// first before a sends anything more.
func TestHeldLeadGoesWithFirstContent(t *testing.T) {
	many := make([]string, 64)
	for i := range many {
		many[i] = roleChunks["vllm"]
	}
	content := quirkChunk(`{"content":"Hi"}`, "null")
	tests := map[string]struct {
		sent []string
		read int // the events the client reads before a goes on
	}{
		"vllm lead":     {[]string{roleChunks["vllm"], content}, 2},
		"two leads":     {[]string{roleChunks["llama-server"], roleChunks["sglang"], content}, 3},
		"content first": {[]string{quirkChunk(`{"role":"assistant","content":"Hi"}`, "null")}, 1},
		"reasoning first": {[]string{`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",` +
			`"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":"Hm"},"finish_reason":null}]}`}, 1},
		"past the bound": {many, 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			lines, release := openHeld(t, tc.sent...)
			for i, want := range tc.sent {
				if i == tc.read {
					close(release)
				}
				if got := lines.next(t); got != want {
					t.Fatalf("event %d: got %s, want %s", i, got, want)
				}
			}
			if tc.read == len(tc.sent) {
				close(release)
			}
			if got := lines.next(t); got != quirkChunk(`{}`, `"stop"`) {
				t.Fatalf("last chunk %s", got)
			}
			if got := lines.next(t); got != "[DONE]" {
				t.Fatalf("end %s", got)
			}
		})
	}
}

// TestHeldLeadTranslated: the Responses bridge translates the chat stream the relay writes, so a
// held lead that fails never reached it: the Responses client reads b's answer, completed. The
// adapters' own first chunk with the role alone is held as an upstream's is: an openai target
// with reasoning = "think-tags", whose splitter turns a first chunk of "<think>" into one, and an
// ollama target whose first line has no text (its chunker's first chunk carries the role and
// content ""), both then breaking off.
func TestHeldLeadTranslated(t *testing.T) {
	t.Run("responses", func(t *testing.T) {
		var logs syncBuffer
		g, b := holdGateway(t, &logs, leadThen("broken", roleChunks["vllm"]))
		c := sdkClient(g, "unused")
		var hr *http.Response
		rs := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
			Model: "ab", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}, option.WithResponseInto(&hr))
		var text string
		var last responses.Response
		for rs.Next() {
			ev := rs.Current()
			if ev.Type == "response.output_text.delta" {
				text += ev.Delta
			}
			if ev.Type == "response.completed" {
				last = ev.Response
			}
		}
		if err := rs.Err(); err != nil || b.hits.Load() != 1 || text != "hello from b" || last.Status != "completed" {
			t.Fatalf("err %v, b hits %d, text %q, status %q: want b's answer, completed", err, b.hits.Load(), text, last.Status)
		}
		if chain := hr.Header.Get("X-Hayula-Chain"); chain != "a→b (served by b)" {
			t.Errorf("x-hayula-chain %q", chain)
		}
	})
	t.Run("think-tags", func(t *testing.T) {
		var logs syncBuffer
		think := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",` +
			`"choices":[{"index":0,"delta":{"role":"assistant","content":"<think>"},"finish_reason":null}]}`
		g, b := holdGateway(t, &logs, leadThen("broken", think), `reasoning = "think-tags"`)
		acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "ab",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		if err != nil || b.hits.Load() != 1 || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "hello from b" {
			t.Fatalf("err %v, b hits %d, choices %d: want b's whole stream", err, b.hits.Load(), len(acc.Choices))
		}
	})
	t.Run("ollama", func(t *testing.T) {
		oll, b := newFake(t, "oll"), newFake(t, "b")
		oll.set(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			fmt.Fprint(w, `{"model":"o","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":""},"done":false}`+"\n")
		})
		var logs syncBuffer
		g := newGateway(t, "[targets.oll]\nadapter = \"ollama\"\nurl = \""+oll.srv.URL+"\"\nclass = \"private\"\nmodel = \"o\"\n\n"+
			target("b", b.url(), "private")+"[routes.ab]\ntargets = [\"oll\", \"b\"]\n", nil, withLog(&logs))
		var hr *http.Response
		acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "ab",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, option.WithResponseInto(&hr))
		if err != nil || b.hits.Load() != 1 || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "hello from b" {
			t.Fatalf("err %v, b hits %d, choices %d: want b's whole stream", err, b.hits.Load(), len(acc.Choices))
		}
		if chain := hr.Header.Get("X-Hayula-Chain"); chain != "oll→b (served by b)" {
			t.Errorf("x-hayula-chain %q", chain)
		}
	})
}
