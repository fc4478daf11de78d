// Package health owns passive health: it watches the outcome of every attempt on a target and
// benches a target that keeps failing (a cooldown), then lets exactly one probe request through
// before trusting it again. It never probes on its own and never denies service by itself: the
// filter package asks it through filter.Availability and decides what to do when every target is
// benched.
package health

import (
	"sync"
	"time"

	"github.com/hayula/gateway/core"
)

// Policy says when a target is benched and for how long. Zero (or negative) fields take the
// defaults: Failures 3, Base 30s, Max 300s.
type Policy struct {
	// Failures is how many consecutive counted failures (connection, timeout, server_error,
	// rate_limit) bench a target.
	Failures int
	// Base is the first cooldown; each consecutive cooldown doubles it.
	Base time.Duration
	// Max caps every cooldown, including one asked for by a Retry-After header.
	Max time.Duration
}

func (p Policy) withDefaults() Policy {
	if p.Failures <= 0 {
		p.Failures = 3
	}
	if p.Base <= 0 {
		p.Base = 30 * time.Second
	}
	if p.Max <= 0 {
		p.Max = 300 * time.Second
	}
	return p
}

// backoff is the length of the n-th consecutive cooldown (n >= 1): Base doubled n-1 times, capped.
func (p Policy) backoff(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// State is a target's health as explain and logs show it.
type State struct {
	// Cooling is true while a cooldown runs.
	Cooling bool
	// Until is the end of the current or last cooldown; zero when the target was never benched
	// or has been confirmed healthy since.
	Until time.Time
	// Failures is the number of consecutive counted failures since the last success.
	Failures int
	// Probing is true while the probe after a cooldown is in flight.
	Probing bool
	// Unconfirmed is true when a cooldown has ended and no attempt has succeeded since: the next
	// attempt that starts is the probe.
	Unconfirmed bool
	// Cooldowns is the number of consecutive cooldowns; the next one lasts Base·2^Cooldowns.
	Cooldowns int
	// Status is "cooling", "probing" or "ok" (which includes Unconfirmed).
	Status string
}

// Tracker keeps the passive health of every target. It is safe for concurrent use.
//
// A target index outside [0, targets) is not tracked: it is always available and reports about
// it are ignored, so that a wiring mistake can cost health tracking but never service.
type Tracker struct {
	clock  Clock
	policy Policy
	states []targetState
}

type targetState struct {
	mu sync.Mutex // guards the fields below; never copy or overwrite a targetState
	// benched is true from the start of a cooldown until an attempt succeeds.
	benched   bool
	until     time.Time
	probing   bool
	failures  int
	cooldowns int
}

// NewTracker returns a tracker for targets targets, indexed by core.Target.Index.
func NewTracker(targets int, clock Clock, p Policy) *Tracker {
	if clock == nil {
		clock = SystemClock{}
	}
	return &Tracker{clock: clock, policy: p.withDefaults(), states: make([]targetState, max(targets, 0))}
}

func (t *Tracker) state(tg *core.Target) *targetState {
	if tg == nil || tg.Index < 0 || tg.Index >= len(t.states) {
		return nil
	}
	return &t.states[tg.Index]
}

// Available reports whether tg may be tried now. When it may not, until is the end of its
// cooldown, or zero while the probe after the cooldown is in flight (the wait then ends when the
// probe reports, not at a known time). It changes nothing, so filters can run it for explain.
// Available implements filter.Availability.
func (t *Tracker) Available(tg *core.Target) (ok bool, until time.Time) {
	s := t.state(tg)
	if s == nil {
		return true, time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.benched {
		return true, time.Time{}
	}
	if t.clock.Now().Before(s.until) {
		return false, s.until
	}
	if s.probing {
		return false, time.Time{}
	}
	return true, time.Time{}
}

// Start tells the tracker that an attempt on tg begins. When tg's cooldown has ended and nothing
// has confirmed it since, this attempt becomes the probe and others see tg unavailable until the
// probe's Report. Start does not say whether it made a probe: the first Report after it, from any
// attempt, is taken as the probe's outcome, because any outcome after the cooldown says as much
// about the target as the probe's own.
func (t *Tracker) Start(tg *core.Target) {
	s := t.state(tg)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.benched && !s.probing && !t.clock.Now().Before(s.until) {
		s.probing = true
	}
}

// counted reports whether a failure of class c says the target itself is unwell.
func counted(c core.Class) bool {
	switch c {
	case core.ClassConnection, core.ClassTimeout, core.ClassServerError, core.ClassRateLimit:
		return true
	}
	return false
}

// Report records the outcome of an attempt on tg; core.ClassNone is a success. retryAfter is the
// upstream's Retry-After, honoured (up to Policy.Max) only with core.ClassRateLimit: it benches
// tg at once, without waiting for Policy.Failures.
//
// A success clears everything, even during a cooldown (an attempt let through because every
// target was benched proved this one works). A counted failure during a cooldown only lengthens
// it when a Retry-After reaches further: those attempts were let through knowing tg was unwell.
// A counted failure after a cooldown ended (the probe's, normally) benches tg again at double
// length. Other classes say nothing about tg: they neither count nor reset, but they end a probe,
// so that the next attempt probes again.
func (t *Tracker) Report(tg *core.Target, c core.Class, retryAfter time.Duration) {
	s := t.state(tg)
	if s == nil {
		return
	}
	p := t.policy
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case c == core.ClassNone:
		s.benched, s.until, s.probing, s.failures, s.cooldowns = false, time.Time{}, false, 0, 0
	case counted(c):
		now := t.clock.Now()
		s.failures++
		hinted := c == core.ClassRateLimit && retryAfter > 0
		if s.benched && now.Before(s.until) {
			if hinted {
				if end := now.Add(min(retryAfter, p.Max)); end.After(s.until) {
					s.until = end
				}
			}
			return
		}
		if !s.benched && !hinted && s.failures < p.Failures {
			return
		}
		s.benched = true
		s.probing = false
		s.cooldowns++
		d := p.backoff(s.cooldowns)
		if hinted {
			d = min(retryAfter, p.Max)
		}
		s.until = now.Add(d)
	default:
		s.probing = false
	}
}

// Snapshot returns tg's state for explain and logs.
func (t *Tracker) Snapshot(tg *core.Target) State {
	s := t.state(tg)
	if s == nil {
		return State{Status: "ok"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{Failures: s.failures, Cooldowns: s.cooldowns, Status: "ok"}
	if !s.benched {
		return st
	}
	st.Until = s.until
	switch {
	case t.clock.Now().Before(s.until):
		st.Cooling, st.Status = true, "cooling"
	case s.probing:
		st.Probing, st.Status = true, "probing"
	default:
		st.Unconfirmed = true
	}
	return st
}
