package health_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/health"
)

// TestOnChangeInOrderUnderConcurrentReports: eight goroutines report successes and failures of
// one target at once (Failures 1, on a clock that stands still, so that only reports change its
// status). The changes OnChange is told of must chain as a sequence of reports could have made
// them, each from where the one before went, and end where the target is: a log that shows
// "cooling → healthy" and then "healthy → cooling" for a healthy target sends its reader the
// wrong way.
func TestOnChangeInOrderUnderConcurrentReports(t *testing.T) {
	type change struct{ from, to string }
	var (
		mu  sync.Mutex
		got []change
	)
	clk := health.NewManualClock(t0)
	tr := health.NewTracker(1, clk, health.Policy{Failures: 1, OnChange: func(_ *core.Target, from, to string) {
		runtime.Gosched() // as a log's write would: another report may come in meanwhile
		mu.Lock()
		got = append(got, change{from, to})
		mu.Unlock()
	}})
	tg := &core.Target{Name: "a"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				c := core.ClassNone
				if (g+i)%2 == 0 {
					c = core.ClassServerError
				}
				tr.Report(tg, c, 0)
			}
		})
	}
	wg.Wait()
	at, broken := health.StatusHealthy, 0
	for i, c := range got {
		if c.from != at {
			if broken == 0 {
				t.Errorf("change %d of %d: %s → %s, after a change to %s", i, len(got), c.from, c.to, at)
			}
			broken++
		}
		at = c.to
	}
	if broken > 0 {
		t.Errorf("%d of %d changes did not start where the one before ended", broken, len(got))
	}
	if st := tr.Snapshot(tg).Status; at != st {
		t.Errorf("the last change told was to %s; the target is %s", at, st)
	}
}
