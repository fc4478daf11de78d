package health_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/health"
)

func checkOK(latency time.Duration) step {
	return func(t *testing.T, e env) { e.tr.ReportCheck(e.tg, health.CheckResult{Latency: latency}) }
}

func checkFail(n int) step {
	return func(t *testing.T, e env) {
		for range n {
			e.tr.ReportCheck(e.tg, health.CheckResult{Err: errors.New("connection refused")})
		}
	}
}

func checkLoading(retryAfter time.Duration) step {
	return func(t *testing.T, e env) {
		e.tr.ReportCheck(e.tg, health.CheckResult{Loading: true, RetryAfter: retryAfter})
	}
}

// wantStatus checks Snapshot's Status and the degraded flag selectors read.
func wantStatus(status string, degraded bool) step {
	return func(t *testing.T, e env) {
		t.Helper()
		st := e.tr.Snapshot(e.tg)
		if st.Status != status || e.tg.Stats.Degraded() != degraded {
			t.Fatalf("at %v: Status %q, Stats.Degraded %v; want %q, %v (state %+v)",
				e.clk.Now().Sub(t0), st.Status, e.tg.Stats.Degraded(), status, degraded, st)
		}
	}
}

// wantLoading checks Loading; untilAfter is an offset from t0, or none.
func wantLoading(loading bool, untilAfter time.Duration) step {
	return func(t *testing.T, e env) {
		t.Helper()
		got, until := e.tr.Loading(e.tg)
		var want time.Time
		if untilAfter >= 0 {
			want = t0.Add(untilAfter)
		}
		if got != loading || !until.Equal(want) {
			t.Fatalf("at %v: Loading = (%v, %v), want (%v, %v)", e.clk.Now().Sub(t0), got, until, loading, want)
		}
	}
}

func wantWhy(why string) step {
	return func(t *testing.T, e env) {
		t.Helper()
		if got := e.tr.Why(e.tg); got != why {
			t.Fatalf("at %v: Why = %q, want %q", e.clk.Now().Sub(t0), got, why)
		}
	}
}

// TestActiveStates drives one target through the states active checks and passive results give
// it, on a manual clock. The target checks every 30s and is degraded above 10s.
func TestActiveStates(t *testing.T) {
	s := time.Second
	cases := []struct {
		name  string
		steps []step
	}{
		{
			name: "healthy → degraded → healthy, and the selector's flag follows",
			steps: []step{
				wantStatus("healthy", false),
				checkOK(2 * s),
				wantStatus("healthy", false),
				checkOK(11 * s),
				wantStatus("degraded", true),
				wantAvail(true, none),
				checkOK(10 * s), // not slower than degraded_after
				wantStatus("healthy", false),
			},
		},
		{
			name: "three failed checks make it unavailable until a check succeeds",
			steps: []step{
				checkFail(2),
				wantStatus("healthy", false),
				wantAvail(true, none),
				advance(5 * s),
				checkFail(1),
				wantStatus("unavailable", false),
				wantAvail(false, 35*s), // the next check
				wantWhy("unavailable: 3 failed health checks in a row (last: connection refused)"),
				advance(40 * s),
				wantAvail(false, none), // the check is due any moment
				checkOK(s),
				wantStatus("healthy", false),
				wantAvail(true, none),
				wantWhy(""),
			},
		},
		{
			name: "a success in between resets the count of failed checks",
			steps: []step{
				checkFail(2), checkOK(s), checkFail(2),
				wantStatus("healthy", false),
			},
		},
		{
			name: "an unavailable target is cleared by a real request that succeeds",
			steps: []step{
				checkFail(3),
				wantStatus("unavailable", false),
				start(),
				report(core.ClassNone, 0),
				wantStatus("healthy", false),
				wantAvail(true, none),
			},
		},
		{
			name: "a degraded target stays degraded through a passive success, until a fast check",
			steps: []step{
				checkOK(20 * s),
				report(core.ClassNone, 0),
				wantStatus("degraded", true),
				checkOK(s),
				wantStatus("healthy", false),
			},
		},
		{
			name: "loading with Retry-After: skipped for that long, then tried again",
			steps: []step{
				checkLoading(20 * s),
				wantStatus("loading", false),
				wantLoading(true, 20*s),
				wantAvail(true, none), // loading is the loading filter's business, not a cooldown
				advance(19 * s),
				wantLoading(true, 20*s),
				advance(s),
				wantLoading(false, none),
				wantStatus("healthy", false),
			},
		},
		{
			name: "loading without Retry-After lasts LoadingRetry; a good check ends it early",
			steps: []step{
				checkLoading(0),
				wantLoading(true, health.DefaultLoadingRetry),
				advance(s),
				checkOK(s),
				wantLoading(false, none),
			},
		},
		{
			name: "a Retry-After longer than Max is capped",
			steps: []step{
				checkLoading(time.Hour),
				wantLoading(true, 300*s),
			},
		},
		{
			name: "a failed check ends loading: a target that stopped answering is not loading",
			steps: []step{
				checkLoading(60 * s),
				checkFail(1),
				wantLoading(false, none),
				wantStatus("healthy", false),
			},
		},
		{
			name: "a loading answer ends unavailable",
			steps: []step{
				checkFail(3),
				checkLoading(10 * s),
				wantStatus("loading", false),
				wantAvail(true, none),
			},
		},
		{
			name: "a real request answered 503 loading marks the target loading for its Retry-After",
			steps: []step{
				report(core.ClassLoading, 8*s),
				wantLoading(true, 8*s),
				wantState(health.State{Loading: true, LoadingUntil: t0.Add(8 * s), Status: "loading"}, none),
				report(core.ClassNone, 0),
				wantLoading(false, none),
			},
		},
		{
			name: "a good check does not end a cooldown; loading shows before cooling",
			steps: []step{
				fail(3),
				checkOK(s),
				wantAvail(false, 30*s),
				wantStatus("cooling", false),
				checkLoading(5 * s),
				wantStatus("loading", false),
				advance(5 * s),
				wantStatus("cooling", false),
			},
		},
		{
			name: "cooling and unavailable: available again only when both have passed",
			steps: []step{
				checkFail(3), // next check at 30s
				fail(3),      // cooling until 30s
				advance(20 * s),
				checkFail(1), // next check at 50s
				wantAvail(false, 50*s),
				wantStatus("cooling", false),
				wantWhy(""),
				advance(10 * s),
				wantStatus("unavailable", false),
				wantAvail(false, 50*s),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := health.NewManualClock(t0)
			tg := &core.Target{Name: "a", Index: 0, HealthInterval: 30 * time.Second,
				DegradedAfter: 10 * time.Second, Stats: &core.Stats{}}
			e := env{tr: health.NewTracker(1, clk, health.Policy{}), clk: clk, tg: tg}
			for _, st := range tc.steps {
				st(t, e)
			}
		})
	}
}

func TestSnapshotShowsChecks(t *testing.T) {
	clk := health.NewManualClock(t0)
	tg := &core.Target{Name: "a", HealthInterval: time.Minute, DegradedAfter: time.Second, Stats: &core.Stats{}}
	tr := health.NewTracker(1, clk, health.Policy{CheckFailures: 2})
	tr.ReportCheck(tg, health.CheckResult{Latency: 3 * time.Second})
	clk.Advance(time.Minute)
	tr.ReportCheck(tg, health.CheckResult{Err: errors.New("status 500"), Latency: time.Millisecond})
	want := health.State{Degraded: true, CheckFailures: 1, LastCheck: t0.Add(time.Minute),
		CheckLatency: time.Millisecond, CheckError: "status 500", CheckCause: "status 500", Status: "degraded"}
	if diff := cmp.Diff(want, tr.Snapshot(tg)); diff != "" {
		t.Fatalf("Snapshot (-want +got):\n%s", diff)
	}
	tr.ReportCheck(tg, health.CheckResult{Err: errors.New("status 500")})
	if st := tr.Snapshot(tg); !st.Unavailable || st.Status != "unavailable" {
		t.Fatalf("CheckFailures 2: after two failures %+v, want unavailable", st)
	}
}

func TestOnChange(t *testing.T) {
	type change struct{ Target, From, To string }
	var got []change
	clk := health.NewManualClock(t0)
	tr := health.NewTracker(1, clk, health.Policy{Failures: 1, OnChange: func(tg *core.Target, from, to string) {
		got = append(got, change{tg.Name, from, to})
	}})
	tg := &core.Target{Name: "a", DegradedAfter: time.Second, Stats: &core.Stats{}}
	tr.ReportCheck(tg, health.CheckResult{Latency: time.Millisecond}) // no change
	tr.ReportCheck(tg, health.CheckResult{Latency: 2 * time.Second})
	tr.Report(tg, core.ClassTimeout, 0)
	tr.Report(tg, core.ClassTimeout, 0) // still cooling: no change
	clk.Advance(time.Hour)
	tr.Start(tg)
	tr.Report(tg, core.ClassNone, 0)
	tr.Report(tg, core.ClassLoading, 0)
	want := []change{{"a", "healthy", "degraded"}, {"a", "degraded", "cooling"},
		// The cooldown ended with time (unreported); the probe's start is not a report either.
		{"a", "probing", "degraded"}, {"a", "degraded", "loading"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("changes (-want +got):\n%s", diff)
	}
}

// Policy.Describe words a failed check for clients, in Why and State.CheckCause; CheckError keeps
// the error's own text for logs.
func TestDescribeWordsFailedChecks(t *testing.T) {
	tr := health.NewTracker(1, health.NewManualClock(t0), health.Policy{CheckFailures: 1,
		Describe: func(error) string { return "described" }})
	tg := &core.Target{Name: "t", HealthInterval: time.Minute, Stats: &core.Stats{}}
	tr.ReportCheck(tg, health.CheckResult{Err: &health.CheckError{Target: "t", Err: errors.New("dial tcp 10.0.0.7:8080: refused")}})
	st := tr.Snapshot(tg)
	if st.CheckCause != "described" || !strings.Contains(st.CheckError, "10.0.0.7") {
		t.Errorf("CheckCause %q, CheckError %q: want the described cause and the whole text", st.CheckCause, st.CheckError)
	}
	if why := tr.Why(tg); !strings.HasSuffix(why, "(last: described)") {
		t.Errorf("Why = %q, want the described cause", why)
	}
}
