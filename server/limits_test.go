package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

func keyBlock(name, token string, extra ...string) string {
	s := "[[keys]]\nname = \"" + name + "\"\nsha256 = \"" + sha256hex(token) + "\"\n"
	for _, e := range extra {
		s += e + "\n"
	}
	return s + "\n"
}

// TestKeyRPM: a key with rpm = 2 gets two requests at once, then 429 in OpenAI's shape with the
// Retry-After its bucket predicts, and another after that wait; another key is not held back,
// and explain, which sends nothing upstream, spends nothing.
func TestKeyRPM(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, keyBlock("slow", "hk-slow", "rpm = 2")+keyBlock("free", "hk-free")+
		target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	slow, free := []string{"Authorization", "Bearer hk-slow"}, []string{"Authorization", "Bearer hk-free"}

	explain := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
	for i := 0; i < 3; i++ {
		if rep := g.post(t, "/v1/route/explain", explain, slow...); rep.status != 200 {
			t.Fatalf("explain %d: %d %s", i, rep.status, rep.body)
		}
	}
	for i := 0; i < 2; i++ {
		if rep := g.chat(t, "r", slow...); rep.status != 200 {
			t.Fatalf("request %d within rpm: %d %s", i, rep.status, rep.body)
		}
	}
	rep := g.chat(t, "r", slow...)
	if rep.status != http.StatusTooManyRequests || rep.errorField(t, "code") != "rate_limit_exceeded" ||
		rep.errorField(t, "type") != "requests" {
		t.Fatalf("third request: %d %s, want 429 rate_limit_exceeded", rep.status, rep.body)
	}
	if ra := rep.header.Get("Retry-After"); ra != "30" {
		t.Errorf("Retry-After %q, want 30 (one request every 30 s)", ra)
	}
	if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, "Limit 2") {
		t.Errorf("message %q does not name the limit", msg)
	}
	if n := up.hits.Load(); n != 2 {
		t.Errorf("upstream got %d requests, want 2", n)
	}
	if rep := g.chat(t, "r", free...); rep.status != 200 {
		t.Errorf("another key: %d %s", rep.status, rep.body)
	}
	g.clock.Advance(29 * time.Second)
	if rep := g.chat(t, "r", slow...); rep.status != 429 {
		t.Errorf("after 29 s: %d, want 429", rep.status)
	}
	g.clock.Advance(time.Second)
	if rep := g.chat(t, "r", slow...); rep.status != 200 {
		t.Errorf("after 30 s: %d %s, want 200", rep.status, rep.body)
	}

	// /metrics counts per key what it made, what its cap refused and the tokens it was answered
	// with (explain counts nothing).
	want := []string{
		`hayula_key_requests_total{key="slow"} 5`,
		`hayula_key_requests_total{key="free"} 1`,
		`hayula_key_limited_total{key="slow",cap="rpm"} 2`,
		`hayula_key_tokens_total{key="slow",kind="prompt"} 9`,
		`hayula_key_tokens_total{key="free",kind="completion"} 3`,
	}
	var lines map[string]bool
	var scraped reply
	settles(func() bool { scraped, lines = scrape(t, g, free...); return lines[want[3]] })
	for _, w := range want {
		if !lines[w] {
			t.Errorf("no line %q in:\n%s", w, scraped.body)
		}
	}
}

// TestKeyMaxConcurrent: a key with max_concurrent = 1 is refused a second request while its
// first is in flight, and gets its slot back when the first ends, whether it was served, failed
// or refused before routing.
func TestKeyMaxConcurrent(t *testing.T) {
	up := newFake(t, "up")
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	up.set(func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		if waitRelease(r, release) {
			okHandler("up")(w, r)
		}
	})
	g := newGateway(t, keyBlock("one", "hk-one", "max_concurrent = 1")+
		target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	one := []string{"Authorization", "Bearer hk-one"}

	done := make(chan reply)
	go func() { done <- g.chat(t, "r", one...) }()
	<-entered
	rep := g.chat(t, "r", one...)
	if rep.status != 429 || rep.errorField(t, "code") != "rate_limit_exceeded" || rep.header.Get("Retry-After") != "1" {
		t.Errorf("second request in flight: %d %q %s, want 429 with Retry-After 1", rep.status, rep.header.Get("Retry-After"), rep.body)
	}
	close(release)
	if rep := <-done; rep.status != 200 {
		t.Fatalf("first request: %d %s", rep.status, rep.body)
	}
	if _, lines := scrape(t, g, one...); !lines[`hayula_key_limited_total{key="one",cap="max_concurrent"} 1`] {
		t.Error("/metrics does not count the request max_concurrent refused")
	}
	// The slot is given back when serveOp ends, after the answer is written.
	for _, model := range []string{"nope", "r", "nope", "r"} {
		var rep reply
		settles(func() bool { rep = g.chat(t, model, one...); return rep.status != 429 })
		if want := map[string]int{"nope": 404, "r": 200}[model]; rep.status != want {
			t.Errorf("model %s after the first ended: %d %s, want %d", model, rep.status, rep.body, want)
		}
	}
}

// TestKeyMaxConcurrentSequential: a client of a key with max_concurrent = 1 that sends each
// request once it has the previous answer, as the SDK does (a stream ends for it at [DONE]), is
// never refused: the slot is free by the time the answer's end reaches the client.
func TestKeyMaxConcurrentSequential(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, keyBlock("one", "hk-one", "max_concurrent = 1")+
		target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	c := sdkClient(g, "hk-one")
	params := openai.ChatCompletionNewParams{Model: "r",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	refused := map[string]int{}
	for i := 0; i < 200; i++ {
		st := c.Chat.Completions.NewStreaming(context.Background(), params)
		for st.Next() {
		}
		if err := st.Err(); err != nil {
			refused["stream"]++
		}
		st.Close()
		if _, err := c.Chat.Completions.New(context.Background(), params); err != nil {
			refused["whole"]++
		}
	}
	if len(refused) > 0 {
		t.Errorf("200 requests of each kind one after another, refused: %v", refused)
	}
}

// TestKeyRPMSpentByForbiddenModel pins what CONFIG.md says: rpm is charged before the body is
// read (a request over it is a 429 that costs no body read), and the model is in the body, so a
// request for a model the key may not use, answered 404, has spent its request all the same.
func TestKeyRPMSpentByForbiddenModel(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, keyBlock("one", "hk-one", "rpm = 1", `routes = ["r"]`)+
		target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n[routes.other]\ntargets = [\"up\"]\n", nil)
	one := []string{"Authorization", "Bearer hk-one"}
	if rep := g.chat(t, "other", one...); rep.status != http.StatusNotFound {
		t.Fatalf("a route the key may not use: %d %s, want 404", rep.status, rep.body)
	}
	if rep := g.chat(t, "r", one...); rep.status != http.StatusTooManyRequests {
		t.Errorf("after the 404: %d %s, want 429 (the 404 spent the minute's request)", rep.status, rep.body)
	}
}
