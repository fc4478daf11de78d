package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hayula/gateway/server"
)

// TestOpenRouterResetInBody: OpenRouter answers a :free model's per-minute cap 429 with the reset
// in the body (X-RateLimit-Reset, milliseconds since the epoch, in error.metadata.headers) and no
// Retry-After header. The gateway reads it as a Retry-After: the target cools until the reset
// (not for the generic backoff, nor only after `failures` such answers), capped by cooldown.max,
// and a client that nothing else answered is told when to come back.
func TestOpenRouterResetInBody(t *testing.T) {
	or := newFake(t, "or")
	cfg := target("or", or.url(), "public", "max_retries = 1") +
		"[cooldown]\nmax = \"120s\"\n\n[routes.r]\ntargets = [\"or\"]\n"
	var (
		mu    sync.Mutex
		slept []time.Duration
	)
	g := newGateway(t, cfg, nil, func(o *server.Options) { // the harness caps retry waits at 50ms
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			slept = append(slept, d)
			mu.Unlock()
			return ctx.Err()
		}
	})
	resetIn := func(d time.Duration) {
		reset := g.clock.Now().Add(d).UnixMilli()
		or.set(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, `{"error":{"message":"Rate limit exceeded: free-models-per-min. ","code":429,"metadata":{"headers":{"X-RateLimit-Limit":"20","X-RateLimit-Remaining":"0","X-RateLimit-Reset":"%d"},"provider_name":null}},"user_id":"user_1"}`, reset)
		})
	}

	resetIn(40 * time.Second)
	rep := g.chat(t, "r")
	if rep.status != http.StatusTooManyRequests || rep.header.Get("Retry-After") != "40" {
		t.Errorf("client got %d with Retry-After %q, want 429 with 40: %s", rep.status, rep.header.Get("Retry-After"), rep.body)
	}
	if n := or.hits.Load(); n != 1 {
		t.Errorf("or asked %d times: a reset 40s away is past the retry cap, so no same-target retry", n)
	}
	st := g.srv.Health().Snapshot(mustTarget(t, g, "or"))
	if !st.Cooling || st.Until.Sub(g.clock.Now()) != 40*time.Second {
		t.Errorf("one 429 with its reset 40s away should cool or for 40s: %+v", st)
	}

	// Past cooldown.max: the cooldown is capped, the client still hears the reset.
	g.clock.Advance(time.Minute)
	resetIn(time.Hour)
	rep = g.chat(t, "r")
	if rep.status != http.StatusTooManyRequests || rep.header.Get("Retry-After") != "3600" {
		t.Errorf("client got %d with Retry-After %q, want 429 with 3600", rep.status, rep.header.Get("Retry-After"))
	}
	st = g.srv.Health().Snapshot(mustTarget(t, g, "or"))
	if !st.Cooling || st.Until.Sub(g.clock.Now()) != 2*time.Minute {
		t.Errorf("a reset an hour away should cool or for cooldown.max (120s): %+v", st)
	}

	// A reset within the retry cap is waited for, and the target asked again.
	g.clock.Advance(3 * time.Minute)
	before := or.hits.Load()
	mu.Lock()
	slept = nil
	mu.Unlock()
	resetIn(20 * time.Millisecond)
	g.chat(t, "r")
	if n := or.hits.Load() - before; n != 2 {
		t.Errorf("or asked %d times for a reset 20ms away with max_retries 1, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(slept) != 1 || slept[0] != 20*time.Millisecond {
		t.Errorf("slept %v before the retry, want [20ms]", slept)
	}
}
