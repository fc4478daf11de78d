package server_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestGuardWaitsUnderEveryPolicy: a guarded target is one of last resort under every policy, not
// only ordered: a policy that picks it before anything failed must leave it for later, not lose
// it. Under latency (whose unmeasured targets come first: a tail that is only entered after an
// overflow is never measured) and least-busy (the idle tail beside busy local targets), the
// loop passed the guarded tail by at its first pick and dropped it from the request, so a prompt
// that overflowed every local target was answered 400 and the tail was never asked.
func TestGuardWaitsUnderEveryPolicy(t *testing.T) {
	for _, policy := range []string{"ordered", "latency", "least-busy"} {
		t.Run(policy, func(t *testing.T) {
			a, b, tail := newFake(t, "a"), newFake(t, "b"), newFake(t, "tail")
			cfg := target("a", a.url(), "private") + target("b", b.url(), "private") + target("tail", tail.url(), "public") +
				fmt.Sprintf("[routes.r]\ntargets = [\"a\", \"b\", \"tail\"]\npolicy = %q\nguard = { tail = [\"overflow\"] }\n", policy)
			g := newGateway(t, cfg, nil)
			// a and b served before: latency has measured them, and not the tail.
			for range 2 {
				if rep := g.chat(t, "r"); rep.status != 200 {
					t.Fatalf("warm-up: %d %s", rep.status, rep.body)
				}
			}
			if policy == "least-busy" {
				// a and b are busy with other requests; the tail is idle.
				for _, n := range []string{"a", "b"} {
					st := mustTarget(t, g, n).Stats
					st.Begin()
					t.Cleanup(st.End)
				}
			}
			// Explain never shows the tail first: before anything failed the loop picks among the
			// rest. After that the tail is a candidate like b, in the place the policy gives it.
			x := g.explain(t, "r")
			if len(x.Order) != 3 || x.Order[0] != "a" {
				t.Errorf("explain order %v, want a first", x.Order)
			}
			a.set(errHandler(400, "context_length_exceeded", "This model's maximum context length is 10 tokens"))
			b.set(errHandler(400, "context_length_exceeded", "This model's maximum context length is 10 tokens"))
			rep := g.chat(t, "r")
			if rep.status != 200 || tail.hits.Load() != 1 {
				t.Fatalf("status %d, tail asked %d times, chain %q: %s", rep.status, tail.hits.Load(),
					rep.header.Get("x-hayula-chain"), rep.body)
			}
			// Once a's overflow opened the guard, the tail is a candidate like b: the policy
			// chooses between them (ordered: b first; latency: the unmeasured tail first).
			if got := rep.header.Get("x-hayula-chain"); !strings.HasPrefix(got, "a→") || !strings.HasSuffix(got, "tail (served by tail)") {
				t.Errorf("x-hayula-chain %q, want a first and the tail serving", got)
			}
			// Explain's order is the chain the request walked (TestExplainOrderWithGuardMidChain).
			if want := strings.Join(x.Order[:slices.Index(x.Order, "tail")+1], "→") + " (served by tail)"; rep.header.Get("x-hayula-chain") != want {
				t.Errorf("x-hayula-chain %q, explain's order %v", rep.header.Get("x-hayula-chain"), x.Order)
			}
		})
	}
}

// TestGuardWithReserve: when health set every unguarded target aside and only the guarded tail
// is left, nothing has failed to open it: the request goes to the benched targets (health never
// denies service), and once they overflow the tail is entered, not lost.
func TestGuardWithReserve(t *testing.T) {
	a, b, tail := newFake(t, "a"), newFake(t, "b"), newFake(t, "tail")
	cfg := target("a", a.url(), "private") + target("b", b.url(), "private") + target("tail", tail.url(), "public") +
		"[cooldown]\nfailures = 1\n\n[routes.r]\ntargets = [\"a\", \"b\", \"tail\"]\nguard = { tail = [\"overflow\", \"server_error\"] }\n"
	g := newGateway(t, cfg, nil)
	a.set(errHandler(500, "internal", "boom"))
	b.set(errHandler(500, "internal", "boom"))
	if rep := g.chat(t, "r"); rep.status != 200 || tail.hits.Load() != 1 {
		t.Fatalf("first: %d, tail %d: %s", rep.status, tail.hits.Load(), rep.body)
	}
	// a and b are cooling now; both overflow when tried.
	a.set(errHandler(400, "context_length_exceeded", "This model's maximum context length is 10 tokens"))
	b.set(errHandler(400, "context_length_exceeded", "This model's maximum context length is 10 tokens"))
	rep := g.chat(t, "r")
	if rep.status != 200 || tail.hits.Load() != 2 || a.hits.Load() != 2 {
		t.Fatalf("status %d, hits a %d tail %d, chain %q: %s", rep.status, a.hits.Load(), tail.hits.Load(),
			rep.header.Get("x-hayula-chain"), rep.body)
	}
}
