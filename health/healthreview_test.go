package health_test

import (
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
