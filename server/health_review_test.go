package server_test

import (
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
