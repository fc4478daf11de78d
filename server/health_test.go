package server_test

import (
	"net/http"
	"testing"
	"time"
)

func TestCooldownAndFailOpen(t *testing.T) {
	a, b := newFake(t, "a"), newFake(t, "b")
	cfg := target("a", a.url(), "private") + target("b", b.url(), "private") + `
[cooldown]
failures = 3
base = "30s"
max = "300s"

[routes.r]
targets = ["a", "b"]
`
	g := newGateway(t, cfg, nil)
	a.set(errHandler(500, "internal", "down"))
	for i := 0; i < 3; i++ {
		if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "a→b (served by b)" {
			t.Fatalf("request %d: chain %q", i, rep.header.Get("x-hayula-chain"))
		}
	}
	// a is now cooling: it is skipped, not tried.
	rep := g.chat(t, "r")
	if got := rep.header.Get("x-hayula-chain"); got != "b" {
		t.Fatalf("cooling target tried: chain %q", got)
	}
	if a.hits.Load() != 3 {
		t.Fatalf("a hits %d, want 3", a.hits.Load())
	}

	// b fails too, three times: both cooling. Health never denies service: both are tried,
	// soonest to recover first (a cooled first).
	b.set(errHandler(500, "internal", "down"))
	for i := 0; i < 3; i++ {
		g.chat(t, "r")
	}
	a.set(okHandler("a"))
	before := g.srv.FailedOpen()
	rep = g.chat(t, "r")
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "a" {
		t.Fatalf("fail-open: status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
	}
	if g.srv.FailedOpen() <= before {
		t.Error("fail-open was not counted")
	}

	// After the cooldown ends a probe is let through, and a success restores the target.
	b.set(okHandler("b"))
	g.clock.Advance(301 * time.Second)
	rep = g.chat(t, "r")
	if rep.status != 200 {
		t.Fatalf("status %d", rep.status)
	}
	if st := g.srv.Health().Snapshot(mustTarget(t, g, "a")); st.Cooling {
		t.Errorf("a still cooling after a successful probe: %+v", st)
	}
}

func TestRetryAfterSetsCooldown(t *testing.T) {
	a, b := newFake(t, "a"), newFake(t, "b")
	g := newGateway(t, target("a", a.url(), "private")+target("b", b.url(), "private")+"[routes.r]\ntargets = [\"a\", \"b\"]\n", nil)
	a.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		errHandler(429, "rate_limit_exceeded", "slow down")(w, r)
	})
	if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "a→b (served by b)" {
		t.Fatalf("chain %q", rep.header.Get("x-hayula-chain"))
	}
	st := g.srv.Health().Snapshot(mustTarget(t, g, "a"))
	if !st.Cooling || st.Until.Sub(g.clock.Now()) != 120*time.Second {
		t.Fatalf("a 429 with Retry-After 120 should cool a for 120s: %+v", st)
	}
	g.clock.Advance(119 * time.Second)
	if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "b" {
		t.Fatalf("chain %q while a cools", rep.header.Get("x-hayula-chain"))
	}
}
