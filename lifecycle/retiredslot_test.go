//go:build unix

package lifecycle

import (
	"context"
	"testing"
)

// TestNewMemberTakesRetiredSlot: the new member of a name that a Reload changed starts in the
// slot its old process holds, since it waits for that process to go anyway; it does not evict
// another member for a slot of its own. Both counted, a full group lost an idle model for
// nothing: after the old process had gone, a slot stood free where it had run. Through Warm's
// start across the reload (TestWarmFollowsReload) a Reload alone evicted, though nothing is
// evicted for the reload itself.
func TestNewMemberTakesRetiredSlot(t *testing.T) {
	groups := []GroupSpec{{Name: "g", Slots: 2}}

	t.Run("a request's start", func(t *testing.T) {
		specs := []Spec{inGroup("g", fake("x")), inGroup("g", fake("b"))}
		h := newHarness(t, specs, groups, Options{})
		h.use(t, "x")
		h.use(t, "b")
		pidX := h.status(t, "x").PID
		if err := h.m.Reload([]Spec{specs[0], inGroup("g", fake("b", "-delay", "1ms"))}, groups); err != nil {
			t.Fatal(err)
		}
		h.use(t, "b")
		if st := h.status(t, "x"); st.State != StateReady || st.PID != pidX {
			t.Errorf("x: %+v, want still running as process %d", st, pidX)
		}
	})

	t.Run("a background start across the reload", func(t *testing.T) {
		specs := []Spec{inGroup("g", fake("x")), inGroup("g", fake("b", "-hang"))}
		h := newHarness(t, specs, groups, Options{})
		h.use(t, "x")
		pidX := h.status(t, "x").PID
		if err := h.m.Warm(context.Background(), "b"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "b's process to launch", func() bool { return h.status(t, "b").PID != 0 })
		if err := h.m.Reload([]Spec{specs[0], inGroup("g", fake("b"))}, groups); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the new b to be started", func() bool {
			st := h.status(t, "b")
			return st.State == StateReady && st.Starts == 1
		})
		if st := h.status(t, "x"); st.State != StateReady || st.PID != pidX {
			t.Errorf("x: %+v, want still running as process %d", st, pidX)
		}
	})
}
