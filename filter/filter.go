// Package filter owns eligibility: which targets of a route may serve one request. Eligibility
// is decided before selection and only ever subtracts. A Filter answers keep or drop (with a
// reason) for one target; Run builds the output, so no filter can add a target or reorder them.
// Whether a stage may give way when it would leave nothing (fail open) is a property of the
// Stage, decided here and reported, never of the filter.
package filter

import (
	"slices"
	"time"

	"github.com/hayula/gateway/core"
)

// Filter decides, for one target, whether it may serve req.
type Filter interface {
	// Name identifies the filter in drops, logs and explain.
	Name() string
	// Keep reports whether t may serve req; when it may not, reason says why, for a human.
	Keep(req *core.Request, t *core.Target) (ok bool, reason string)
}

// passer is a Filter that can tell from the request alone that it keeps every target: Privacy
// for a request that is not strict, Vision for one without images, Tools for one that declares
// no tools, which is nearly every request. RunInto then does not ask it target by target, a
// call each (TestRunIntoSkipsPassingStage). passes must never say so of a request for which Keep
// drops a target (TestPassesKeepsEvery): a stage skipped so drops nothing, as it would have.
type passer interface {
	passes(req *core.Request) bool
}

// Drop records one target removed by one filter.
type Drop struct {
	Target, Filter, Reason string
}

// Stage is one filter in the chain. A fail-open stage that would drop every target still left
// keeps them all instead (health never denies service); fail-closed stages (privacy,
// capabilities) never do.
type Stage struct {
	Filter   Filter
	FailOpen bool
}

// Result is what Run decided for one request.
type Result struct {
	// Kept are the eligible targets, in the input order except after a fail-open (see Run).
	// The slice is the caller's own; nil when nothing is eligible.
	Kept []*core.Target
	// Drops are every drop with its reason, in stage order; nil when none. A stage that failed
	// open records no drops.
	Drops []Drop
	// FailedOpen names the stages that failed open for this request; nil when none.
	FailedOpen []string
}

// Recoverer is implemented by a filter whose drops are temporary.
type Recoverer interface {
	// RecoversAt is when t is expected to pass the filter again. The zero time means unknown or
	// due any moment (a probe in flight), and sorts first.
	RecoversAt(t *core.Target) time.Time
}

// Availability is what the cooldown filter asks; health.Tracker implements it.
type Availability interface {
	// Available reports whether t may be tried now. When it may not, until is when that is
	// expected to change, or zero when unknown (a probe is in flight). It must have no side
	// effects: filters also run for explain.
	Available(t *core.Target) (ok bool, until time.Time)
}

// Reasoner is implemented by an Availability that can say, better than "cooling down", why a
// target is not available now (health checks failing, say); the cooldown filter then uses its
// words.
type Reasoner interface {
	// Why is the reason t is not available now, for a human; "" leaves it to the filter.
	Why(t *core.Target) string
}

// Loader is what the loading filter asks; health.Tracker implements it.
type Loader interface {
	// Loading reports whether t is loading a model, and until when it is skipped for that. It
	// must have no side effects: filters also run for explain.
	Loading(t *core.Target) (loading bool, until time.Time)
}

// Run applies the stages in order to targets. When a fail-open stage fails open and its Filter
// implements Recoverer, the kept targets are ordered soonest-to-recover first (stable), so that a
// request that must go to a benched target goes to the one most likely to be back; otherwise the
// input order is kept.
//
// Run is on every request's path: it allocates Kept once, and Drops and FailedOpen only when
// there is something to record.
func Run(req *core.Request, targets []*core.Target, stages []Stage) Result {
	return RunInto(nil, req, targets, stages)
}

// RunInto is Run with Kept built in kept's array when it can hold every target, and in a new
// one otherwise: a caller that keeps an array per request in flight (the server does) saves Run's
// one allocation. kept's contents are overwritten; it must not share its array with targets.
func RunInto(kept []*core.Target, req *core.Request, targets []*core.Target, stages []Stage) Result {
	var res Result
	if cap(kept) < len(targets) {
		kept = make([]*core.Target, len(targets))
	}
	kept = kept[:len(targets)]
	copy(kept, targets)
	for _, st := range stages {
		if len(kept) == 0 {
			break
		}
		if p, ok := st.Filter.(passer); ok && p.passes(req) {
			continue
		}
		mark := len(res.Drops)
		n := 0
		for _, t := range kept {
			if ok, reason := st.Filter.Keep(req, t); ok {
				kept[n] = t
				n++
			} else {
				res.Drops = append(res.Drops, Drop{Target: t.Name, Filter: st.Filter.Name(), Reason: reason})
			}
		}
		if n == 0 && st.FailOpen {
			// Nothing was written into kept, so it still holds every target that entered the stage.
			res.Drops = res.Drops[:mark]
			res.FailedOpen = append(res.FailedOpen, st.Filter.Name())
			if rec, ok := st.Filter.(Recoverer); ok {
				sortByRecovery(kept, rec)
			}
			continue
		}
		kept = kept[:n]
	}
	if len(res.Drops) == 0 {
		res.Drops = nil
	}
	if len(kept) > 0 {
		res.Kept = kept
	}
	return res
}

// AnyKept reports whether some target passes every fail-closed stage: whether eligibility is
// certain to leave targets nothing to try. Fail-open stages are passed over, since they never
// leave nothing (health never denies service). It asks each filter what Run would, stops at the
// first target that passes them all, and allocates nothing of its own; a filter that builds its
// reason for a drop still builds it.
func AnyKept(req *core.Request, targets []*core.Target, stages []Stage) bool {
	for _, t := range targets {
		if keptByAll(req, t, stages) {
			return true
		}
	}
	return false
}

// AnyKeptOrDrops is AnyKept for a caller that wants to know why when no target passes: then
// drops are what Run records for stages that are all fail-closed (every target's drop, in stage
// order), from the answers AnyKept got, without asking any filter again. Fail-open stages are
// passed over as AnyKept passes them. drops is nil when a target passes; it allocates only when
// none does (or for more than eight targets).
func AnyKeptOrDrops(req *core.Request, targets []*core.Target, stages []Stage) (ok bool, drops []Drop) {
	type dropAt struct {
		stage  int
		reason string
	}
	var buf [8]dropAt
	at := buf[:0]
	for _, t := range targets {
		stage, reason := firstDrop(req, t, stages)
		if stage < 0 {
			return true, nil
		}
		at = append(at, dropAt{stage, reason})
	}
	if len(at) == 0 {
		return false, nil
	}
	// Run drops stage by stage, each stage's in the targets' order.
	drops = make([]Drop, 0, len(at))
	for i, st := range stages {
		for j, a := range at {
			if a.stage == i {
				drops = append(drops, Drop{Target: targets[j].Name, Filter: st.Filter.Name(), Reason: a.reason})
			}
		}
	}
	return false, drops
}

func keptByAll(req *core.Request, t *core.Target, stages []Stage) bool {
	stage, _ := firstDrop(req, t, stages)
	return stage < 0
}

// firstDrop is the index in stages of the first fail-closed stage that drops t for req, and its
// reason; -1 when none does.
func firstDrop(req *core.Request, t *core.Target, stages []Stage) (stage int, reason string) {
	for i, st := range stages {
		if st.FailOpen {
			continue
		}
		if ok, reason := st.Filter.Keep(req, t); !ok {
			return i, reason
		}
	}
	return -1, ""
}

func sortByRecovery(ts []*core.Target, rec Recoverer) {
	type keyed struct {
		t  *core.Target
		at time.Time
	}
	ks := make([]keyed, len(ts))
	for i, t := range ts {
		ks[i] = keyed{t, rec.RecoversAt(t)}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return a.at.Compare(b.at) })
	for i, k := range ks {
		ts[i] = k.t
	}
}
