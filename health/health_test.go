package health_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/health"
)

var (
	_ filter.Availability = (*health.Tracker)(nil)
	_ filter.Loader       = (*health.Tracker)(nil)
	_ filter.Reasoner     = (*health.Tracker)(nil)
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// env is what one scenario step acts on.
type env struct {
	tr  *health.Tracker
	clk *health.ManualClock
	tg  *core.Target
}

type step func(t *testing.T, e env)

func advance(d time.Duration) step {
	return func(t *testing.T, e env) { e.clk.Advance(d) }
}

func start() step {
	return func(t *testing.T, e env) { e.tr.Start(e.tg) }
}

func abandon() step {
	return func(t *testing.T, e env) { e.tr.Abandon(e.tg) }
}

func report(c core.Class, retryAfter time.Duration) step {
	return func(t *testing.T, e env) { e.tr.Report(e.tg, c, retryAfter) }
}

func fail(n int) step {
	return func(t *testing.T, e env) {
		for range n {
			e.tr.Report(e.tg, core.ClassServerError, 0)
		}
	}
}

// wantAvail checks Available; untilAfter is the expected until as an offset from t0 (or -1 for zero).
func wantAvail(ok bool, untilAfter time.Duration) step {
	return func(t *testing.T, e env) {
		t.Helper()
		gotOK, gotUntil := e.tr.Available(e.tg)
		var want time.Time
		if untilAfter >= 0 {
			want = t0.Add(untilAfter)
		}
		if gotOK != ok || !gotUntil.Equal(want) {
			t.Fatalf("at %v: Available = (%v, %v), want (%v, %v)", e.clk.Now().Sub(t0), gotOK, gotUntil, ok, want)
		}
	}
}

// wantState checks Snapshot; Until is given as an offset from t0 in untilAfter (-1 for zero).
func wantState(want health.State, untilAfter time.Duration) step {
	return func(t *testing.T, e env) {
		t.Helper()
		if untilAfter >= 0 {
			want.Until = t0.Add(untilAfter)
		}
		if diff := cmp.Diff(want, e.tr.Snapshot(e.tg)); diff != "" {
			t.Fatalf("at %v: Snapshot (-want +got):\n%s", e.clk.Now().Sub(t0), diff)
		}
	}
}

const none = -1

func TestTracker(t *testing.T) {
	s := time.Second
	cases := []struct {
		name   string
		policy health.Policy
		steps  []step
	}{
		{
			name: "threshold: two failures keep the target, the third benches it for Base",
			steps: []step{
				fail(2),
				wantAvail(true, none),
				wantState(health.State{Failures: 2, Status: "healthy"}, none),
				advance(s),
				fail(1),
				wantAvail(false, 31*s),
				wantState(health.State{Cooling: true, Failures: 3, Cooldowns: 1, Status: "cooling"}, 31*s),
				advance(29 * s),
				wantAvail(false, 31*s),
				advance(s),
				wantAvail(true, none),
				wantState(health.State{Unconfirmed: true, Failures: 3, Cooldowns: 1, Status: "healthy"}, 31*s),
			},
		},
		{
			name:   "custom threshold",
			policy: health.Policy{Failures: 1, Base: 10 * s},
			steps:  []step{fail(1), wantAvail(false, 10*s)},
		},
		{
			name: "every counted class counts; the others neither count nor reset",
			steps: []step{
				report(core.ClassConnection, 0),
				report(core.ClassRequest, 0),
				report(core.ClassEndpoint, 0),
				report(core.ClassOverflow, 0),
				report(core.ClassClientGone, 0),
				report(core.ClassTimeout, 0),
				wantState(health.State{Failures: 2, Status: "healthy"}, none),
				report(core.ClassRateLimit, 0),
				wantAvail(false, 30*s),
			},
		},
		{
			name: "success resets the consecutive count",
			steps: []step{
				fail(2),
				report(core.ClassNone, 0),
				fail(2),
				wantAvail(true, none),
				wantState(health.State{Failures: 2, Status: "healthy"}, none),
			},
		},
		{
			name: "a failed probe cools down again at double, then double again",
			steps: []step{
				fail(3),                      // cooldown 1: 30s, until 30
				advance(30 * s),              // t=30
				start(),                      // probe
				report(core.ClassTimeout, 0), // cooldown 2: 60s, until 90
				wantAvail(false, 90*s),
				wantState(health.State{Cooling: true, Failures: 4, Cooldowns: 2, Status: "cooling"}, 90*s),
				advance(60 * s), // t=90
				start(),
				fail(1), // cooldown 3: 120s, until 210
				wantAvail(false, 210*s),
			},
		},
		{
			name:   "doubling stops at Max",
			policy: health.Policy{Failures: 1, Base: 30 * s, Max: 100 * s},
			steps: []step{
				fail(1), // 30s → until 30
				advance(30 * s),
				start(), fail(1), // 60s → until 90
				advance(60 * s),
				start(), fail(1), // 100s (capped) → until 190
				wantAvail(false, 190*s),
				advance(100 * s),
				start(), fail(1), // still 100s → until 290
				wantAvail(false, 290*s),
				wantState(health.State{Cooling: true, Failures: 4, Cooldowns: 4, Status: "cooling"}, 290*s),
			},
		},
		{
			name: "a 429 with Retry-After benches at once for exactly that long",
			steps: []step{
				report(core.ClassRateLimit, 7*s),
				wantAvail(false, 7*s),
				wantState(health.State{Cooling: true, Failures: 1, Cooldowns: 1, Status: "cooling"}, 7*s),
				advance(7 * s),
				wantAvail(true, none),
			},
		},
		{
			name: "Retry-After is capped at Max",
			steps: []step{
				report(core.ClassRateLimit, time.Hour),
				wantAvail(false, 300*s),
			},
		},
		{
			name: "Retry-After only counts with a 429",
			steps: []step{
				report(core.ClassServerError, 7*s),
				wantAvail(true, none),
			},
		},
		{
			name: "during a cooldown failures do not extend it, a longer Retry-After does",
			steps: []step{
				fail(3), // until 30
				advance(10 * s),
				fail(5),
				wantAvail(false, 30*s),
				report(core.ClassRateLimit, 5*s), // ends at 15: shorter, ignored
				wantAvail(false, 30*s),
				report(core.ClassRateLimit, 40*s), // ends at 50
				wantAvail(false, 50*s),
			},
		},
		{
			name: "probe exclusivity: once started, others see the target unavailable until it reports",
			steps: []step{
				fail(3),
				advance(30 * s),
				wantAvail(true, none),
				start(),
				wantAvail(false, none),
				wantState(health.State{Probing: true, Failures: 3, Cooldowns: 1, Status: "probing"}, 30*s),
				start(), // a second start changes nothing
				wantAvail(false, none),
				advance(time.Hour), // a probe has no deadline of its own
				wantAvail(false, none),
				report(core.ClassNone, 0),
				wantAvail(true, none),
				wantState(health.State{Status: "healthy"}, none),
			},
		},
		{
			name: "a successful probe resets everything: the next cooldown is Base again",
			steps: []step{
				fail(3),
				advance(30 * s),
				start(), fail(1), // 60s, until 90
				advance(60 * s),
				start(), report(core.ClassNone, 0),
				wantState(health.State{Status: "healthy"}, none),
				fail(2),
				wantAvail(true, none),
				fail(1), // t=90: Base again → until 120
				wantAvail(false, 120*s),
			},
		},
		{
			name: "a probe that ends without a verdict leaves the target available and unconfirmed",
			steps: []step{
				fail(3),
				advance(30 * s),
				start(),
				report(core.ClassRequest, 0),
				abandon(), // the probe's caller ends it: a request error says nothing of the target
				wantAvail(true, none),
				wantState(health.State{Unconfirmed: true, Failures: 3, Cooldowns: 1, Status: "healthy"}, 30*s),
				start(), // the next attempt probes again
				wantAvail(false, none),
				report(core.ClassConnection, 0), // and its failure doubles
				wantAvail(false, 90*s),
			},
		},
		{
			name: "a failure after the cooldown without a Start is taken as the probe's",
			steps: []step{
				fail(3),
				advance(30 * s),
				fail(1),
				wantAvail(false, 90*s),
			},
		},
		{
			name: "Start during a cooldown is not a probe",
			steps: []step{
				fail(3),
				advance(10 * s),
				start(),
				advance(20 * s),
				wantAvail(true, none),
			},
		},
		{
			name: "a success during a cooldown (failed open) clears it",
			steps: []step{
				fail(3),
				advance(10 * s),
				report(core.ClassNone, 0),
				wantAvail(true, none),
				wantState(health.State{Status: "healthy"}, none),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := health.NewManualClock(t0)
			e := env{tr: health.NewTracker(2, clk, tc.policy), clk: clk, tg: &core.Target{Name: "a", Index: 1}}
			other := &core.Target{Name: "b", Index: 0}
			for _, st := range tc.steps {
				st(t, e)
			}
			if ok, _ := e.tr.Available(other); !ok {
				t.Errorf("another target's state changed")
			}
		})
	}
}

func TestUntrackedIndex(t *testing.T) {
	tr := health.NewTracker(1, health.NewManualClock(t0), health.Policy{})
	for _, idx := range []int{-1, 1, 99} {
		tg := &core.Target{Name: "x", Index: idx}
		for range 5 {
			tr.Start(tg)
			tr.Report(tg, core.ClassConnection, 0)
		}
		if ok, until := tr.Available(tg); !ok || !until.IsZero() {
			t.Errorf("index %d: Available = (%v, %v), want available", idx, ok, until)
		}
		if got := tr.Snapshot(tg); got.Status != "healthy" {
			t.Errorf("index %d: Status = %q, want healthy", idx, got.Status)
		}
	}
	if ok, _ := tr.Available(nil); !ok {
		t.Errorf("nil target: not available")
	}
}

func TestAvailableHasNoSideEffects(t *testing.T) {
	clk := health.NewManualClock(t0)
	tr := health.NewTracker(1, clk, health.Policy{})
	tg := &core.Target{Index: 0}
	for range 3 {
		tr.Report(tg, core.ClassTimeout, 0)
	}
	clk.Advance(time.Minute)
	before := tr.Snapshot(tg)
	for range 10 {
		tr.Available(tg)
		tr.Snapshot(tg)
	}
	if diff := cmp.Diff(before, tr.Snapshot(tg)); diff != "" {
		t.Fatalf("Available changed the state (-before +after):\n%s", diff)
	}
}

func TestManualClock(t *testing.T) {
	c := health.NewManualClock(t0)
	c.Advance(90 * time.Second)
	if got, want := c.Now(), t0.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("after Advance: %v, want %v", got, want)
	}
	c.Set(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("after Set: %v, want %v", got, t0)
	}
	if d := time.Since(health.SystemClock{}.Now()); d < 0 || d > time.Minute {
		t.Fatalf("SystemClock is %v away from time.Now", d)
	}
}

// TestConcurrentUse is for the race detector; it also checks that the tracker ends consistent.
func TestConcurrentUse(t *testing.T) {
	clk := health.NewManualClock(t0)
	tr := health.NewTracker(4, clk, health.Policy{Failures: 2, Base: time.Second, Max: 4 * time.Second})
	targets := []*core.Target{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}}
	classes := []core.Class{core.ClassNone, core.ClassServerError, core.ClassRateLimit, core.ClassRequest}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				tg := targets[(g+i)%len(targets)]
				if ok, _ := tr.Available(tg); ok {
					tr.Start(tg)
				}
				tr.Report(tg, classes[(g*7+i)%len(classes)], time.Duration(i%3)*time.Second)
				tr.Snapshot(tg)
				if i%50 == 0 {
					clk.Advance(time.Second)
				}
			}
		})
	}
	wg.Wait()
	for _, tg := range targets {
		tr.Report(tg, core.ClassNone, 0)
		if diff := cmp.Diff(health.State{Status: "healthy"}, tr.Snapshot(tg)); diff != "" {
			t.Errorf("target %d after a success (-want +got):\n%s", tg.Index, diff)
		}
	}
}

var errTest = errors.New("check failed")

// countingClock counts its reads: a blank state must answer without one.
type countingClock struct {
	mu    sync.Mutex
	now   time.Time
	reads int
}

func (c *countingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.now
}

func (c *countingClock) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.reads
	c.reads = 0
	return n
}

func TestBlankStateAnswersWithoutClock(t *testing.T) {
	clk := &countingClock{now: t0}
	tr := health.NewTracker(1, clk, health.Policy{Failures: 3})
	tg := &core.Target{Index: 0}
	hot := func(t *testing.T) {
		t.Helper()
		if ok, until := tr.Available(tg); !ok || !until.IsZero() {
			t.Fatalf("Available = (%v, %v), want (true, zero)", ok, until)
		}
		if loading, _ := tr.Loading(tg); loading {
			t.Fatalf("Loading = true on a blank state")
		}
		tr.Start(tg)
		tr.Report(tg, core.ClassNone, 0)
	}
	hot(t)
	if n := clk.take(); n != 0 {
		t.Fatalf("a blank state read the clock %d times for Available, Loading, Start and a success", n)
	}

	// One failure is not blank: the next success must still clear it, or two more failures
	// would bench the target early.
	tr.Report(tg, core.ClassServerError, 0)
	tr.Report(tg, core.ClassNone, 0)
	tr.Report(tg, core.ClassServerError, 0)
	tr.Report(tg, core.ClassServerError, 0)
	if ok, _ := tr.Available(tg); !ok {
		t.Fatalf("benched after a success and two failures (Failures: 3): the success was lost")
	}
	tr.Report(tg, core.ClassServerError, 0)
	if ok, _ := tr.Available(tg); ok {
		t.Fatalf("not benched after three failures in a row")
	}
	tr.Report(tg, core.ClassNone, 0)
	clk.take()
	hot(t)
	if n := clk.take(); n != 0 {
		t.Fatalf("a success did not make the state blank again: %d clock reads", n)
	}

	// Loading and failed checks are not blank either.
	tr.Report(tg, core.ClassLoading, 0)
	if loading, _ := tr.Loading(tg); !loading {
		t.Fatalf("Loading = false right after a loading report")
	}
	tr.Report(tg, core.ClassNone, 0)
	for range 3 {
		tr.ReportCheck(tg, health.CheckResult{Err: errTest})
	}
	if ok, _ := tr.Available(tg); ok {
		t.Fatalf("available after three failed checks")
	}
	tr.ReportCheck(tg, health.CheckResult{})
	clk.take()
	hot(t)
	if n := clk.take(); n != 0 {
		t.Fatalf("a passing check did not make the state blank again: %d clock reads", n)
	}
}
