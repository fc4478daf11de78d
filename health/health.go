// Package health owns the health state of every target: one state per target, fed by passive
// results (the outcome of every real attempt, through Tracker.Report) and by active checks (a GET
// of the target's health URL on an interval, through the Checker and Tracker.ReportCheck).
//
// A target is healthy, degraded (its last check answered slower than its DegradedAfter: selectors
// prefer other targets), unavailable (Policy.CheckFailures consecutive failed checks), loading (it
// said it is loading a model: 503 with Retry-After, or a body with "status":"loading"), cooling
// (benched after consecutive failed attempts) or probing (one attempt let through after a
// cooldown). Health never denies service by itself: the filter package asks through
// filter.Availability (cooling, probing, unavailable — a fail-open stage) and filter.Loader
// (loading), and decides what happens when every target is set aside.
package health

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hayula/gateway/core"
)

// Policy says when a target is set aside and for how long. Zero (or negative) fields take the
// defaults: Failures 3, Base 30s, Max 300s, CheckFailures 3, LoadingRetry DefaultLoadingRetry.
type Policy struct {
	// Failures is how many consecutive counted failures (connection, timeout, server_error,
	// rate_limit) bench a target.
	Failures int
	// Base is the first cooldown; each consecutive cooldown doubles it.
	Base time.Duration
	// Max caps every cooldown, including one asked for by a Retry-After header, and every loading
	// wait.
	Max time.Duration
	// CheckFailures is how many consecutive failed active checks make a target unavailable.
	CheckFailures int
	// LoadingRetry is how long a target that said it is loading, without a Retry-After, is
	// skipped before it is tried again.
	LoadingRetry time.Duration
	// OnChange, when non-nil, is called after a report changed a target's Status, outside the
	// tracker's locks, so that logs show every transition. A target's changes are told one at a
	// time and in the order they were made, each from where the one before it went, however
	// many reports race (TestOnChangeInOrderUnderConcurrentReports); a report's change may be
	// told by the goroutine of another report of the target, whose call is under way. Changes
	// that only the passing of time makes (a cooldown ending) are not reported.
	OnChange func(t *core.Target, from, to string)
	// Describe words a failed check's error for Why and State.CheckCause, which clients read
	// (explain's drops and health detail, a 503's message): the error's text names the upstream's
	// URL and address, which the owner words as a cause from the error's type. nil keeps the text.
	Describe func(error) string
}

// Longest is a Retry-After for Report that asks for the longest bench the policy allows
// (Policy.Max): a refusal no wait within minutes clears, such as an account out of credit.
const Longest = time.Duration(math.MaxInt64)

// DefaultLoadingRetry is Policy.LoadingRetry's default, and the Retry-After the gateway suggests
// for a target it knows to be loading without knowing for how long.
const DefaultLoadingRetry = 5 * time.Second

// Status names, as State.Status and explain show them.
const (
	StatusHealthy     = "healthy"
	StatusDegraded    = "degraded"
	StatusUnavailable = "unavailable"
	StatusLoading     = "loading"
	StatusCooling     = "cooling"
	StatusProbing     = "probing"
)

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
	if p.CheckFailures <= 0 {
		p.CheckFailures = 3
	}
	if p.LoadingRetry <= 0 {
		p.LoadingRetry = DefaultLoadingRetry
	}
	if p.Describe == nil {
		p.Describe = func(err error) string { return err.Error() }
	}
	return p
}

// backoff is the length of the n-th consecutive cooldown (n >= 1): Base doubled n-1 times, capped.
func (p Policy) backoff(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		if d > p.Max/2 {
			return p.Max // doubling would pass the cap, or wrap past the longest Duration
		}
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
	// Unavailable is true after Policy.CheckFailures consecutive failed active checks, until a
	// check or an attempt succeeds.
	Unavailable bool
	// CheckFailures is the number of consecutive failed active checks.
	CheckFailures int
	// Degraded is true when the last successful check answered slower than the target's
	// DegradedAfter.
	Degraded bool
	// Loading is true while the target is loading a model, by its own word; LoadingUntil is when
	// it will be tried again (its Retry-After, or Policy.LoadingRetry).
	Loading      bool
	LoadingUntil time.Time
	// LastCheck is when the last active check ended (zero when none has); CheckLatency is how long
	// it took and CheckError why it failed ("" when it did not), as the error says (for logs);
	// CheckCause is the same as Policy.Describe words it, for clients.
	LastCheck    time.Time
	CheckLatency time.Duration
	CheckError   string
	CheckCause   string
	// Status is, first that applies: loading, cooling, probing, unavailable, degraded, healthy
	// (healthy includes Unconfirmed). See the Status constants.
	Status string
}

// Tracker keeps the health state of every target, passive and active. It is safe for concurrent use.
//
// A target index outside [0, targets) is not tracked: it is always available and reports about
// it are ignored, so that a wiring mistake can cost health tracking but never service.
type Tracker struct {
	clock  Clock
	policy Policy
	states []targetState
}

type targetState struct {
	// marked is false while the state is blank: never benched, no failures or cooldowns, no
	// failed checks, not unavailable, never loading. A blank state answers Available, Loading,
	// Start and a success's Report without the lock or the clock: those are called for every
	// eligible target of every request, and nearly every target is blank nearly all the time.
	// It is written only under mu, after the fields it sums up (setMarked).
	marked atomic.Bool

	mu sync.Mutex // guards the fields below; never copy or overwrite a targetState
	// benched is true from the start of a cooldown until an attempt succeeds.
	benched   bool
	until     time.Time
	probing   bool
	failures  int
	cooldowns int

	// Active health. A passive success clears checkFailures, unavailable and loadingUntil too:
	// a target that just answered a real request is neither down nor loading.
	checkFailures int
	unavailable   bool
	degraded      bool
	loadingUntil  time.Time // loading while now is before it
	lastCheck     time.Time
	checkLatency  time.Duration
	checkErr      string
	checkCause    string

	// Changes to tell OnChange of, in the order they were made, and whether a goroutine is
	// telling them (Tracker.tell): calls made in each report's own goroutine after the lock is
	// let go would come in any order.
	untold  []change
	telling bool
}

// change is a Status change of a target, for Policy.OnChange.
type change struct {
	tg       *core.Target
	from, to string
}

// NewTracker returns a tracker for targets targets, indexed by core.Target.Index.
func NewTracker(targets int, clock Clock, p Policy) *Tracker {
	if clock == nil {
		clock = SystemClock{}
	}
	return &Tracker{clock: clock, policy: p.withDefaults(), states: make([]targetState, max(targets, 0))}
}

// setMarked brings marked up to date with the fields; called with s.mu held after any change.
func (s *targetState) setMarked() {
	blank := !s.benched && !s.probing && s.failures == 0 && s.cooldowns == 0 &&
		s.checkFailures == 0 && !s.unavailable && s.loadingUntil.IsZero()
	s.marked.Store(!blank)
}

func (t *Tracker) state(tg *core.Target) *targetState {
	if tg == nil || tg.Index < 0 || tg.Index >= len(t.states) {
		return nil
	}
	return &t.states[tg.Index]
}

// Available reports whether tg may be tried now: not while it cools down, while the probe after
// a cooldown is in flight, or while active checks find it unavailable. When it may not, until is
// when that is expected to change: the end of the cooldown, or the next active check, whichever
// is later; zero when unknown or due any moment (a probe in flight). It changes nothing, so
// filters can run it for explain. Available implements filter.Availability; loading is answered
// by Loading instead.
func (t *Tracker) Available(tg *core.Target) (ok bool, until time.Time) {
	s := t.state(tg)
	if s == nil || !s.marked.Load() {
		return true, time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := t.clock.Now()
	ok = s.availableLocked(now)
	if s.benched && now.Before(s.until) {
		until = s.until
	}
	if s.unavailable && tg.HealthInterval > 0 {
		// Failed checks keep it out until the next check may pass: the later of that and the
		// cooldown's end (a probe out has no end to name).
		switch n := s.lastCheck.Add(tg.HealthInterval); {
		case !n.After(now):
		case until.IsZero() && !s.benchBlocksLocked(now), !until.IsZero() && n.After(until):
			until = n
		}
	}
	return ok, until
}

// benchBlocksLocked reports whether a cooldown keeps the target out now: it has not ended, or it
// has and its probe is out.
func (s *targetState) benchBlocksLocked(now time.Time) bool {
	return s.benched && (s.probing || now.Before(s.until))
}

// availableLocked is the one rule of availability that Available and Start share: neither a
// cooldown (nor its probe) nor failed active checks keep the target out.
func (s *targetState) availableLocked(now time.Time) bool {
	return !s.benchBlocksLocked(now) && !s.unavailable
}

// Why says why tg is not available now when active checks are the reason, for the cooldown
// filter's drop; "" otherwise (a cooldown speaks for itself). Why implements filter.Reasoner.
func (t *Tracker) Why(tg *core.Target) string {
	s := t.state(tg)
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.unavailable || t.statusLocked(s, t.clock.Now()) != StatusUnavailable {
		return ""
	}
	why := "unavailable: " + strconv.Itoa(s.checkFailures) + " failed health checks in a row"
	if s.checkCause != "" {
		why += " (last: " + s.checkCause + ")"
	}
	return why
}

// Loading reports whether tg said it is loading a model, and until when it is skipped for that
// (its Retry-After, or Policy.LoadingRetry). It changes nothing. Loading implements filter.Loader.
func (t *Tracker) Loading(tg *core.Target) (loading bool, until time.Time) {
	s := t.state(tg)
	if s == nil || !s.marked.Load() {
		return false, time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.clock.Now().Before(s.loadingUntil) {
		return true, s.loadingUntil
	}
	return false, time.Time{}
}

// Start is Begin without saying whether the attempt is the probe.
func (t *Tracker) Start(tg *core.Target) (ok bool) {
	ok, _ = t.Begin(tg)
	return ok
}

// Begin tells the tracker that an attempt on tg begins, and reports whether tg is available for
// it, as Available would say now: not while it cools down, while another attempt's probe is in
// flight, or while active checks find it unavailable. When tg's cooldown has ended and nothing has
// confirmed it since, Begin makes this attempt the probe (probe true), in the same step as it
// finds tg available, so that of several attempts that planned on tg while it was free exactly
// one probes; the others get false. A caller that goes ahead on false (fail open) is not the
// probe.
//
// An outcome that says something about tg ends the probe, whichever attempt reports it: a
// success, a counted failure or loading (Report), because any of them after the cooldown says as
// much about tg as the probe's own. One that says nothing (client_gone, request, overflow,
// endpoint) ends it only when it is the probe's own: the probe's caller then calls Abandon, so
// that another attempt's client leaving does not let a second request through to a target not
// yet known to be back (TestProbeOutlivesOtherAttemptsNonEvidence).
func (t *Tracker) Begin(tg *core.Target) (ok, probe bool) {
	s := t.state(tg)
	if s == nil || !s.marked.Load() {
		return true, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.availableLocked(t.clock.Now()) {
		// Not available: a caller that skips tg on false must leave no probe behind it.
		return false, false
	}
	if s.benched {
		s.probing = true
		return true, true
	}
	return true, false
}

// EndsProbe reports whether Report of an outcome of class c ends a probe in flight, whichever
// attempt it comes from: a success, a counted failure, loading. The probe's own attempt ending in
// any other class ends it with Abandon instead (see Begin).
func EndsProbe(c core.Class) bool { return c == core.ClassNone || c == core.ClassLoading || counted(c) }

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
// tg at once, without waiting for Policy.Failures; and with core.ClassLoading: tg is loading for
// that long (Policy.LoadingRetry when absent).
//
// A success clears everything but Degraded, even during a cooldown (an attempt let through
// because every target was benched proved this one works), and even when active checks found tg
// unavailable. A counted failure during a cooldown only lengthens it when a Retry-After reaches
// further: those attempts were let through knowing tg was unwell. A counted failure after a
// cooldown ended (the probe's, normally) benches tg again at double length. Loading, from any
// attempt, ends a probe too. Other classes say nothing about tg's health: they neither count nor
// reset, and do not end a probe; the probe's own caller ends it with Abandon (see Begin).
func (t *Tracker) Report(tg *core.Target, c core.Class, retryAfter time.Duration) {
	s := t.state(tg)
	if s == nil || c == core.ClassNone && !s.marked.Load() {
		// A success on a blank state changes nothing.
		return
	}
	s.mu.Lock()
	now := t.clock.Now()
	before := t.statusLocked(s, now)
	t.reportLocked(s, now, c, retryAfter)
	s.setMarked()
	tell := t.changedLocked(s, tg, before, t.statusLocked(s, now))
	s.mu.Unlock()
	if tell {
		t.tell(s)
	}
}

// Abandon tells the tracker that the probe Begin made of an attempt on tg is over with nothing
// said about tg: its outcome was of a class that says nothing (client_gone, request, …), or it
// had none (the gateway's own failure, such as a panic). Nothing counts for or against tg; the
// next attempt probes again. Only the probe's caller calls it: another attempt's ending says
// nothing about the probe, which is still in flight.
func (t *Tracker) Abandon(tg *core.Target) {
	s := t.state(tg)
	if s == nil || !s.marked.Load() {
		return
	}
	s.mu.Lock()
	now := t.clock.Now()
	before := t.statusLocked(s, now)
	s.probing = false
	s.setMarked()
	tell := t.changedLocked(s, tg, before, t.statusLocked(s, now))
	s.mu.Unlock()
	if tell {
		t.tell(s)
	}
}

func (t *Tracker) reportLocked(s *targetState, now time.Time, c core.Class, retryAfter time.Duration) {
	p := t.policy
	switch {
	case c == core.ClassNone:
		s.benched, s.until, s.probing, s.failures, s.cooldowns = false, time.Time{}, false, 0, 0
		s.checkFailures, s.unavailable, s.loadingUntil = 0, false, time.Time{}
	case counted(c):
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
	case c == core.ClassLoading:
		s.probing = false
		s.loadingUntil = now.Add(t.loadingFor(retryAfter))
	}
}

func (t *Tracker) loadingFor(retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, t.policy.Max)
	}
	return t.policy.LoadingRetry
}

// CheckResult is the outcome of one active health check.
type CheckResult struct {
	// Err is why the check failed: no answer, no answer within the target's HealthTimeout, or a
	// status other than 2xx that does not mean loading. nil for a 2xx answer or a loading one.
	Err error
	// Latency is how long the answer took.
	Latency time.Duration
	// Loading is true when the target said it is loading a model: a 503 with Retry-After, or a
	// body whose "status" is "loading".
	Loading bool
	// RetryAfter is the answer's Retry-After; 0 when absent.
	RetryAfter time.Duration
}

// ReportCheck records the outcome of an active check on tg.
//
// A 2xx answer makes tg healthy, or degraded when it came slower than tg.DegradedAfter, and ends
// unavailable and loading. A loading answer makes tg loading for its Retry-After (Policy.
// LoadingRetry when absent); it is an answer, so it ends unavailable. A failed check counts, and
// Policy.CheckFailures of them in a row make tg unavailable; it also ends loading, since a target
// that no longer answers is not loading any more. A check never ends a cooldown: the health path
// answering says less about chat than the failed attempts that caused it.
func (t *Tracker) ReportCheck(tg *core.Target, r CheckResult) {
	s := t.state(tg)
	if s == nil {
		return
	}
	s.mu.Lock()
	now := t.clock.Now()
	before := t.statusLocked(s, now)
	s.lastCheck, s.checkLatency, s.checkErr, s.checkCause = now, r.Latency, "", ""
	switch {
	case r.Err != nil:
		s.checkErr, s.checkCause = r.Err.Error(), t.policy.Describe(r.Err)
		s.checkFailures++
		s.loadingUntil = time.Time{}
		if s.checkFailures >= t.policy.CheckFailures {
			s.unavailable = true
		}
	case r.Loading:
		s.checkFailures, s.unavailable = 0, false
		s.loadingUntil = now.Add(t.loadingFor(r.RetryAfter))
	default:
		s.checkFailures, s.unavailable, s.loadingUntil = 0, false, time.Time{}
		s.degraded = tg.DegradedAfter > 0 && r.Latency > tg.DegradedAfter
		if tg.Stats != nil {
			tg.Stats.SetDegraded(s.degraded)
		}
	}
	s.setMarked()
	tell := t.changedLocked(s, tg, before, t.statusLocked(s, now))
	s.mu.Unlock()
	if tell {
		t.tell(s)
	}
}

// changedLocked queues a change of tg's Status for OnChange, and reports whether the caller is
// to tell the queue (Tracker.tell) once it has let go of s.mu: no other goroutine is telling it.
func (t *Tracker) changedLocked(s *targetState, tg *core.Target, from, to string) bool {
	if from == to || t.policy.OnChange == nil {
		return false
	}
	s.untold = append(s.untold, change{tg: tg, from: from, to: to})
	if s.telling {
		return false
	}
	s.telling = true
	return true
}

// tell calls OnChange for s's queued changes, in order, until none is left, outside s.mu. A
// report that queues a change while this runs leaves it to this goroutine, so that no two
// calls for a target overlap or pass each other.
func (t *Tracker) tell(s *targetState) {
	done := false
	defer func() {
		if !done { // OnChange panicked: the next change's report tells what is left
			s.mu.Lock()
			s.telling = false
			s.mu.Unlock()
		}
	}()
	var batch []change
	for {
		s.mu.Lock()
		batch, s.untold = s.untold, batch[:0]
		if len(batch) == 0 {
			s.telling = false
			s.mu.Unlock()
			done = true
			return
		}
		s.mu.Unlock()
		for i, c := range batch {
			t.policy.OnChange(c.tg, c.from, c.to)
			batch[i] = change{}
		}
	}
}

// statusLocked is State.Status; see there for the order.
func (t *Tracker) statusLocked(s *targetState, now time.Time) string {
	switch {
	case now.Before(s.loadingUntil):
		return StatusLoading
	case s.benched && now.Before(s.until):
		return StatusCooling
	case s.benched && s.probing:
		return StatusProbing
	case s.unavailable:
		return StatusUnavailable
	case s.degraded:
		return StatusDegraded
	}
	return StatusHealthy
}

// Snapshot returns tg's state for explain and logs.
func (t *Tracker) Snapshot(tg *core.Target) State {
	s := t.state(tg)
	if s == nil {
		return State{Status: StatusHealthy}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := t.clock.Now()
	st := State{
		Failures: s.failures, Cooldowns: s.cooldowns,
		Unavailable: s.unavailable, CheckFailures: s.checkFailures, Degraded: s.degraded,
		LastCheck: s.lastCheck, CheckLatency: s.checkLatency, CheckError: s.checkErr, CheckCause: s.checkCause,
		Status: t.statusLocked(s, now),
	}
	if now.Before(s.loadingUntil) {
		st.Loading, st.LoadingUntil = true, s.loadingUntil
	}
	if !s.benched {
		return st
	}
	st.Until = s.until
	switch {
	case now.Before(s.until):
		st.Cooling = true
	case s.probing:
		st.Probing = true
	default:
		st.Unconfirmed = true
	}
	return st
}
