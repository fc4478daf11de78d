//go:build unix

package lifecycle

import (
	"context"
	"testing"
	"time"
)

// TestWarmGivesWayToRequests holds Warm, the start of a member for no request (the server's
// background start of a target a request passed by cold), to giving way to the starts requests
// wait for: it takes no slot a request waits for, and once launched a request may evict it.
func TestWarmGivesWayToRequests(t *testing.T) {
	t.Run("a slot that frees goes to the waiting request, not to the earlier warm", func(t *testing.T) {
		specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b")), inGroup("g", fake("c"))}
		h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
		_, releaseA, err := h.m.Ensure(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		warmed := make(chan error, 1)
		go func() { warmed <- h.m.Warm(context.Background(), "b") }()
		eventually(t, "the warm of b to wait for a slot", func() bool {
			h.m.mu.Lock()
			defer h.m.mu.Unlock()
			return h.m.warmsWaiting == 1
		})
		gotC := make(chan func(), 1)
		go func() {
			_, release, err := h.m.Ensure(context.Background(), "c")
			if err != nil {
				t.Errorf("Ensure(c): %v", err)
				release = func() {}
			}
			gotC <- release
		}()
		eventually(t, "c's start to join the slot line", func() bool {
			h.m.mu.Lock()
			defer h.m.mu.Unlock()
			return len(h.m.slotLine) == 1
		})
		releaseA()
		releaseC := <-gotC
		if st := h.status(t, "b"); st.Starts != 0 || st.State != StateStopped {
			t.Errorf("b was started ahead of the request waiting for c: %+v", st)
		}
		select {
		case err := <-warmed:
			t.Fatalf("Warm(b) returned %v while c, in use, holds the only slot", err)
		default:
		}
		releaseC()
		// c is idle now: the warm evicts it, as a request's start would.
		if err := <-warmed; err != nil {
			t.Fatalf("Warm(b) once c was idle: %v", err)
		}
		eventually(t, "b to be ready", func() bool { return h.status(t, "b").State == StateReady })
	})

	t.Run("a member warmed for nobody is evicted for a request while it loads", func(t *testing.T) {
		specs := []Spec{inGroup("g", fake("a", "-hang")), inGroup("g", fake("b"))}
		h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
		if err := h.m.Warm(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a's process to launch", func() bool { return h.status(t, "a").PID != 0 })
		pidA := h.status(t, "a").PID
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, release, err := h.m.Ensure(ctx, "b")
		if err != nil {
			t.Fatalf("Ensure(b) while a loads for nobody: %v", err)
		}
		release()
		if !processGone(pidA) {
			t.Errorf("a's process %d runs beside b in a group of one slot", pidA)
		}
	})

	t.Run("a warm that evicted goes on though nobody waits", func(t *testing.T) {
		specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))}
		h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
		_, release, err := h.m.Ensure(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		release()
		if err := h.m.Warm(context.Background(), "b"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "b to be ready", func() bool { return h.status(t, "b").State == StateReady })
		if st := h.status(t, "a"); st.State != StateStopped {
			t.Errorf("a beside b in a group of one slot: %+v", st)
		}
	})

	t.Run("a running or starting member is left as it is", func(t *testing.T) {
		h := newHarness(t, []Spec{fake("a")}, nil, Options{})
		_, release, err := h.m.Ensure(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if err := h.m.Warm(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
		if st := h.status(t, "a"); st.Starts != 1 {
			t.Errorf("starts %d, want 1", st.Starts)
		}
		if err := h.m.Warm(context.Background(), "nobody"); err == nil {
			t.Error("Warm of an unknown target: no error")
		}
	})
}
