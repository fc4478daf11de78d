package health_test

import (
	"context"
	"net/http"
	"net/http/httptest"
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
