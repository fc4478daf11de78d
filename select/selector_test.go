package selector_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	selector "github.com/hayula/gateway/select"
)

func target(name string, weight int) *core.Target {
	return &core.Target{Name: name, Weight: weight, Stats: &core.Stats{}}
}

func names(ts []*core.Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func mustNew(t testing.TB, p core.Policy, o selector.Options) selector.Selector {
	t.Helper()
	s, err := selector.New(p, o)
	if err != nil {
		t.Fatalf("New(%v): %v", p, err)
	}
	return s
}

func TestNewUnknownPolicy(t *testing.T) {
	_, err := selector.New(core.Policy(99), selector.Options{})
	var unknown *selector.UnknownPolicyError
	if !errors.As(err, &unknown) || unknown.Policy != 99 {
		t.Fatalf("New(99) error = %v, want *UnknownPolicyError for 99", err)
	}
	for _, p := range []core.Policy{core.PolicyOrdered, core.PolicyWeighted, core.PolicyLeastBusy, core.PolicyLatency} {
		if s, err := selector.New(p, selector.Options{}); err != nil || s == nil {
			t.Errorf("New(%v) = %v, %v", p, s, err)
		}
	}
}

func TestOrdered(t *testing.T) {
	s := mustNew(t, core.PolicyOrdered, selector.Options{})
	cs := []*core.Target{target("a", 1), target("b", 9), target("c", 1)}
	if got := s.Pick(&core.Request{}, cs); got != cs[0] {
		t.Errorf("Pick = %s, want a", got.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, names(selector.Order(s, &core.Request{}, cs))); diff != "" {
		t.Errorf("Order (-want +got):\n%s", diff)
	}
}

// cycle is a fake IntN that walks 0, 1, …, n-1 and wraps, so that over a multiple of n draws
// every value comes up equally often and the picks follow the weights exactly.
type cycle struct {
	i    int
	seen []int
}

func (c *cycle) IntN(n int) int {
	c.seen = append(c.seen, n)
	v := c.i % n
	c.i++
	return v
}

func TestWeighted(t *testing.T) {
	cases := []struct {
		name    string
		weights []int
		want    map[string]int
	}{
		{"proportional", []int{1, 3, 6}, map[string]int{"t0": 100, "t1": 300, "t2": 600}},
		{"equal", []int{2, 2}, map[string]int{"t0": 500, "t1": 500}},
		{"weight below 1 counts as 1", []int{0, 1, -5, 2}, map[string]int{"t0": 200, "t1": 200, "t2": 200, "t3": 400}},
		{"single", []int{7}, map[string]int{"t0": 1000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cs []*core.Target
			total := 0
			for i, w := range tc.weights {
				cs = append(cs, target("t"+string(rune('0'+i)), w))
				total += max(w, 1)
			}
			fake := &cycle{}
			s := mustNew(t, core.PolicyWeighted, selector.Options{IntN: fake.IntN})
			got := map[string]int{}
			for range 1000 {
				got[s.Pick(&core.Request{}, cs).Name]++
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("picks (-want +got):\n%s", diff)
			}
			for _, n := range fake.seen {
				if n != total {
					t.Fatalf("IntN(%d), want IntN(total weight %d)", n, total)
				}
			}
		})
	}
}

func TestWeightedDefaultRandomness(t *testing.T) {
	s := mustNew(t, core.PolicyWeighted, selector.Options{})
	cs := []*core.Target{target("a", 1), target("b", 1)}
	seen := map[string]bool{}
	for range 200 {
		seen[s.Pick(&core.Request{}, cs).Name] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Errorf("200 picks over two equal weights only saw %v", seen)
	}
}

func TestLeastBusy(t *testing.T) {
	cases := []struct {
		name     string
		inFlight []int
		want     string
		order    []string
	}{
		{"fewest wins", []int{3, 1, 2}, "t1", []string{"t1", "t2", "t0"}},
		{"ties go to chain order", []int{2, 1, 1, 1}, "t1", []string{"t1", "t2", "t3", "t0"}},
		{"all idle is ordered", []int{0, 0, 0}, "t0", []string{"t0", "t1", "t2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cs []*core.Target
			for i, n := range tc.inFlight {
				tg := target("t"+string(rune('0'+i)), 1)
				for range n {
					tg.Stats.Begin()
				}
				cs = append(cs, tg)
			}
			s := mustNew(t, core.PolicyLeastBusy, selector.Options{})
			if got := s.Pick(&core.Request{}, cs); got.Name != tc.want {
				t.Errorf("Pick = %s, want %s", got.Name, tc.want)
			}
			if diff := cmp.Diff(tc.order, names(selector.Order(s, &core.Request{}, cs))); diff != "" {
				t.Errorf("Order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLatency(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name    string
		latency []time.Duration // 0: never observed
		want    string
		order   []string
	}{
		{"fastest wins", []time.Duration{300 * ms, 100 * ms, 200 * ms}, "t1", []string{"t1", "t2", "t0"}},
		{"never observed goes first", []time.Duration{100 * ms, 0, 50 * ms}, "t1", []string{"t1", "t2", "t0"}},
		{"several unobserved: chain order, then observed", []time.Duration{100 * ms, 0, 50 * ms, 0}, "t1", []string{"t1", "t3", "t2", "t0"}},
		{"ties go to chain order", []time.Duration{200 * ms, 100 * ms, 100 * ms}, "t1", []string{"t1", "t2", "t0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cs []*core.Target
			for i, l := range tc.latency {
				tg := target("t"+string(rune('0'+i)), 1)
				if l > 0 {
					tg.Stats.ObserveLatency(l, time.Now())
				}
				cs = append(cs, tg)
			}
			s := mustNew(t, core.PolicyLatency, selector.Options{})
			if got := s.Pick(&core.Request{}, cs); got.Name != tc.want {
				t.Errorf("Pick = %s, want %s", got.Name, tc.want)
			}
			if diff := cmp.Diff(tc.order, names(selector.Order(s, &core.Request{}, cs))); diff != "" {
				t.Errorf("Order (-want +got):\n%s", diff)
			}
		})
	}
}

// A target measured once at its worst (a cold model load) is not passed over for good: its
// estimate stops counting after core.LatencyStale, so the policy tries it again, and the new
// sample replaces the old estimate instead of being folded into it.
func TestLatencyStaleEstimate(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s := mustNew(t, core.PolicyLatency, selector.Options{Now: func() time.Time { return now }})
	cold, warm := target("cold", 1), target("warm", 1)
	cold.Stats.ObserveLatency(30*time.Second, now)
	warm.Stats.ObserveLatency(200*time.Millisecond, now)
	cs := []*core.Target{cold, warm}
	for _, step := range []struct {
		after time.Duration
		want  string
	}{{0, "warm"}, {core.LatencyStale - time.Second, "warm"}} {
		now = time.Unix(1_000_000, 0).Add(step.after)
		warm.Stats.ObserveLatency(200*time.Millisecond, now) // warm keeps serving
		if got := s.Pick(&core.Request{}, cs); got.Name != step.want {
			t.Fatalf("after %v: Pick = %s, want %s", step.after, got.Name, step.want)
		}
	}
	now = time.Unix(1_000_000, 0).Add(core.LatencyStale)
	warm.Stats.ObserveLatency(200*time.Millisecond, now)
	if got := s.Pick(&core.Request{}, cs); got.Name != "cold" {
		t.Fatalf("once cold's estimate is stale: Pick = %s, want cold, to measure it again", got.Name)
	}
	cold.Stats.ObserveLatency(100*time.Millisecond, now) // warm now, after its load
	if got := cold.Stats.LatencyAt(now); got != 100*time.Millisecond {
		t.Errorf("the stale estimate was folded into, not replaced: %v, want 100ms", got)
	}
	if got := s.Pick(&core.Request{}, cs); got.Name != "cold" {
		t.Errorf("Pick = %s, want cold, now the faster", got.Name)
	}
}

func TestEmptyCandidates(t *testing.T) {
	for _, p := range []core.Policy{core.PolicyOrdered, core.PolicyWeighted, core.PolicyLeastBusy, core.PolicyLatency} {
		s := mustNew(t, p, selector.Options{})
		if got := s.Pick(&core.Request{}, nil); got != nil {
			t.Errorf("%v: Pick(nil) = %v, want nil", p, got)
		}
		if got := selector.Order(s, &core.Request{}, nil); len(got) != 0 {
			t.Errorf("%v: Order(nil) = %v, want empty", p, got)
		}
	}
}

// rogue picks a target that is not among the candidates.
type rogue struct{}

func (rogue) Pick(*core.Request, []*core.Target) *core.Target { return target("x", 1) }

func TestOrderSurvivesABadSelector(t *testing.T) {
	cs := []*core.Target{target("a", 1), target("b", 1)}
	if diff := cmp.Diff([]string{"a", "b"}, names(selector.Order(rogue{}, &core.Request{}, cs))); diff != "" {
		t.Errorf("Order (-want +got):\n%s", diff)
	}
}

func TestOrderLeavesCandidatesAlone(t *testing.T) {
	cs := []*core.Target{target("a", 1), target("b", 5), target("c", 1)}
	fake := &cycle{i: 3} // first draw lands on b
	s := mustNew(t, core.PolicyWeighted, selector.Options{IntN: fake.IntN})
	got := selector.Order(s, &core.Request{}, cs)
	if len(got) != 3 || got[0].Name != "b" {
		t.Errorf("Order = %v, want b first and all three", names(got))
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, names(cs)); diff != "" {
		t.Errorf("candidates changed (-want +got):\n%s", diff)
	}
}

func BenchmarkPick(b *testing.B) {
	cs := make([]*core.Target, 5)
	for i := range cs {
		cs[i] = target("t"+string(rune('0'+i)), i+1)
		for range 5 - i {
			cs[i].Stats.Begin()
		}
		cs[i].Stats.ObserveLatency(time.Duration(5-i)*time.Millisecond, time.Now())
	}
	req := &core.Request{}
	for _, p := range []core.Policy{core.PolicyOrdered, core.PolicyWeighted, core.PolicyLeastBusy, core.PolicyLatency} {
		s := mustNew(b, p, selector.Options{})
		b.Run(p.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Pick(req, cs)
			}
		})
	}
}

// TestDegradedPreference: every policy passes over degraded candidates while another is left,
// and still picks among degraded ones, by its own rule, when all are.
func TestDegradedPreference(t *testing.T) {
	// Each policy's own rule would pick "a" first: first in order, heaviest, least busy, fastest.
	build := func(deg ...string) []*core.Target {
		a, b, c := target("a", 6), target("b", 1), target("c", 1)
		b.Stats.Begin()
		c.Stats.Begin()
		c.Stats.Begin()
		now := time.Now()
		a.Stats.ObserveLatency(time.Millisecond, now)
		b.Stats.ObserveLatency(2*time.Millisecond, now)
		c.Stats.ObserveLatency(3*time.Millisecond, now)
		cs := []*core.Target{a, b, c}
		for _, tg := range cs {
			for _, d := range deg {
				if tg.Name == d {
					tg.Stats.SetDegraded(true)
				}
			}
		}
		return cs
	}
	cases := []struct {
		degraded []string
		want     []string // Order, the same under every policy here
	}{
		{nil, []string{"a", "b", "c"}},
		{[]string{"a"}, []string{"b", "c", "a"}},
		{[]string{"a", "b"}, []string{"c", "a", "b"}},
		{[]string{"a", "b", "c"}, []string{"a", "b", "c"}},
	}
	for _, p := range []core.Policy{core.PolicyOrdered, core.PolicyWeighted, core.PolicyLeastBusy, core.PolicyLatency} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/degraded %v", p, tc.degraded), func(t *testing.T) {
				// IntN always 0: weighted picks the first candidate it is offered.
				s := mustNew(t, p, selector.Options{IntN: func(int) int { return 0 }})
				cs := build(tc.degraded...)
				if diff := cmp.Diff(tc.want, names(selector.Order(s, &core.Request{}, cs))); diff != "" {
					t.Errorf("Order (-want +got):\n%s", diff)
				}
				if got := s.Pick(&core.Request{}, cs); got.Name != tc.want[0] {
					t.Errorf("Pick = %s, want %s", got.Name, tc.want[0])
				}
			})
		}
	}
}

// edges is a fake IntN that answers 0 and n-1 in turn, the ends of the draw, and records every n.
type edges struct {
	i    int
	seen []int
}

func (e *edges) IntN(n int) int {
	e.seen = append(e.seen, n)
	e.i++
	if e.i%2 == 1 {
		return 0
	}
	return n - 1
}

// Weights are any int of at least 1 (config sets no ceiling): weights whose sum passes the
// largest int made the draw's bound wrap, and math/rand/v2's IntN panicked on every request of the
// route. The draw now stays positive, each end of it picks the first and the last candidate, and a
// weight of 1 beside huge ones can still be drawn.
func TestWeightedHugeWeights(t *testing.T) {
	cases := []struct {
		name    string
		weights []int
	}{
		{"two at the largest int", []int{math.MaxInt, math.MaxInt}},
		{"the largest int beside 1", []int{math.MaxInt, 1}},
		{"1 beside the largest int", []int{1, math.MaxInt}},
		{"sum just past the largest int", []int{math.MaxInt / 2, math.MaxInt/2 + 1, 1}},
		{"a quarter of the largest int, four times", []int{math.MaxInt/4 + 1, math.MaxInt/4 + 1, math.MaxInt/4 + 1, math.MaxInt/4 + 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cs []*core.Target
			for i, w := range tc.weights {
				cs = append(cs, target("t"+string(rune('0'+i)), w))
			}
			fake := &edges{}
			s := mustNew(t, core.PolicyWeighted, selector.Options{IntN: fake.IntN})
			if got := s.Pick(&core.Request{}, cs); got != cs[0] {
				t.Errorf("draw 0 picked %s, want the first, t0", got.Name)
			}
			if got := s.Pick(&core.Request{}, cs); got != cs[len(cs)-1] {
				t.Errorf("last draw picked %s, want the last, %s", got.Name, cs[len(cs)-1].Name)
			}
			for _, n := range fake.seen {
				if n <= 0 {
					t.Fatalf("IntN(%d): the total weight wrapped", n)
				}
			}
			// The real source as well: it panics on a bound below 1.
			real := mustNew(t, core.PolicyWeighted, selector.Options{})
			if got := real.Pick(&core.Request{}, cs); got == nil {
				t.Fatal("Pick = nil")
			}
		})
	}
}
