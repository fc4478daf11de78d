package server_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/server"
)

// usageHandler answers as okHandler does, with usage prompt and completion: in a whole answer
// always, in a stream as a last chunk when the client asked for it (stream_options.include_usage,
// as OpenAI does) or, with always, whether it asked or not. With none, no answer has usage.
func usageHandler(prompt, completion int, always, none bool) http.HandlerFunc {
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, prompt, completion, prompt+completion)
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model         string `json:"model"`
			Stream        bool   `json:"stream"`
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			u := `,"usage":` + usage
			if none {
				u = ""
			}
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]%s}`, req.Model, u)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hello\"},\"finish_reason\":null}]}\n\n", req.Model)
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", req.Model)
		if !none && (always || req.StreamOptions.IncludeUsage) {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[],\"usage\":%s}\n\n", req.Model, usage)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// tpmRefused checks that rep is the tpm cap's 429 with Retry-After ra, naming key and limit.
func tpmRefused(t *testing.T, rep reply, key string, limit int, ra string) {
	t.Helper()
	if rep.status != http.StatusTooManyRequests || rep.errorField(t, "code") != "rate_limit_exceeded" ||
		rep.errorField(t, "type") != "tokens" {
		t.Fatalf("%d %s, want 429 rate_limit_exceeded of type tokens", rep.status, rep.body)
	}
	if got := rep.header.Get("Retry-After"); got != ra {
		t.Errorf("Retry-After %q, want %q", got, ra)
	}
	msg, _ := rep.errorField(t, "message").(string)
	want := fmt.Sprintf("Rate limit reached for key %s on tokens per min (TPM): Limit %d", key, limit)
	if !strings.HasPrefix(msg, want) {
		t.Errorf("message %q, want it to begin %q", msg, want)
	}
}

// TestKeyTPM: a key with tpm = 100 is served a request whose answer uses 150 tokens (a request
// is admitted while the bucket is not in debt; its cost is known only from its answer), which
// leaves the bucket 50 in debt: the next is answered 429 in OpenAI's shape before it reaches
// the upstream, with the Retry-After until the bucket holds a token again (51 tokens at 100 a
// minute: 30.6 s, 31 in whole seconds). Another key is not held back, explain spends nothing,
// and once the clock has moved on the key is served again.
func TestKeyTPM(t *testing.T) {
	up := newFake(t, "up")
	up.set(usageHandler(100, 50, false, false))
	g := newGateway(t, keyBlock("slow", "hk-slow", "tpm = 100")+keyBlock("free", "hk-free")+
		target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	slow, free := []string{"Authorization", "Bearer hk-slow"}, []string{"Authorization", "Bearer hk-free"}

	if rep := g.chat(t, "r", slow...); rep.status != 200 {
		t.Fatalf("first request: %d %s", rep.status, rep.body)
	}
	tpmRefused(t, g.chat(t, "r", slow...), "slow", 100, "31")
	if rep := g.post(t, "/v1/route/explain", `{"model":"r","messages":[{"role":"user","content":"hi"}]}`, slow...); rep.status != 200 {
		t.Errorf("explain of a key in debt: %d %s", rep.status, rep.body)
	}
	if n := up.hits.Load(); n != 1 {
		t.Errorf("upstream got %d requests, want 1", n)
	}
	for range 2 {
		if rep := g.chat(t, "r", free...); rep.status != 200 {
			t.Errorf("another key: %d %s", rep.status, rep.body)
		}
	}
	g.clock.Advance(30 * time.Second) // the debt is repaid, and the bucket holds nothing yet
	tpmRefused(t, g.chat(t, "r", slow...), "slow", 100, "1")
	g.clock.Advance(time.Second)
	if rep := g.chat(t, "r", slow...); rep.status != 200 {
		t.Errorf("after 31 s: %d %s, want 200", rep.status, rep.body)
	}

	want := []string{
		`hayula_key_limited_total{key="slow",cap="tpm"} 2`,
		`hayula_key_tokens_total{key="slow",kind="prompt"} 200`,
		`hayula_key_tokens_total{key="slow",kind="completion"} 100`,
	}
	var lines map[string]bool
	var scraped reply
	settles(func() bool { scraped, lines = scrape(t, g, free...); return lines[want[1]] })
	for _, w := range want {
		if !lines[w] {
			t.Errorf("no line %q in:\n%s", w, scraped.body)
		}
	}
	if strings.Contains(string(scraped.body), `hayula_key_limited_total{key="free"`) {
		t.Errorf("a key without caps was refused:\n%s", scraped.body)
	}
}

// TestKeyTPMStream: a stream is charged at its end, before its [DONE] goes out (so a client that
// sends its next request once it has the stream's end finds the debt), with the usage its
// last usage-bearing event reports: asked for by the client (stream_options.include_usage),
// sent by an upstream unasked, or asked for by the gateway itself (for a Responses stream, and
// for a chat stream whose client did not ask: TestStreamUsageAskedByGateway). A stream that
// reports no usage even asked is charged the lower bound of its prompt that the context filter
// computes, and the lower bound of the text it relayed as its completion.
func TestKeyTPMStream(t *testing.T) {
	stream := func(extra string) string {
		return `{"model":"r","stream":true` + extra + `,"messages":[{"role":"user","content":"hi there"}]}`
	}
	for _, tc := range []struct {
		name   string
		always bool
		path   string
		body   string
	}{
		{"include_usage", false, "/v1/chat/completions", stream(`,"stream_options":{"include_usage":true}`)},
		{"usage unasked", true, "/v1/chat/completions", stream("")},
		{"responses", false, "/v1/responses", `{"model":"r","stream":true,"input":"hi there"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake(t, "up")
			up.set(usageHandler(100, 50, tc.always, false))
			g := newGateway(t, keyBlock("slow", "hk-slow", "tpm = 100")+
				target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
			slow := []string{"Authorization", "Bearer hk-slow"}
			rep := g.post(t, tc.path, tc.body, slow...)
			if rep.status != 200 || !strings.Contains(string(rep.body), "hello") {
				t.Fatalf("stream: %d %s", rep.status, rep.body)
			}
			tpmRefused(t, g.post(t, tc.path, tc.body, slow...), "slow", 100, "31")
			g.clock.Advance(31 * time.Second)
			if rep := g.post(t, tc.path, tc.body, slow...); rep.status != 200 {
				t.Errorf("after 31 s: %d %s, want 200", rep.status, rep.body)
			}
		})
	}

	t.Run("no usage", func(t *testing.T) {
		content := "the quick brown fox jumps over the lazy dog while seven wizards quietly judge boxing matches"
		low := filter.PromptTokensMin([]core.Message{{Role: "user", Content: json.RawMessage(strconv.Quote(content))}})
		if low < 2 {
			t.Fatalf("the prompt's lower bound is %d: too small to tell", low)
		}
		up := newFake(t, "up")
		up.set(usageHandler(100, 50, false, true))
		g := newGateway(t, keyBlock("slow", "hk-slow", fmt.Sprintf("tpm = %d", low))+
			target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
		slow := []string{"Authorization", "Bearer hk-slow"}
		for _, body := range []string{
			`{"model":"r","stream":true,"messages":[{"role":"user","content":` + strconv.Quote(content) + `}]}`,
			`{"model":"r","messages":[{"role":"user","content":` + strconv.Quote(content) + `}]}`,
		} {
			if rep := g.post(t, "/v1/chat/completions", body, slow...); rep.status != 200 {
				t.Fatalf("request: %d %s", rep.status, rep.body)
			}
			// Charged low of its tpm = low, and the bound of the text it answered, "hello"'s one
			// token, a stream's relayed (TestKeyTPMChargesTextRelayedBeforeHangUp) as a whole
			// answer's: the bucket is one in debt, and holds a token again in 2×60/low seconds.
			ra := strconv.Itoa(int(math.Ceil(2 * 60 / float64(low))))
			tpmRefused(t, g.post(t, "/v1/chat/completions", body, slow...), "slow", low, ra)
			g.clock.Advance(2 * time.Minute) // full again
		}

		// A stream whose client leaves mid-way, before any usage, is charged as much (its
		// prompt's bound and its text's, "hel"'s one token), once the relay has seen it go (which
		// hayula_stream_ends_total counts after the charge).
		up.set(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hel\"},\"finish_reason\":null}]}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		hangUp := g.openStream(t, `{"model":"r","stream":true,"messages":[{"role":"user","content":`+strconv.Quote(content)+`}]}`, slow...)
		hangUp()
		left := `hayula_stream_ends_total{endpoint="chat",route="r",target="up",end="client_left"} 1`
		var lines map[string]bool
		settles(func() bool { _, lines = scrape(t, g, slow...); return lines[left] })
		if !lines[left] {
			t.Fatalf("no line %q: the relay did not see the client go", left)
		}
		up.set(usageHandler(100, 50, false, true))
		tpmRefused(t, g.chat(t, "r", slow...), "slow", low, strconv.Itoa(int(math.Ceil(120/float64(low)))))
	})
}

// TestKeyTPMChargesOnlyAnswers: a request that fails on every target (falling through or
// stopped by a 400) and one refused before it reaches a target (an unknown model) are charged
// nothing, however small the cap: a key with tpm = 1 is served afterwards.
func TestKeyTPMChargesOnlyAnswers(t *testing.T) {
	ok, bad, refuse := newFake(t, "ok"), newFake(t, "bad"), newFake(t, "refuse")
	bad.set(errHandler(500, "boom", "upstream failed"))
	refuse.set(errHandler(400, "bad_request", "no"))
	g := newGateway(t, capsConfig(ok, bad, refuse, "tpm = 1"), nil)
	one := []string{"Authorization", "Bearer hk-one"}
	for _, model := range []string{"dead", "stop", "nope", "dead"} {
		if rep := g.chat(t, model, one...); rep.status == 200 || rep.status == 429 {
			t.Fatalf("model %s: %d %s, want a failure", model, rep.status, rep.body)
		}
	}
	if rep := g.chat(t, "r", one...); rep.status != 200 {
		t.Fatalf("after requests that failed: %d %s, want 200", rep.status, rep.body)
	}
	// okHandler's answer reports 6 tokens: 5 in debt.
	tpmRefused(t, g.chat(t, "r", one...), "one", 1, "360")
}

// TestKeyTPMHoldsAcrossReload: a reload that leaves a key's tpm alone keeps its bucket, spent as
// it was (in debt here); one that changes it starts a full bucket of the new size.
func TestKeyTPMHoldsAcrossReload(t *testing.T) {
	up := newFake(t, "up")
	up.set(usageHandler(100, 50, false, false))
	conf := func(tpmB int) *config.Config {
		text := keyBlock("same", "hk-same", "tpm = 100") + keyBlock("more", "hk-more", fmt.Sprintf("tpm = %d", tpmB)) +
			target("up", up.url(), "private") + "[routes.r]\ntargets = [\"up\"]\n"
		return parseText(t, text)
	}
	clock := health.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	newServer := func(cfg *config.Config, prev *server.Server) *server.Server {
		return newServerWith(t, server.Options{Config: cfg, Clock: clock, Previous: prev})
	}
	old := newServer(conf(100), nil)
	l := server.NewLive(old)
	g := &gateway{ts: serveLive(t, l)}
	same, more := []string{"Authorization", "Bearer hk-same"}, []string{"Authorization", "Bearer hk-more"}
	for _, k := range [][]string{same, more} {
		if rep := g.chat(t, "r", k...); rep.status != 200 {
			t.Fatalf("%s before the reload: %d %s", k[1], rep.status, rep.body)
		}
		tpmRefused(t, g.chat(t, "r", k...), k[1][len("Bearer hk-"):], 100, "31")
	}
	l.Replace(newServer(conf(1000), old))
	tpmRefused(t, g.chat(t, "r", same...), "same", 100, "31")
	if rep := g.chat(t, "r", more...); rep.status != 200 {
		t.Errorf("tpm 100 → 1000: %d %s, want 200 (a full bucket)", rep.status, rep.body)
	}
}

// TestKeyTPMConcurrentOvershoot pins what CONFIG.md says of requests admitted together: each is
// admitted while the bucket is not in debt, before any has been charged, so together they
// overshoot the cap by what they use; every answer is charged all the same, none lost.
func TestKeyTPMConcurrentOvershoot(t *testing.T) {
	up := newFake(t, "up")
	const n = 4
	release, entered := make(chan struct{}), make(chan struct{}, n)
	up.set(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		if waitRelease(r, release) {
			usageHandler(100, 50, false, false)(w, r)
		}
	})
	g := newGateway(t, keyBlock("k", "hk-k", "tpm = 100")+target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	k := []string{"Authorization", "Bearer hk-k"}
	done := make(chan reply, n)
	for range n {
		go func() { done <- g.chat(t, "r", k...) }()
	}
	// Each request is held upstream, so an answer before all have arrived is one refused; the
	// wait has no deadline, which a loaded machine overran.
	for i := range n {
		select {
		case <-entered:
		case rep := <-done:
			t.Fatalf("%d of %d requests reached the upstream together; another was answered: %d %s", i, n, rep.status, rep.body)
		}
	}
	close(release)
	for range n {
		if rep := <-done; rep.status != 200 {
			t.Errorf("a request admitted together: %d %s", rep.status, rep.body)
		}
	}
	// 600 tokens charged to a bucket of 100: 500 in debt, 501 tokens to wait for (300.6 s).
	tpmRefused(t, g.chat(t, "r", k...), "k", 100, "301")
}
