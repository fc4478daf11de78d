package filter_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
)

// TestAnyKeptAgreesWithRun: over the standard chain, whose one fail-open stage is last, AnyKept
// says whether Run keeps anything, whatever health says (model "auto" moves off a route on it,
// and never for health), and allocates nothing when it keeps a target.
func TestAnyKeptAgreesWithRun(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for i := range 20000 {
		ts, av, req := randomRoute(r, 5, 3)
		stages := filter.Standard(av)
		got, want := filter.AnyKept(req, ts, stages), len(filter.Run(req, ts, stages).Kept) > 0
		if got != want {
			t.Fatalf("case %d: AnyKept %v, Run kept something %v", i, got, want)
		}
	}
	ts := []*core.Target{{Name: "a", Vision: true}}
	req := &core.Request{Images: true}
	stages := filter.Standard(avail{"a": t0})
	if n := testing.AllocsPerRun(100, func() { filter.AnyKept(req, ts, stages) }); n != 0 {
		t.Errorf("AnyKept allocated %v times", n)
	}
}

// TestAnyKeptOrDropsAgreesWithRun: AnyKeptOrDrops answers as AnyKept does, and when no target
// passes, its drops are Run's, stage by stage (model "auto" names the filters that left the
// route it moves off no target from them), up to ten targets, past the eight it keeps on the
// stack. When a target passes it allocates nothing, the targets dropped before it included.
func TestAnyKeptOrDropsAgreesWithRun(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 20000 {
		ts, av, req := randomRoute(r, 11, 2)
		stages := filter.Standard(av)
		ok, drops := filter.AnyKeptOrDrops(req, ts, stages)
		if want := filter.AnyKept(req, ts, stages); ok != want {
			t.Fatalf("case %d: AnyKeptOrDrops %v, AnyKept %v", i, ok, want)
		}
		var want []filter.Drop
		if !ok {
			want = filter.Run(req, ts, stages).Drops
		}
		if !slices.Equal(drops, want) {
			t.Fatalf("case %d: drops %q, want %q", i, drops, want)
		}
	}
	ts := []*core.Target{{Name: "a"}, {Name: "b", Vision: true}}
	req := &core.Request{Images: true}
	stages := filter.Standard(avail{"a": t0})
	if n := testing.AllocsPerRun(100, func() { filter.AnyKeptOrDrops(req, ts, stages) }); n != 0 {
		t.Errorf("AnyKeptOrDrops allocated %v times", n)
	}
}

// randomRoute is a route of fewer than n targets, each private or public, with or without tools
// and vision, of no, a small or a larger window, and cooling down or not, and a request that
// asks for images, and for tools, one time in oneIn each, strict or not, of any length.
func randomRoute(r *rand.Rand, n, oneIn int) ([]*core.Target, avail, *core.Request) {
	ts := make([]*core.Target, r.IntN(n))
	av := avail{}
	for j := range ts {
		ts[j] = &core.Target{Name: string(rune('a' + j)), Index: j, Privacy: core.Privacy(r.IntN(2)),
			Tools: r.IntN(2) == 0, Vision: r.IntN(2) == 0, ContextWindow: []int{0, 1000, 8000}[r.IntN(3)]}
		if r.IntN(2) == 0 {
			av[ts[j].Name] = t0.Add(time.Duration(r.IntN(5)) * time.Second)
		}
	}
	req := &core.Request{Strict: r.IntN(2) == 0, Images: r.IntN(oneIn) == 0, Tools: r.IntN(oneIn) == 0,
		PromptTokensMin: r.IntN(2000), MaxTokens: r.IntN(4000)}
	return ts, av, req
}
