package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/server"
)

// capsConfig is a gateway with key "one" (extra its caps) and routes over fakes: r (ok), fb
// (a failing target, then ok), dead (two failing), stop (one that answers 400, which does not
// fall through).
func capsConfig(ok, bad, refuse *fake, extra ...string) string {
	return keyBlock("one", "hk-one", extra...) + keyBlock("free", "hk-free") +
		target("ok", ok.url(), "private") + target("bad", bad.url(), "private") +
		target("refuse", refuse.url(), "private") +
		"[routes.r]\ntargets = [\"ok\"]\n" +
		"[routes.fb]\ntargets = [\"bad\", \"ok\"]\n" +
		"[routes.dead]\ntargets = [\"bad\"]\n" +
		"[routes.stop]\ntargets = [\"refuse\"]\n"
}

// TestKeySlotGivenBackOnEveryPath: with max_concurrent = 1, each way a request can end (served
// whole or streamed, an upstream's error, a fallback, every target failed, a refusal before
// routing, the Responses bridge, embeddings, completions, a stream the upstream broke, a client
// gone before its answer or mid-stream) gives the slot back: the key's next request is served.
func TestKeySlotGivenBackOnEveryPath(t *testing.T) {
	ok, bad, refuse := newFake(t, "ok"), newFake(t, "bad"), newFake(t, "refuse")
	bad.set(errHandler(500, "boom", "upstream down"))
	refuse.set(errHandler(400, "bad_request", "no"))
	g := newGateway(t, capsConfig(ok, bad, refuse, "max_concurrent = 1"), nil)
	one := []string{"Authorization", "Bearer hk-one"}
	chat := func(model string, extra string) string {
		return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}]%s}`, model, extra)
	}
	// freeAgain: the key's slot is free once the server has finished with the request before.
	freeAgain := func(t *testing.T) {
		t.Helper()
		var rep reply
		settles(func() bool { rep = g.chat(t, "r", one...); return rep.status != 429 })
		if rep.status != 200 {
			t.Fatalf("the key's next request: %d %s, want 200 (its slot was not given back)", rep.status, rep.body)
		}
	}
	cases := []struct {
		name, path, body string
		want             int
	}{
		{"whole", "/v1/chat/completions", chat("r", ""), 200},
		{"stream", "/v1/chat/completions", chat("r", `,"stream":true`), 200},
		{"fallback", "/v1/chat/completions", chat("fb", ""), 200},
		{"all failed", "/v1/chat/completions", chat("dead", ""), 500},
		{"upstream 400", "/v1/chat/completions", chat("stop", ""), 400},
		{"unknown model", "/v1/chat/completions", chat("nope", ""), 404},
		{"bad json", "/v1/chat/completions", `{"model":`, 400},
		{"no messages", "/v1/chat/completions", `{"model":"r"}`, 400},
		{"responses", "/v1/responses", `{"model":"r","input":"hi"}`, 200},
		{"responses stream", "/v1/responses", `{"model":"r","input":"hi","stream":true}`, 200},
		{"responses failed", "/v1/responses", `{"model":"dead","input":"hi","stream":true}`, 500},
		{"embeddings", "/v1/embeddings", `{"model":"r","input":"hi"}`, 200},
		{"completions", "/v1/completions", `{"model":"r","prompt":"hi"}`, 200},
		{"explain", "/v1/route/explain", chat("r", ""), 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := g.post(t, c.path, c.body, one...)
			if rep.status != c.want {
				t.Fatalf("%d %s, want %d", rep.status, rep.body, c.want)
			}
			freeAgain(t)
		})
	}

	t.Run("stream broken by the upstream", func(t *testing.T) {
		ok.set(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		})
		defer ok.set(okHandler("ok"))
		rep := g.post(t, "/v1/chat/completions", chat("r", `,"stream":true`), one...)
		if rep.status != 200 || !strings.Contains(string(rep.body), "stream_interrupted") {
			t.Fatalf("%d %s, want a stream ended by an error event", rep.status, rep.body)
		}
		ok.set(okHandler("ok"))
		freeAgain(t)
	})

	t.Run("client gone before its answer", func(t *testing.T) {
		entered := make(chan struct{}, 1)
		ok.set(func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			<-r.Context().Done()
		})
		defer ok.set(okHandler("ok"))
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.ts.URL+"/v1/chat/completions",
			strings.NewReader(chat("r", "")))
		req.Header.Set("Authorization", "Bearer hk-one")
		errc := make(chan error, 1)
		go func() {
			resp, err := g.ts.Client().Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		<-entered
		cancel()
		if err := <-errc; err == nil {
			t.Fatal("the cancelled request was answered")
		}
		ok.set(okHandler("ok"))
		freeAgain(t)
	})

	t.Run("client gone mid-stream", func(t *testing.T) {
		ok.set(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		defer ok.set(okHandler("ok"))
		hangUp := g.openStream(t, chat("r", `,"stream":true`), "Authorization", "Bearer hk-one")
		// While the stream is open its slot is taken.
		if rep := g.chat(t, "r", one...); rep.status != 429 {
			t.Errorf("a second request while the stream is open: %d %s, want 429", rep.status, rep.body)
		}
		hangUp()
		ok.set(okHandler("ok"))
		freeAgain(t)
	})
}

// TestKeyRPMWindowEdges: rpm = 3 refills one request every 20 s on the gateway's clock; just
// before a request is back the answer is 429 with a Retry-After of 1 (never 0), at the instant it
// is back it is served; the bucket holds no more than rpm however long the key was idle.
func TestKeyRPMWindowEdges(t *testing.T) {
	ok, bad, refuse := newFake(t, "ok"), newFake(t, "bad"), newFake(t, "refuse")
	g := newGateway(t, capsConfig(ok, bad, refuse, "rpm = 3"), nil)
	one := []string{"Authorization", "Bearer hk-one"}
	g.clock.Advance(time.Hour) // idle for an hour: still only 3
	for i := 0; i < 3; i++ {
		if rep := g.chat(t, "r", one...); rep.status != 200 {
			t.Fatalf("request %d: %d %s", i, rep.status, rep.body)
		}
	}
	rep := g.chat(t, "r", one...)
	if rep.status != 429 || rep.header.Get("Retry-After") != "20" {
		t.Fatalf("fourth: %d Retry-After %q, want 429 with 20", rep.status, rep.header.Get("Retry-After"))
	}
	g.clock.Advance(20*time.Second - time.Millisecond)
	rep = g.chat(t, "r", one...)
	if rep.status != 429 || rep.header.Get("Retry-After") != "1" {
		t.Fatalf("1 ms before the refill: %d Retry-After %q, want 429 with 1", rep.status, rep.header.Get("Retry-After"))
	}
	if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, "try again in 1ms.") {
		t.Errorf("message %q does not say 1ms", msg)
	}
	g.clock.Advance(time.Millisecond)
	if rep := g.chat(t, "r", one...); rep.status != 200 {
		t.Fatalf("at the refill: %d %s", rep.status, rep.body)
	}
	if rep := g.chat(t, "r", one...); rep.status != 429 {
		t.Fatalf("right after the refill was spent: %d", rep.status)
	}
}

// TestKeyCapsHoldUnderConcurrency: 64 requests at once of a key with rpm = 10 get exactly 10
// served, and of a key with max_concurrent = 2 whose upstream holds every request, never more
// than 2 reach the upstream at once.
func TestKeyCapsHoldUnderConcurrency(t *testing.T) {
	ok, bad, refuse := newFake(t, "ok"), newFake(t, "bad"), newFake(t, "refuse")
	g := newGateway(t, capsConfig(ok, bad, refuse, "rpm = 10"), nil)
	one := []string{"Authorization", "Bearer hk-one"}
	var served, limited atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch rep := g.chat(t, "r", one...); rep.status {
			case 200:
				served.Add(1)
			case 429:
				limited.Add(1)
			default:
				t.Errorf("%d %s", rep.status, rep.body)
			}
		}()
	}
	wg.Wait()
	if served.Load() != 10 || limited.Load() != 54 {
		t.Errorf("served %d, limited %d; want 10 and 54", served.Load(), limited.Load())
	}

	var now, peak atomic.Int64
	release := make(chan struct{})
	ok2, bad2, refuse2 := newFake(t, "ok"), newFake(t, "bad"), newFake(t, "refuse")
	ok2.set(func(w http.ResponseWriter, r *http.Request) {
		n := now.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		defer now.Add(-1)
		if waitRelease(r, release) {
			okHandler("ok")(w, r)
		}
	})
	g2 := newGateway(t, capsConfig(ok2, bad2, refuse2, "max_concurrent = 2"), nil)
	var refused atomic.Int64
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rep := g2.chat(t, "r", one...); rep.status == 429 {
				refused.Add(1)
			}
		}()
	}
	settles(func() bool { return refused.Load() == 30 })
	close(release)
	wg.Wait()
	if peak.Load() > 2 || refused.Load() != 30 {
		t.Errorf("at most %d at once upstream, %d refused; want 2 and 30", peak.Load(), refused.Load())
	}
}

// TestKeyCapsHoldAcrossReload: a reload (Live.Replace with Previous) does not hand a key a
// second set of caps. A key with max_concurrent = 1 whose request is still under way on the
// replaced server is refused another on the new one, and gets its slot back when that request
// ends; a key whose rpm the reload left alone keeps its bucket, spent as it was; one whose rpm
// the reload changed starts a full bucket of the new size.
func TestKeyCapsHoldAcrossReload(t *testing.T) {
	up := newFake(t, "up")
	release := make(chan struct{})
	entered := make(chan struct{})
	var held atomic.Bool
	up.set(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		if strings.Contains(string(b), "hold me") && !held.Swap(true) {
			close(entered)
			if !waitRelease(r, release) {
				return
			}
		}
		okHandler("up")(w, r)
	})
	conf := func(rpmB int) *config.Config {
		text := keyBlock("one", "hk-one", "max_concurrent = 1") + keyBlock("few", "hk-few", "rpm = 2") +
			keyBlock("more", "hk-more", fmt.Sprintf("rpm = %d", rpmB)) +
			target("up", up.url(), "private") + "[routes.r]\ntargets = [\"up\"]\n"
		return parseText(t, text)
	}
	clock := health.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	newServer := func(cfg *config.Config, prev *server.Server) *server.Server {
		return newServerWith(t, server.Options{Config: cfg, Clock: clock, Previous: prev})
	}
	old := newServer(conf(1), nil)
	l := server.NewLive(old)
	g := &gateway{ts: serveLive(t, l)}
	one, few, more := []string{"Authorization", "Bearer hk-one"}, []string{"Authorization", "Bearer hk-few"},
		[]string{"Authorization", "Bearer hk-more"}
	for _, k := range [][]string{few, few, more} {
		if rep := g.chat(t, "r", k...); rep.status != 200 {
			t.Fatalf("%s before the reload: %d %s", k[1], rep.status, rep.body)
		}
	}
	done := make(chan reply)
	go func() {
		done <- g.post(t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"hold me"}]}`, one...)
	}()
	<-entered

	l.Replace(newServer(conf(3), old))
	if rep := g.chat(t, "r", one...); rep.status != 429 {
		t.Errorf("max_concurrent = 1 with a request under way on the replaced server: %d %s, want 429", rep.status, rep.body)
	}
	if rep := g.chat(t, "r", few...); rep.status != 429 {
		t.Errorf("rpm = 2, unchanged, spent before the reload: %d %s, want 429", rep.status, rep.body)
	}
	for i := 0; i < 3; i++ {
		if rep := g.chat(t, "r", more...); rep.status != 200 {
			t.Errorf("rpm 1 → 3, request %d after the reload: %d %s, want 200", i, rep.status, rep.body)
		}
	}
	close(release)
	if rep := <-done; rep.status != 200 {
		t.Fatalf("the request across the reload: %d %s", rep.status, rep.body)
	}
	var rep reply
	settles(func() bool { rep = g.chat(t, "r", one...); return rep.status != 429 })
	if rep.status != 200 {
		t.Errorf("once the old server's request ended: %d %s, want 200", rep.status, rep.body)
	}
}
