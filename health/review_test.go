package health_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/health"
)

// After a cooldown, of many attempts that start at once exactly one gets the target (the probe);
// the rest are told it is not available, until the probe reports.
func TestStartAdmitsOneProbe(t *testing.T) {
	clk := health.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	tr := health.NewTracker(1, clk, health.Policy{Failures: 1, Base: 30 * time.Second})
	tg := &core.Target{Name: "a", Index: 0}
	tr.Report(tg, core.ClassServerError, 0)
	if tr.Start(tg) {
		t.Fatal("Start during the cooldown reported the target available")
	}
	clk.Advance(30 * time.Second)
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if tr.Start(tg) {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if got := admitted.Load(); got != 1 {
		t.Fatalf("%d attempts admitted after the cooldown, want 1", got)
	}
	if ok, _ := tr.Available(tg); ok {
		t.Error("Available during the probe")
	}
	tr.Report(tg, core.ClassNone, 0)
	for i := range 2 {
		if !tr.Start(tg) {
			t.Errorf("Start %d: a target the probe confirmed is not available to every attempt", i)
		}
	}
}

// A target that active checks found unavailable is not admitted, and no probe is left behind
// for a caller that skips it.
func TestStartUnavailableLeavesNoProbe(t *testing.T) {
	clk := health.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	tr := health.NewTracker(1, clk, health.Policy{Failures: 1, Base: 30 * time.Second, CheckFailures: 1})
	tg := &core.Target{Name: "a", Index: 0}
	tr.Report(tg, core.ClassServerError, 0)
	tr.ReportCheck(tg, health.CheckResult{Err: errCheck})
	clk.Advance(31 * time.Second)
	if tr.Start(tg) {
		t.Fatal("Start admitted an unavailable target")
	}
	tr.ReportCheck(tg, health.CheckResult{})
	if st := tr.Snapshot(tg); st.Probing || !st.Unconfirmed {
		t.Errorf("after a refused Start: %+v, want unconfirmed, no probe", st)
	}
	if first, second := tr.Start(tg), tr.Start(tg); !first || second {
		t.Errorf("Starts %v, %v: want the first to be the one probe", first, second)
	}
}

var errCheck = &health.CheckError{Target: "a", Status: 500}

// Available names when a target comes back: the later of its cooldown's end and the next check
// that may pass when both keep it out, the next check when only checks do, and no time while a
// probe is out (it is back when the probe reports, whenever that is).
func TestAvailableUntil(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tg := &core.Target{Name: "a", Index: 0, HealthInterval: 10 * time.Second}
	setup := func() (*health.ManualClock, *health.Tracker) {
		clk := health.NewManualClock(t0)
		return clk, health.NewTracker(1, clk, health.Policy{Failures: 1, Base: 30 * time.Second, CheckFailures: 1})
	}
	check := func(name string, tr *health.Tracker, want time.Time) {
		t.Helper()
		if ok, until := tr.Available(tg); ok || !until.Equal(want) {
			t.Errorf("%s: Available = %v, %v; want false, %v", name, ok, until, want)
		}
	}

	_, tr := setup()
	tr.ReportCheck(tg, health.CheckResult{Err: errCheck})
	check("checks only", tr, t0.Add(10*time.Second))

	clk, tr := setup()
	tr.Report(tg, core.ClassServerError, 0)
	tr.ReportCheck(tg, health.CheckResult{Err: errCheck})
	check("cooldown and checks: the cooldown ends later", tr, t0.Add(30*time.Second))
	clk.Advance(25 * time.Second)
	tr.ReportCheck(tg, health.CheckResult{Err: errCheck})
	check("cooldown and checks: the next check is later", tr, t0.Add(35*time.Second))

	clk, tr = setup()
	tr.Report(tg, core.ClassServerError, 0)
	clk.Advance(30 * time.Second)
	if !tr.Start(tg) {
		t.Fatal("no probe after the cooldown")
	}
	tr.ReportCheck(tg, health.CheckResult{Err: errCheck})
	check("a probe out", tr, time.Time{})
}
