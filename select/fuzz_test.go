package selector_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	selector "github.com/hayula/gateway/select"
)

// FuzzPick pins what every policy owes its caller, whatever the candidates' weights (the
// extremes included: TestWeightedHugeWeights), requests in flight, latencies and degraded marks:
// Pick answers one of the candidates and never panics, Order is a permutation of them, and a
// degraded candidate comes after every one that is not. Each byte of spec is one candidate.
func FuzzPick(f *testing.F) {
	f.Add([]byte{0}, uint64(0))
	f.Add([]byte{1, 2, 3}, uint64(7))
	f.Add([]byte{0xff, 0xff}, uint64(1<<63))
	f.Add([]byte{0x80, 0x81, 0x82, 0x83, 0x84}, uint64(math.MaxUint64))
	weights := []int{1, 2, 3, 1 << 20, math.MaxInt / 4, math.MaxInt/2 + 1, math.MaxInt - 1, math.MaxInt}
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, spec []byte, draw uint64) {
		if len(spec) == 0 || len(spec) > 16 {
			return
		}
		cs := make([]*core.Target, len(spec))
		for i, b := range spec {
			tg := &core.Target{Name: string(rune('a' + i)), Weight: weights[b&7], Stats: &core.Stats{}}
			for range b >> 3 & 3 {
				tg.Stats.Begin()
			}
			if lat := b >> 5 & 3; lat > 0 {
				tg.Stats.ObserveLatency(time.Duration(lat)*time.Millisecond, now)
			}
			tg.Stats.SetDegraded(b>>7 == 1)
			cs[i] = tg
		}
		// The draw the fuzzer chose, held to [0, n) as IntN's contract says.
		intN := func(n int) int {
			if n <= 0 {
				t.Fatalf("IntN(%d)", n)
			}
			return int(draw % uint64(n))
		}
		for _, p := range []core.Policy{core.PolicyOrdered, core.PolicyWeighted, core.PolicyLeastBusy, core.PolicyLatency} {
			s, err := selector.New(p, selector.Options{IntN: intN, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Pick(&core.Request{}, cs); !slices.Contains(cs, got) {
				t.Fatalf("%v: Pick = %v, not a candidate", p, got)
			}
			order := selector.Order(s, &core.Request{}, cs)
			if len(order) != len(cs) {
				t.Fatalf("%v: Order has %d of %d candidates", p, len(order), len(cs))
			}
			for _, c := range cs {
				if !slices.Contains(order, c) {
					t.Fatalf("%v: Order left out %s", p, c.Name)
				}
			}
			seenDegraded := false
			for _, c := range order {
				if c.Stats.Degraded() {
					seenDegraded = true
				} else if seenDegraded {
					t.Fatalf("%v: %s, not degraded, comes after a degraded candidate", p, c.Name)
				}
			}
		}
	})
}
