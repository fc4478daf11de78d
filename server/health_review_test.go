package server_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fail open must try the benched targets soonest to recover first whatever the route's policy: a
// weighted (or any other) policy orders healthy candidates, not the ones health had set aside.
func TestFailOpenOrderBeatsPolicy(t *testing.T) {
	a, b := newFake(t, "a"), newFake(t, "b")
	cfg := target("a", a.url(), "private", "weight = 1") + target("b", b.url(), "private", "weight = 1000000") + `
[cooldown]
failures = 1
base = "30s"
max = "300s"

[routes.ra]
targets = ["a"]

[routes.rb]
targets = ["b"]

[routes.r]
targets = ["a", "b"]
policy = "weighted"
`
	g := newGateway(t, cfg, nil)
	a.set(errHandler(500, "internal", "down"))
	b.set(errHandler(500, "internal", "down"))
	g.chat(t, "ra") // a cools until T+30s
	g.clock.Advance(10 * time.Second)
	g.chat(t, "rb") // b cools until T+40s
	a.set(okHandler("a"))
	rep := g.chat(t, "r")
	if got := rep.header.Get("x-hayula-chain"); rep.status != 200 || got != "a" {
		t.Fatalf("status %d chain %q, want a (soonest to recover) alone", rep.status, got)
	}
}

// After a cooldown ends one request probes the target; another that planned before the probe
// started must not follow it in while the probe is out (CONFIG.md: probing "the one request let
// through after a cooldown is in flight: skipped until it reports").
func TestProbeAdmitsOne(t *testing.T) {
	x, a := newFake(t, "x"), newFake(t, "a")
	cfg := target("x", x.url(), "private") + target("a", a.url(), "private") + `
[cooldown]
failures = 1
base = "30s"

[routes.ra]
targets = ["a"]

[routes.r]
targets = ["x", "a"]
`
	g := newGateway(t, cfg, nil)
	a.set(errHandler(500, "internal", "down"))
	g.chat(t, "ra") // a cools until T+30s
	g.clock.Advance(31 * time.Second)
	// Both requests plan while a's cooldown is over and no probe is out, then meet at x, which
	// fails them both; only then do they reach a.
	var arrived sync.WaitGroup
	arrived.Add(2)
	x.set(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		arrived.Wait()
		errHandler(500, "internal", "down")(w, r)
	})
	// a's probe hangs until the test has seen the other request finish, or (the bug) until a
	// second request reaches a too.
	release := make(chan struct{})
	var once sync.Once
	var after atomic.Int32
	a.set(func(w http.ResponseWriter, r *http.Request) {
		if after.Add(1) == 2 {
			once.Do(func() { close(release) })
		}
		if waitRelease(r, release) {
			okHandler("a")(w, r)
		}
	})
	body := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
	done := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := g.ts.Client().Post(g.ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				done <- -1
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			done <- resp.StatusCode
		}()
	}
	first := <-done // the request that did not take the probe: x's failure, as it would be at plan time
	once.Do(func() { close(release) })
	second := <-done
	if got := a.hits.Load(); got != 2 {
		// hits counts the cooldown's failure too.
		t.Errorf("a was hit %d times after its cooldown, want 1 (the probe)", got-1)
	}
	if first != 500 || second != 200 {
		t.Errorf("statuses %d then %d, want 500 (x's failure) then 200 (the probe)", first, second)
	}
}
