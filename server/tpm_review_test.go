package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/server"
	"github.com/hayula/gateway/upstream"
)

// TestKeyTPMRetryAfterOfAbsurdUsage: an upstream that reports absurd usage (a trillion tokens)
// against tpm = 1 leaves the key in a debt the bucket counts to 292 years, its longest wait; the
// 429 still says it in whole seconds, a positive number. Rounding the longest wait up to a
// second overflowed: Retry-After: -9223372035, which a client reads as "now".
func TestKeyTPMRetryAfterOfAbsurdUsage(t *testing.T) {
	up := newFake(t, "up")
	up.set(usageHandler(1_000_000_000_000, 0, false, false))
	g := newGateway(t, keyBlock("k", "hk-k", "tpm = 1")+target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	k := []string{"Authorization", "Bearer hk-k"}
	if rep := g.chat(t, "r", k...); rep.status != 200 {
		t.Fatalf("first request: %d %s", rep.status, rep.body)
	}
	rep := g.chat(t, "r", k...)
	if rep.status != 429 {
		t.Fatalf("a key in debt: %d %s, want 429", rep.status, rep.body)
	}
	ra := rep.header.Get("Retry-After")
	if n, err := strconv.ParseInt(ra, 10, 64); err != nil || n < 292*365*24*3600 {
		t.Errorf("Retry-After %q, want the 292 years the bucket counts to, in seconds", ra)
	}
}

// TestKeyTPMRefusalSaysWaitAsOpenAI: the tpm refusal's message reads as OpenAI's TPM error does
// ("… on tokens per min (TPM): Limit 30000, Used 29000, … Please try again in 6m54.72s."), which
// clients' retry helpers parse: the wait in Go's duration form, rounded up to a millisecond, in
// milliseconds under a second. %g wrote a wait of 11.6 days or more as 1.2e+06s, and 600 ms as
// 0.6s.
func TestKeyTPMRefusalSaysWaitAsOpenAI(t *testing.T) {
	for _, tc := range []struct {
		name          string
		tpm, used     int
		advance       time.Duration
		limited, wait string
	}{
		{"seconds", 100, 150, 0, "Limit 100, Used 150", "30.6s"},
		{"under a second", 100, 150, 30 * time.Second, "Limit 100, Used 100", "600ms"},
		{"minutes", 1000, 8000, 0, "Limit 1000, Used 8000", "7m0.06s"},
		{"days", 1, 20000, 0, "Limit 1, Used 20000", "333h20m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake(t, "up")
			up.set(usageHandler(tc.used, 0, false, false))
			g := newGateway(t, keyBlock("k", "hk-k", fmt.Sprintf("tpm = %d", tc.tpm))+target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
			k := []string{"Authorization", "Bearer hk-k"}
			if rep := g.chat(t, "r", k...); rep.status != 200 {
				t.Fatalf("first request: %d %s", rep.status, rep.body)
			}
			g.clock.Advance(tc.advance)
			rep := g.chat(t, "r", k...)
			msg, _ := rep.errorField(t, "message").(string)
			want := "Rate limit reached for key k on tokens per min (TPM): " + tc.limited + ". Please try again in " + tc.wait + "."
			if msg != want {
				t.Errorf("message %q\nwant    %q", msg, want)
			}
		})
	}
}

// TestKeyTPMAnswerUnderWayAcrossReload: an answer whose request the replaced configuration
// admitted is charged to the bucket the key has when the answer ends (matched by name), once:
// the same bucket when the reload left tpm alone, and the new one when it changed tpm, however
// many reloads came meanwhile. It was charged to the replaced bucket, which nothing reads any
// more: an operator who lowers a key's tpm because of a long generation saw it go uncharged.
func TestKeyTPMAnswerUnderWayAcrossReload(t *testing.T) {
	for _, tc := range []struct {
		name string
		tpms []int // the key's tpm in the first configuration, then after each reload
	}{
		{"unchanged", []int{200, 200}},
		{"changed", []int{1000, 200}},
		{"changed twice", []int{1000, 500, 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake(t, "up")
			release := make(chan struct{})
			entered := make(chan struct{}, 1)
			up.set(func(w http.ResponseWriter, r *http.Request) {
				select {
				case entered <- struct{}{}:
				case <-r.Context().Done():
					return
				}
				if waitRelease(r, release) {
					usageHandler(200, 50, false, false)(w, r)
				}
			})
			clock := health.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
			build := func(tpm int, prev *server.Server) *server.Server {
				text := keyBlock("k", "hk-k", fmt.Sprintf("tpm = %d", tpm)) + target("up", up.url(), "private") +
					"[routes.r]\ntargets = [\"up\"]\n"
				return newServerWith(t, server.Options{Config: parseText(t, text), Clock: clock, Previous: prev})
			}
			cur := build(tc.tpms[0], nil)
			l := server.NewLive(cur)
			g := &gateway{ts: serveLive(t, l)}
			k := []string{"Authorization", "Bearer hk-k"}
			done := make(chan reply, 1)
			go func() { done <- g.chat(t, "r", k...) }()
			<-entered
			for _, tpm := range tc.tpms[1:] {
				next := build(tpm, cur)
				l.Replace(next)
				cur = next
			}
			close(release)
			if rep := <-done; rep.status != 200 {
				t.Fatalf("the request under way: %d %s", rep.status, rep.body)
			}
			rep := g.chat(t, "r", k...)
			if rep.status != 429 {
				t.Fatalf("after an answer of 250 tokens against tpm = 200: %d %s, want 429", rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, "Limit 200, Used 250.") {
				t.Errorf("message %q, want it to say Used 250", msg)
			}
		})
	}
}

// panicsMidStream's stream sends one chunk that reports usage, then its adapter panics (the
// recoverer cuts the stream off); with before, the adapter panics before answering.
type panicsMidStream struct{ before bool }

func (p panicsMidStream) Chat(ctx context.Context, t *core.Target, req *core.Request) (*upstream.Response, error) {
	if p.before {
		panic("adapter bug before the answer")
	}
	return &upstream.Response{Stream: &panickingStream{}}, nil
}

type panickingStream struct{ n int }

func (s *panickingStream) Next() ([]byte, error) {
	if s.n++; s.n == 1 {
		return []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"usage":{"prompt_tokens":7,"completion_tokens":5}}`), nil
	}
	panic("adapter bug mid-stream")
}

func (s *panickingStream) Close() error { return nil }

// TestKeyTPMChargesEachAnswerOnce: whichever way an answer comes, it is charged once, what the
// answer that went out reported (7 + 5 tokens here), and a request nothing answered is charged
// nothing: after a fallback, after a same-target retry, on /v1/completions and /v1/embeddings
// (whose usage has no completion_tokens), through the Responses bridge whole, a stream broken
// off after an event that reported usage (vLLM's continuous usage), a stream whose adapter
// panics after such an event (the recoverer cuts it off), an adapter that panics before
// answering, and explain, which sends nothing. The key's bucket (tpm = 5, the clock standing)
// tells what it was charged in the next refusal's "Used".
func TestKeyTPMChargesEachAnswerOnce(t *testing.T) {
	const usage = `"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}`
	chunk := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]`
	for _, tc := range []struct {
		name, path, body string
		h                http.HandlerFunc
		extra            string                // the target's
		opt              func(*server.Options) // the gateway's
		status           int                   // the request's
		used             int                   // what the bucket was charged; 0: nothing, the next request is served
	}{
		{name: "fallback", path: "/v1/chat/completions", status: 200, used: 12,
			body: `{"model":"fb","messages":[{"role":"user","content":"hi"}]}`},
		{name: "same-target retry", path: "/v1/chat/completions", status: 200, used: 12, extra: "max_retries = 2",
			body: `{"model":"r","messages":[{"role":"user","content":"hi"}]}`,
			h: func() http.HandlerFunc {
				var n atomic.Int64
				return func(w http.ResponseWriter, r *http.Request) {
					if n.Add(1) == 1 {
						errHandler(503, "busy", "try again")(w, r)
						return
					}
					usageHandler(7, 5, false, false)(w, r)
				}
			}()},
		{name: "completions", path: "/v1/completions", status: 200, used: 12,
			body: `{"model":"r","prompt":"hi"}`,
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"id":"t1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"hello","logprobs":null,"finish_reason":"stop"}],`+usage+`}`)
			}},
		{name: "embeddings", path: "/v1/embeddings", status: 200, used: 7,
			body: `{"model":"r","input":"hi"}`,
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}`)
			}},
		{name: "responses whole", path: "/v1/responses", status: 200, used: 12,
			body: `{"model":"r","input":"hi"}`},
		{name: "stream broken off", path: "/v1/chat/completions", status: 200, used: 12,
			body: `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			h: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: %s}\n\ndata: %s,%s}\n\n", chunk, chunk, usage)
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler) // the connection drops mid-stream
			}},
		{name: "adapter panics mid-stream", path: "/v1/chat/completions", status: 200, used: 12,
			body: `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			opt:  func(o *server.Options) { o.Upstream = panicsMidStream{} }},
		{name: "adapter panics before answering", path: "/v1/chat/completions", status: 500, used: 0,
			body: `{"model":"r","messages":[{"role":"user","content":"hi"}]}`,
			opt:  func(o *server.Options) { o.Upstream = panicsMidStream{before: true} }},
		{name: "explain", path: "/v1/route/explain", status: 200, used: 0,
			body: `{"model":"r","messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, bad := newFake(t, "ok"), newFake(t, "bad")
			ok.set(usageHandler(7, 5, false, false))
			if tc.h != nil {
				ok.set(tc.h)
			}
			bad.set(errHandler(500, "boom", "upstream down"))
			var opts []gwOption
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			g := newGateway(t, keyBlock("k", "hk-k", "tpm = 5")+target("ok", ok.url(), "private", tc.extra)+
				target("bad", bad.url(), "private")+"[routes.r]\ntargets = [\"ok\"]\n[routes.fb]\ntargets = [\"bad\", \"ok\"]\n", nil, opts...)
			k := []string{"Authorization", "Bearer hk-k"}
			if status, body := postCutOff(t, g, tc.path, tc.body, k...); status != tc.status {
				t.Fatalf("%s: %d %s, want %d", tc.path, status, body, tc.status)
			}
			ok.set(usageHandler(7, 5, false, false))
			rep := g.post(t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"hi"}]}`, k...)
			if tc.used == 0 {
				if rep.status != 200 && (tc.opt == nil || rep.status != 500) {
					t.Errorf("after a request charged nothing: %d %s", rep.status, rep.body)
				}
				return
			}
			if rep.status != 429 {
				t.Fatalf("after an answer of %d tokens against tpm = 5: %d %s, want 429", tc.used, rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, fmt.Sprintf("Limit 5, Used %d.", tc.used)) {
				t.Errorf("message %q, want Used %d: charged once", msg, tc.used)
			}
		})
	}
}

// postCutOff posts body to path as g.post does, and reads the answer up to its end or to where
// the gateway cut it off (a panic mid-stream), which comes after the handler is done with it.
func postCutOff(t *testing.T, g *gateway, path, body string, hdr ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := g.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestKeyRPMRefusalSaysWaitAsOpenAI: the rpm refusal's message reads as the tpm one and OpenAI's
// do, the wait in Go's duration form rounded up to a millisecond; %.3gs cut 1.2345 s down to
// 1.23 s, a wait a client that retries on it would take too short.
func TestKeyRPMRefusalSaysWaitAsOpenAI(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rpm     int
		advance time.Duration
		wait    string
	}{
		{"an interval", 2, 0, "30s"},
		{"rounded up, not down", 2, 28765500 * time.Microsecond, "1.235s"},
		{"under a second", 60, 400 * time.Millisecond, "600ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake(t, "up")
			up.set(okHandler("up"))
			g := newGateway(t, keyBlock("k", "hk-k", fmt.Sprintf("rpm = %d", tc.rpm))+target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
			k := []string{"Authorization", "Bearer hk-k"}
			for i := range tc.rpm {
				if rep := g.chat(t, "r", k...); rep.status != 200 {
					t.Fatalf("request %d: %d %s", i, rep.status, rep.body)
				}
			}
			g.clock.Advance(tc.advance)
			rep := g.chat(t, "r", k...)
			msg, _ := rep.errorField(t, "message").(string)
			want := fmt.Sprintf("Rate limit reached for key k on requests per min (RPM): Limit %d, Used %d. Please try again in %s.", tc.rpm, tc.rpm, tc.wait)
			if rep.status != 429 || msg != want {
				t.Errorf("%d %q\nwant    %q", rep.status, msg, want)
			}
		})
	}
}
