package core

import (
	"testing"
	"time"
)

// TestStatsCarry: Stats carried over a reload count in the same Load as the ones they replace
// (attempts in flight begun and ended on either, the latency estimate), however many reloads
// carry them, and start with no degraded mark.
func TestStatsCarry(t *testing.T) {
	at := time.Unix(1000, 0)
	old := &Stats{}
	old.Begin()
	old.ObserveLatency(40*time.Millisecond, at)
	old.SetDegraded(true)
	mid := old.Carry()
	next := mid.Carry()
	if got := next.InFlight(); got != 1 {
		t.Errorf("in flight after two reloads: %d, want the old configuration's 1", got)
	}
	if got := next.LatencyAt(at); got != 40*time.Millisecond {
		t.Errorf("latency carried: %v, want 40ms", got)
	}
	if next.Degraded() || mid.Degraded() || !old.Degraded() {
		t.Errorf("degraded: old %v, carried %v %v; want only the old one's", old.Degraded(), mid.Degraded(), next.Degraded())
	}
	next.Begin()
	old.End()
	if old.InFlight() != 1 || next.InFlight() != 1 {
		t.Errorf("in flight after one ended on the old and one began on the new: %d and %d, want 1 and 1", old.InFlight(), next.InFlight())
	}
	if next.load != &old.own {
		t.Error("a carry of a carry does not count in the first Stats' Load")
	}
}
