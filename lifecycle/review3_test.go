//go:build unix

package lifecycle

import (
	"context"
	"testing"
	"time"
)

// The SIGTERM grace runs on the manager's clock: a member that ignores SIGTERM stays until the
// clock has moved past the grace, however long that takes in real time, and is killed then.
func TestStopGraceOnClock(t *testing.T) {
	b := inGroup("g", fake("b"))
	b.LoadTimeout = 2 * time.Hour // waits out a's grace
	specs := []Spec{inGroup("g", fake("a", "-ignore-term")), b}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{StopGrace: time.Hour})
	h.use(t, "a")
	pidA := h.status(t, "a").PID
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, release, err := h.m.Ensure(ctx, "b")
		if err == nil {
			release()
		}
		got <- err
	}()
	eventually(t, "a's grace to start on the clock", func() bool {
		_, ok := h.clock.Next(time.Hour)
		return ok
	})
	if processGone(pidA) || h.m.State("a") != StateStopping {
		t.Fatalf("a before its grace has passed: gone %v, state %s", processGone(pidA), h.m.State("a"))
	}
	h.clock.Advance(time.Hour)
	if err := <-got; err != nil {
		t.Fatalf("Ensure(b): %v", err)
	}
	if !processGone(pidA) {
		t.Errorf("a (pid %d) outlived its grace", pidA)
	}
}
