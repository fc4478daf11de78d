package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/server"
	"github.com/hayula/gateway/upstream"
)

// streamUsageCounted checks that g's metrics count prompt and completion tokens for route r and
// target up, and for key k, and that k's tpm (which the caller set to prompt+completion) was
// charged exactly that: the next request is refused, having used it all. A stream's usage has
// one source for both (what the upstream reported, asked or not): they must agree.
func streamUsageCounted(t *testing.T, g *gateway, prompt, completion int, next func() reply) {
	t.Helper()
	key := []string{"Authorization", "Bearer hk-k"}
	want := []string{
		fmt.Sprintf(`hayula_tokens_total{route="r",target="up",kind="prompt"} %d`, prompt),
		fmt.Sprintf(`hayula_tokens_total{route="r",target="up",kind="completion"} %d`, completion),
		fmt.Sprintf(`hayula_key_tokens_total{key="k",kind="prompt"} %d`, prompt),
		fmt.Sprintf(`hayula_key_tokens_total{key="k",kind="completion"} %d`, completion),
	}
	var lines map[string]bool
	var rep reply
	settles(func() bool {
		rep, lines = scrape(t, g, key...)
		return lines[want[len(want)-1]]
	})
	for _, w := range want {
		if !lines[w] {
			t.Errorf("no line %q in:\n%s", w, tokenLines(rep.body))
		}
	}
	n := prompt + completion
	refused := next()
	if refused.status != http.StatusTooManyRequests {
		t.Fatalf("after a stream of %d tokens under tpm = %d: %d %s, want 429 (tpm charged less than the usage)",
			n, n, refused.status, refused.body)
	}
	tpmRefused(t, refused, "k", n, refused.header.Get("Retry-After"))
	if msg, _ := refused.errorField(t, "message").(string); !strings.Contains(msg, fmt.Sprintf("Used %d.", n)) {
		t.Errorf("message %q, want it to say Used %d (tpm charged the stream's usage, once)", msg, n)
	}
}

// tokenLines is the token series of a scrape, for a failure's message.
func tokenLines(body []byte) string {
	var out []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.Contains(l, "tokens_total{") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// usageKeyConfig is a key k with tpm = tpm, and route r to target block up.
func usageKeyConfig(tpm int, up string) string {
	return keyBlock("k", "hk-k", fmt.Sprintf("tpm = %d", tpm)) + up + "[routes.r]\ntargets = [\"up\"]\n"
}

// TestStreamTokensCountedOnceFromRunningTotals: an upstream that reports usage on every event
// as running totals (vLLM's stream_options.continuous_usage_stats, asked for or not) has the
// whole stream's usage on its last usage-bearing event. hayula_tokens_total and
// hayula_key_tokens_total count that event's numbers, once, as the key's tpm is charged them:
// they counted every event's, 5 times the prompt and 1+2+3+4+5 completion tokens, and nothing
// at all when the client had not asked for usage. The client gets the events as they came.
func TestStreamTokensCountedOnceFromRunningTotals(t *testing.T) {
	const prompt, events = 20, 5
	running := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 1; i <= events; i++ {
			finish := "null"
			if i == events {
				finish = `"stop"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","+
				"\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d\"},\"finish_reason\":%s}],"+
				"\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n",
				i, finish, prompt, i, prompt+i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
	for _, tc := range []struct{ name, options string }{
		{"asked", `,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`},
		{"unasked", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake(t, "up")
			up.set(running)
			g := newGateway(t, usageKeyConfig(prompt+events, target("up", up.url(), "private")), nil)
			key := []string{"Authorization", "Bearer hk-k"}
			body := `{"model":"r","stream":true` + tc.options + `,"messages":[{"role":"user","content":"hi"}]}`
			rep := g.post(t, "/v1/chat/completions", body, key...)
			if rep.status != 200 {
				t.Fatalf("stream: %d %s", rep.status, rep.body)
			}
			if n := strings.Count(string(rep.body), `"usage":{"prompt_tokens":`); n != events {
				t.Errorf("the client got %d events with usage, want the upstream's %d:\n%s", n, events, rep.body)
			}
			streamUsageCounted(t, g, prompt, events, func() reply { return g.post(t, "/v1/chat/completions", body, key...) })
		})
	}
}

// TestStreamUsageCountedUnasked: a stream's tokens are what its upstream reported, whether or not
// the client asked for usage (stream_options.include_usage), in the metrics and in the key's tpm
// alike: llama-server puts usage on its last chunk unasked (before its timings), Ollama's native
// API reports its counts on the line that says done, and SAIF on its done event, which the
// gateway's translation turns into a usage chunk only when the client asked. The metrics counted
// such a stream's usage only when asked, and tpm charged the translated ones their prompt's lower
// bound. What the client gets is unchanged: no usage chunk of the gateway's making unasked.
func TestStreamUsageCountedUnasked(t *testing.T) {
	llama := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":null}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],"+
			"\"usage\":{\"completion_tokens\":7,\"prompt_tokens\":31,\"total_tokens\":38},\"timings\":{\"prompt_n\":31,\"predicted_n\":7,\"predicted_ms\":12.5}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
	ollama := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprint(w, `{"model":"o","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"hi"},"done":false}`+"\n")
		fmt.Fprint(w, `{"model":"o","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":11,"eval_count":4}`+"\n")
	}
	saif := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"text\":\"Use a CSP.\",\"specialist\":\"webapp\"}\n\n")
		fmt.Fprint(w, "data: {\"done\":true,\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\n")
	}
	block := func(adapter, url string) string {
		return fmt.Sprintf("[targets.up]\nadapter = %q\nurl = %q\nclass = \"private\"\nmodel = \"m\"\n\n", adapter, url)
	}
	for _, tc := range []struct {
		name               string
		handler            http.HandlerFunc
		target             func(url string) string
		prompt, completion int
		translated         bool // the client's usage chunk is the gateway's, made only when asked
	}{
		{"llama-server", llama, func(u string) string { return block("openai", u+"/v1") }, 31, 7, false},
		{"ollama", ollama, func(u string) string { return block("ollama", u) }, 11, 4, true},
		{"saif", saif, func(u string) string { return block("saif", u) }, 9, 3, true},
	} {
		for _, asked := range []bool{false, true} {
			name := tc.name + "/unasked"
			options := ""
			if asked {
				name, options = tc.name+"/asked", `,"stream_options":{"include_usage":true}`
			}
			t.Run(name, func(t *testing.T) {
				up := newFake(t, "up")
				up.set(tc.handler)
				g := newGateway(t, usageKeyConfig(tc.prompt+tc.completion, tc.target(up.srv.URL)), nil)
				key := []string{"Authorization", "Bearer hk-k"}
				// A prompt whose lower bound is well below the usage: charging it instead shows.
				body := `{"model":"r","stream":true` + options + `,"messages":[{"role":"user","content":"hi"}]}`
				rep := g.post(t, "/v1/chat/completions", body, key...)
				if rep.status != 200 || !strings.Contains(string(rep.body), "data: [DONE]") {
					t.Fatalf("stream: %d %s", rep.status, rep.body)
				}
				hasUsage := strings.Contains(string(rep.body), `"usage":{`)
				if wantUsage := asked || !tc.translated; hasUsage != wantUsage {
					t.Errorf("usage in what the client got: %v, want %v:\n%s", hasUsage, wantUsage, rep.body)
				}
				streamUsageCounted(t, g, tc.prompt, tc.completion, func() reply { return g.post(t, "/v1/chat/completions", body, key...) })
			})
		}
	}
}

// scribbleStream is a BufferedStream that uses what Buffered allows: it invalidates the slice
// the last Next returned (a stream that parses its buffered bytes may move them), here by
// overwriting it. Its second event, which the relay asks Buffered after (it flushes the first
// regardless), reports usage.
type scribbleStream struct {
	ev   []byte
	sent int
}

var scribbleEvents = []string{
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
}

func (s *scribbleStream) Next() ([]byte, error) {
	if s.sent == len(scribbleEvents) {
		return nil, io.EOF
	}
	s.ev = append(s.ev[:0], scribbleEvents[s.sent]...)
	s.sent++
	return s.ev, nil
}

func (s *scribbleStream) Buffered() bool {
	for i := range s.ev {
		s.ev[i] = ' '
	}
	return true
}

func (s *scribbleStream) Close() error { return nil }

type scribbleUpstream struct{}

func (scribbleUpstream) Chat(context.Context, *core.Target, *core.Request) (*upstream.Response, error) {
	return &upstream.Response{Stream: &scribbleStream{}}, nil
}

// TestStreamUsageReadBeforeBuffered: the relay reads an event's usage before it asks the stream
// whether its next event is buffered, which may invalidate the event (upstream.BufferedStream);
// it read it after, and a stream that reused its buffer then was counted and charged nothing.
func TestStreamUsageReadBeforeBuffered(t *testing.T) {
	g := newGateway(t, usageKeyConfig(15, target("up", "http://127.0.0.1:1/v1", "private")), nil,
		func(o *server.Options) { o.Upstream = scribbleUpstream{} })
	key := []string{"Authorization", "Bearer hk-k"}
	body := `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	if rep := g.post(t, "/v1/chat/completions", body, key...); rep.status != 200 || !strings.Contains(string(rep.body), `"prompt_tokens":12`) {
		t.Fatalf("stream: %d %s", rep.status, rep.body)
	}
	streamUsageCounted(t, g, 12, 3, func() reply { return g.post(t, "/v1/chat/completions", body, key...) })
}
