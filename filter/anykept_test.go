package filter_test

import (
	"math/rand/v2"
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
		ts := make([]*core.Target, r.IntN(5))
		av := avail{}
		for j := range ts {
			ts[j] = &core.Target{Name: string(rune('a' + j)), Index: j, Privacy: core.Privacy(r.IntN(2)),
				Tools: r.IntN(2) == 0, Vision: r.IntN(2) == 0, ContextWindow: []int{0, 1000, 8000}[r.IntN(3)]}
			if r.IntN(2) == 0 {
				av[ts[j].Name] = t0.Add(time.Duration(r.IntN(5)) * time.Second)
			}
		}
		req := &core.Request{Strict: r.IntN(2) == 0, Images: r.IntN(3) == 0, Tools: r.IntN(3) == 0,
			PromptTokensMin: r.IntN(2000), MaxTokens: r.IntN(4000)}
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
