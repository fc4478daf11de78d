// Package selector owns choosing one target among those the filters left. It gets candidates that
// are already eligible, so no policy looks at eligibility (health that sets a target aside, or
// capabilities); a policy only orders. The one health signal a policy sees is a preference: every
// policy passes over degraded candidates (core.Stats.Degraded: answering health checks slowly)
// while a candidate that is not degraded remains, and picks among the degraded ones by its own
// rule when nothing else is left. A route's policy is parsed at config load (core.ParsePolicy,
// which rejects unknown names) and built once per route by New when the server is made from the
// config, so no policy name reaches the request path.
package selector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hayula/gateway/core"
)

// Selector picks one target for a request.
type Selector interface {
	// Pick chooses one of candidates (non-empty, all eligible) for req. It returns nil only when
	// candidates is empty.
	Pick(req *core.Request, candidates []*core.Target) *core.Target
}

// Options are the selectors' dependencies.
type Options struct {
	// IntN returns a random int in [0, n); the weighted policy draws from it. nil means
	// math/rand/v2.IntN. It must be safe for concurrent use.
	IntN func(n int) int
	// Now is the time the latency policy judges an estimate's age by (core.LatencyStale); the
	// clock that timed the samples. nil means time.Now.
	Now func() time.Time
}

// UnknownPolicyError is New's answer to a policy it does not know.
type UnknownPolicyError struct {
	Policy core.Policy
}

func (e *UnknownPolicyError) Error() string {
	return fmt.Sprintf("selector: unknown policy %d", e.Policy)
}

// New builds the selector for policy p.
func New(p core.Policy, o Options) (Selector, error) {
	switch p {
	case core.PolicyOrdered:
		return ordered{}, nil
	case core.PolicyWeighted:
		intN := o.IntN
		if intN == nil {
			intN = rand.IntN
		}
		return weighted{intN: intN}, nil
	case core.PolicyLeastBusy:
		return leastBusy{}, nil
	case core.PolicyLatency:
		now := o.Now
		if now == nil {
			now = time.Now
		}
		return latency{now: now}, nil
	}
	return nil, &UnknownPolicyError{Policy: p}
}

// Order is the order s would try candidates in: Pick, remove, repeat. It is for explain, and
// leaves candidates untouched.
func Order(s Selector, req *core.Request, candidates []*core.Target) []*core.Target {
	rest := slices.Clone(candidates)
	out := make([]*core.Target, 0, len(rest))
	for len(rest) > 0 {
		i := slices.Index(rest, s.Pick(req, rest))
		if i < 0 {
			// A selector that picks outside its candidates breaks its contract; show the rest in
			// chain order rather than loop or hide them.
			return append(out, rest...)
		}
		out = append(out, rest[i])
		rest = slices.Delete(rest, i, i+1)
	}
	return out
}

func degraded(t *core.Target) bool { return t.Stats != nil && t.Stats.Degraded() }

// preferred narrows cs to its candidates that are not degraded, when some are and some are not.
// It allocates only in that mixed case, which is rare.
func preferred(cs []*core.Target) []*core.Target {
	n := 0
	for _, t := range cs {
		if degraded(t) {
			n++
		}
	}
	if n == 0 || n == len(cs) {
		return cs
	}
	out := make([]*core.Target, 0, len(cs)-n)
	for _, t := range cs {
		if !degraded(t) {
			out = append(out, t)
		}
	}
	return out
}

var (
	_ Selector = (*ordered)(nil)
	_ Selector = (*weighted)(nil)
	_ Selector = (*leastBusy)(nil)
	_ Selector = (*latency)(nil)
)

// ordered tries candidates in chain order.
type ordered struct{}

func (ordered) Pick(_ *core.Request, cs []*core.Target) *core.Target {
	if len(cs) == 0 {
		return nil
	}
	cs = preferred(cs)
	return cs[0]
}

// weighted picks at random, each candidate with probability Weight/total. A weight below 1
// counts as 1, as config guarantees at least 1. Config sets no ceiling: when the weights' sum would
// pass the largest int, every weight is halved (and kept at least 1) until it does not, so that
// the draw's bound never wraps (TestWeightedHugeWeights).
type weighted struct {
	intN func(n int) int
}

func weightOf(t *core.Target) int { return max(t.Weight, 1) }

func (w weighted) Pick(_ *core.Request, cs []*core.Target) *core.Target {
	if len(cs) == 0 {
		return nil
	}
	cs = preferred(cs)
	total, heaviest, wraps := 0, 0, false
	for _, t := range cs {
		wt := weightOf(t)
		heaviest = max(heaviest, wt)
		wraps = wraps || wt > math.MaxInt-total
		total += wt
	}
	var shift uint
	if wraps {
		// Each weight at most limit, and at least 1, sums to at most len(cs)·limit.
		limit := math.MaxInt / len(cs)
		for heaviest>>shift > limit {
			shift++
		}
		total = 0
		for _, t := range cs {
			total += max(weightOf(t)>>shift, 1)
		}
	}
	r := w.intN(total)
	for _, t := range cs {
		wt := max(weightOf(t)>>shift, 1)
		if r < wt {
			return t
		}
		r -= wt
	}
	// Only an IntN outside [0, total) gets here.
	return cs[len(cs)-1]
}

// leastBusy picks the candidate with the fewest requests in flight; ties go to the earlier one in
// the chain, so that an idle gateway behaves like ordered.
type leastBusy struct{}

func inFlight(t *core.Target) int64 {
	if t.Stats == nil {
		return 0
	}
	return t.Stats.InFlight()
}

func (leastBusy) Pick(_ *core.Request, cs []*core.Target) *core.Target {
	if len(cs) == 0 {
		return nil
	}
	cs = preferred(cs)
	best, bestN := cs[0], inFlight(cs[0])
	for _, t := range cs[1:] {
		if n := inFlight(t); n < bestN {
			best, bestN = t, n
		}
	}
	return best
}

// latency picks the candidate with the lowest smoothed latency. A candidate never observed, or
// not within core.LatencyStale, comes first (earliest in the chain among them), because otherwise
// it would never be measured again and never chosen; ties go to chain order.
type latency struct{ now func() time.Time }

func (l latency) Pick(_ *core.Request, cs []*core.Target) *core.Target {
	if len(cs) == 0 {
		return nil
	}
	cs = preferred(cs)
	now := l.now()
	var best *core.Target
	var bestL int64
	for _, t := range cs {
		if t.Stats == nil {
			return t
		}
		lat := int64(t.Stats.LatencyAt(now))
		if lat == 0 {
			return t
		}
		if best == nil || lat < bestL {
			best, bestL = t, lat
		}
	}
	return best
}
