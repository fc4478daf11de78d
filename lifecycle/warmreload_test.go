//go:build unix

package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestWarmFollowsReload: a Reload that replaces a member whose background start (Warm) is under
// way, here waiting for the member it evicted to go, starts the new member of its name in its
// stead, as a request waiting for the old member goes on waiting for, and gets, the new one. The
// warm was lost: the old member was stopped before its launch and nothing started the new one, so
// the next request found it cold, which it would not have had the reload come before the warm or
// after its load.
func TestWarmFollowsReload(t *testing.T) {
	groups := []GroupSpec{{Name: "g", Slots: 1}}
	specs := []Spec{inGroup("g", fake("a", "-ignore-term")), inGroup("g", fake("b"))}
	changed := []Spec{specs[0], inGroup("g", fake("b", "-delay", "1ms"))}

	// start has b's start wait for a, evicted for it, to go (a ignores SIGTERM: its grace runs
	// on the fake clock), and returns what a request sees of a.
	start := func(t *testing.T, h *harness, begin func() error) int {
		t.Helper()
		h.use(t, "a")
		pid := h.status(t, "a").PID
		eventually(t, "a to ignore SIGTERM", func() bool { return termIgnored(pid) })
		if err := begin(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "b's start to wait for a to go", func() bool {
			st := h.status(t, "b")
			return st.State == StateStarting && st.PID == 0 && h.m.State("a") == StateStopping
		})
		return pid
	}

	t.Run("a request's start goes on with the new member", func(t *testing.T) {
		h := newHarness(t, specs, groups, Options{})
		got := make(chan error, 1)
		pidA := start(t, h, func() error {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				_, release, err := h.m.Ensure(ctx, "b")
				if err == nil {
					release()
				}
				got <- err
			}()
			eventually(t, "Ensure(b) to wait", func() bool { return waitingFor(h, "b") == 1 })
			return nil
		})
		if err := h.m.Reload(changed, groups); err != nil {
			t.Fatal(err)
		}
		h.passGraces()
		if err := <-got; err != nil {
			t.Fatalf("Ensure(b) across the reload: %v", err)
		}
		if st := h.status(t, "b"); st.State != StateReady || st.Starts != 1 {
			t.Errorf("new b: %+v, want ready after one start", st)
		}
		if !processGone(pidA) {
			t.Errorf("a's process %d runs beside b in a group of one slot", pidA)
		}
	})

	t.Run("a background start goes on with the new member", func(t *testing.T) {
		h := newHarness(t, specs, groups, Options{})
		pidA := start(t, h, func() error { return h.m.Warm(context.Background(), "b") })
		if err := h.m.Reload(changed, groups); err != nil {
			t.Fatal(err)
		}
		h.passGraces()
		eventually(t, "the new b to be started", func() bool {
			st := h.status(t, "b")
			return st.State == StateReady && st.Starts == 1
		})
		if !processGone(pidA) {
			t.Errorf("a's process %d runs beside b in a group of one slot", pidA)
		}
	})

	// The background start and a request's start of the new member start it once: each reserves
	// it only from stopped, under the one lock.
	t.Run("with a request's start of the new member starts it once", func(t *testing.T) {
		h := newHarness(t, specs, groups, Options{})
		start(t, h, func() error { return h.m.Warm(context.Background(), "b") })
		if err := h.m.Reload(changed, groups); err != nil {
			t.Fatal(err)
		}
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
		h.passGraces()
		if err := <-got; err != nil {
			t.Fatalf("Ensure(b): %v", err)
		}
		waitRewarms(t, h)
		if st := h.status(t, "b"); st.Starts != 1 {
			t.Errorf("new b: %+v, want one start", st)
		}
	})

	t.Run("Drain ends it", func(t *testing.T) {
		h := newHarness(t, specs, groups, Options{})
		start(t, h, func() error { return h.m.Warm(context.Background(), "b") })
		if err := h.m.Reload(changed, groups); err != nil {
			t.Fatal(err)
		}
		h.m.Drain()
		waitRewarms(t, h)
		if st := h.status(t, "b"); st.Starts != 0 {
			t.Errorf("new b: %+v, started once Drain was called", st)
		}
	})

	// A second reload that removes the target ends the background start: there is nothing to
	// start, which is no failure to warn of.
	t.Run("a reload that then removes the target ends it quietly", func(t *testing.T) {
		h := newHarness(t, specs, groups, Options{})
		start(t, h, func() error { return h.m.Warm(context.Background(), "b") })
		if err := h.m.Reload(changed, groups); err != nil {
			t.Fatal(err)
		}
		if err := h.m.Reload(specs[:1], groups); err != nil {
			t.Fatal(err)
		}
		waitRewarms(t, h)
		if log := h.log.String(); strings.Contains(log, "background start across a reload") {
			t.Errorf("warned of a background start of a removed target:\n%s", log)
		}
	})
}

// waitRewarms waits for the background starts Reloads made to end.
func waitRewarms(t *testing.T, h *harness) {
	t.Helper()
	ended := make(chan struct{})
	go func() {
		h.m.rewarms.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(15 * time.Second):
		t.Fatal("a background start across a reload did not end")
	}
}
