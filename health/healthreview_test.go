package health_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/health"
)

// A cooldown policy whose cap is near the longest Duration still benches for longer each time:
// the doubling must not wrap to a negative or zero cooldown.
func TestBackoffNeverWraps(t *testing.T) {
	clk := health.NewManualClock(t0)
	max, err := time.ParseDuration("2562047h") // the longest cooldown.max a config can say
	if err != nil {
		t.Fatal(err)
	}
	tr := health.NewTracker(1, clk, health.Policy{Failures: 1, Base: 30 * time.Second, Max: max})
	tg := &core.Target{Name: "a", Index: 0}
	prev := time.Duration(0)
	for i := range 40 {
		tr.Report(tg, core.ClassConnection, 0)
		st := tr.Snapshot(tg)
		d := st.Until.Sub(clk.Now())
		if !st.Cooling || d < prev {
			t.Fatalf("cooldown %d: cooling %v for %v, after %v", i+1, st.Cooling, d, prev)
		}
		prev = d
		clk.Set(st.Until) // the cooldown ends; the next failure is the probe's
	}
}

// A check's Retry-After so negative that it does not fit a Duration is no wait at all: it must
// not wrap to a long one.
func TestCheckNegativeRetryAfterDoesNotWrap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "-9223372037")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	clk := health.NewManualClock(t0)
	tr := health.NewTracker(1, clk, health.Policy{})
	tg := &core.Target{Name: "a", Index: 0, HealthURL: srv.URL, HealthInterval: time.Second, HealthTimeout: 5 * time.Second}
	c := health.NewChecker(tr, []*core.Target{tg}, health.CheckerOptions{Clock: clk})
	defer c.Close()
	r, _ := c.Check(context.Background(), tg)
	if r.RetryAfter != 0 {
		t.Errorf("RetryAfter = %v, want 0", r.RetryAfter)
	}
	if st := tr.Snapshot(tg); st.LoadingUntil.Sub(t0) != health.DefaultLoadingRetry {
		t.Errorf("loading until %v after now, want %v", st.LoadingUntil.Sub(t0), health.DefaultLoadingRetry)
	}
}

// An outcome that says nothing about the target (the client left, the request was wrong, it did
// not fit, the endpoint refused it), reported by an attempt other than the probe, leaves the
// probe in flight: admitting another would send a second request to a target not yet known to
// be back. The probe's own such outcome ends it (Abandon), so that the next attempt probes.
func TestProbeOutlivesOtherAttemptsNonEvidence(t *testing.T) {
	for _, c := range []core.Class{core.ClassClientGone, core.ClassRequest, core.ClassOverflow, core.ClassEndpoint} {
		t.Run(c.String(), func(t *testing.T) {
			clk := health.NewManualClock(t0)
			tr := health.NewTracker(1, clk, health.Policy{Failures: 1, Base: 30 * time.Second})
			tg := &core.Target{Name: "a", Index: 0}
			tr.Report(tg, core.ClassConnection, 0)
			clk.Advance(30 * time.Second)
			if ok, probe := tr.Begin(tg); !ok || !probe {
				t.Fatalf("Begin after the cooldown = (%v, %v), want the probe", ok, probe)
			}
			tr.Report(tg, c, 0) // an attempt that started before the bench, or failed open
			if ok, probe := tr.Begin(tg); ok || probe {
				t.Fatalf("Begin while the probe is in flight = (%v, %v), want (false, false)", ok, probe)
			}
			if st := tr.Snapshot(tg); st.Status != health.StatusProbing {
				t.Fatalf("status %q, want probing", st.Status)
			}
			tr.Report(tg, c, 0) // the probe's own
			tr.Abandon(tg)
			if ok, probe := tr.Begin(tg); !ok || !probe {
				t.Fatalf("Begin after the probe ended = (%v, %v), want the next probe", ok, probe)
			}
		})
	}
}

// A check's Retry-After is read as a request's is (upstream): one that is absurd (over 10⁹
// seconds, or a date that far ahead) is ignored, so a loading answer holds the target back for
// LoadingRetry, as the same answer to a request would, not for cooldown.max.
func TestCheckAbsurdRetryAfterIgnored(t *testing.T) {
	for _, h := range []string{"1000000001", "99999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		t.Run(h, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", h)
				w.WriteHeader(http.StatusServiceUnavailable)
			}))
			defer srv.Close()
			clk := health.NewManualClock(t0)
			tr := health.NewTracker(1, clk, health.Policy{})
			tg := &core.Target{Name: "a", Index: 0, HealthURL: srv.URL, HealthInterval: time.Second, HealthTimeout: 5 * time.Second}
			c := health.NewChecker(tr, []*core.Target{tg}, health.CheckerOptions{Clock: clk})
			defer c.Close()
			r, _ := c.Check(context.Background(), tg)
			if !r.Loading || r.RetryAfter != 0 {
				t.Errorf("Loading %v RetryAfter %v, want loading with no wait", r.Loading, r.RetryAfter)
			}
			if st := tr.Snapshot(tg); st.LoadingUntil.Sub(t0) != health.DefaultLoadingRetry {
				t.Errorf("loading until %v after now, want %v", st.LoadingUntil.Sub(t0), health.DefaultLoadingRetry)
			}
		})
	}
}

// Under many racing attempts, of which only the probe ends its claim (Abandon) and the others end
// in ways that say nothing about the target, there is never more than one probe out at a time.
func TestOneProbeAtATimeUnderRacingAttempts(t *testing.T) {
	clk := health.NewManualClock(t0)
	tr := health.NewTracker(1, clk, health.Policy{Failures: 1, Base: time.Second})
	tg := &core.Target{Name: "a", Index: 0}
	tr.Report(tg, core.ClassConnection, 0)
	clk.Advance(time.Second)
	var out, most atomic.Int32
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			for range 50 {
				ok, probe := tr.Begin(tg)
				if !probe {
					if !ok || i%2 == 0 { // failed open, or began before the bench
						tr.Report(tg, core.ClassClientGone, 0)
					}
					continue
				}
				n := out.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				out.Add(-1)
				tr.Report(tg, core.ClassRequest, 0)
				tr.Abandon(tg)
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("at most %d probes out at once, want 1", m)
	}
}
