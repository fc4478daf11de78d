//go:build unix

package lifecycle

import (
	"context"
	"path/filepath"
	"testing"
)

// TestPreWarmFollowsReload: a Reload that changes a member the state file's pre-warm is starting
// starts the new member in its stead, as it does a Warm's (TestWarmFollowsReload). The pre-warm
// was lost: the old process was stopped and nothing started the new one, so the first request
// after the restart found cold the model the state file says was in use.
func TestPreWarmFollowsReload(t *testing.T) {
	state := filepath.Join(t.TempDir(), "lru.json")
	if err := writeState(state, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	groups := []GroupSpec{{Name: "g", Slots: 1}}
	h := newHarness(t, []Spec{inGroup("g", fake("b", "-hang"))}, groups, Options{StateFile: state})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b's pre-warm to launch", func() bool { return h.status(t, "b").PID != 0 })
	old := h.status(t, "b").PID
	if err := h.m.Reload([]Spec{inGroup("g", fake("b"))}, groups); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new b to be started", func() bool {
		st := h.status(t, "b")
		return st.State == StateReady && st.Starts == 1
	})
	if !processGone(old) {
		t.Errorf("the pre-warm's process %d runs beside the new b in a group of one slot", old)
	}
}
