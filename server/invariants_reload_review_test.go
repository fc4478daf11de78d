package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// TestInvReloadMakingAutosClassifiedRouteStrictHoldsInFlight: a model auto request that auto
// moved off the route its text chose (r1, whose target cannot see its image) onto deepseek-r1 is
// under way when a reload makes r1 strict. A request arriving after the reload keeps r1's
// strictness where it is moved (CONFIG.md, [auto]) and never reaches deepseek-r1's public
// target; the one under way, held to its route's strictness alone, fell through to it. It now
// ends as the later request would, with the private target's failure, the public one unasked.
func TestInvReloadMakingAutosClassifiedRouteStrictHoldsInFlight(t *testing.T) {
	t1, slow, pub := newFake(t, "t1"), newFake(t, "slow"), newFake(t, "pub")
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	slow.set(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(entered) })
		if waitRelease(r, release) {
			errHandler(500, "internal", "down")(w, r)
		}
	})
	text := func(r1Extra string) string {
		return target("t1", t1.url(), "private", "vision = false") + target("slow", slow.url(), "private", "vision = true") +
			target("pub", pub.url(), "public", "vision = true") +
			"[routes.r1]\ntargets = [\"t1\"]\n" + r1Extra +
			"[routes.saif]\ntargets = [\"t1\"]\n[routes.deepseek-r1]\ntargets = [\"slow\", \"pub\"]\n\n[auto]\ndefault = \"r1\"\n"
	}
	build := func(text string, prev *server.Server) *server.Server {
		cfg, err := config.Parse([]byte(text), "test.toml", func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		s, err := server.New(server.Options{Config: cfg, Previous: prev,
			Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	const body = `{"model":"auto","messages":[{"role":"user","content":[{"type":"text","text":"Write a short poem about this picture."},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`
	old := build(text(""), nil)
	l := server.NewLive(old)
	h := serveLive(t, l)
	t.Cleanup(h.Close)
	type answer struct {
		status int
		body   string
		moved  string
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := h.Client().Post(h.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			done <- answer{-1, err.Error(), ""}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- answer{resp.StatusCode, string(b), resp.Header.Get("x-hayula-moved-from")}
	}()
	<-entered
	ret := l.Replace(build(text("strict = true\n"), old))
	close(release)
	a := <-done
	<-ret.Drained()
	ret.Close()
	if a.moved != "r1" {
		t.Fatalf("the request was not moved off r1 (moved from %q): %d %s", a.moved, a.status, a.body)
	}
	if pub.hits.Load() != 0 || a.status != 500 {
		t.Fatalf("%d %s; the public target was asked %d times: want the private target's 500, the public one unasked",
			a.status, a.body, pub.hits.Load())
	}
	// After the reload, the same request: the public target is never its.
	rep, err := h.Client().Post(h.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	rep.Body.Close()
	if pub.hits.Load() != 0 {
		t.Fatalf("a request after the reload reached the public target (%d)", rep.StatusCode)
	}
}
