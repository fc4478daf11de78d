//go:build unix

package lifecycle

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestReloadChangedKeepsRecency: a Reload that changes a member's command restarts its process but
// not its history of use: the new member of the name keeps the old one's place in the LRU order
// and its LastUsed, so the state file saved after the old process has gone still lists it where
// it was, and a restart pre-warms it as the most recently used member it is (this test failed
// first: the changed member left the saved order, and the restart pre-warmed the older member).
func TestReloadChangedKeepsRecency(t *testing.T) {
	state := filepath.Join(t.TempDir(), "lru.json")
	groups := []GroupSpec{{Name: "g", Slots: 2}}
	h := newHarness(t, []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))}, groups,
		Options{StateFile: state})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h.use(t, "a")
	h.clock.Advance(time.Minute)
	h.use(t, "b") // b is the more recently used
	before := h.status(t, "b")

	if err := h.m.Reload([]Spec{inGroup("g", fake("a")), inGroup("g", fake("b", "-delay", "1ms"))},
		groups); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b's old process to stop", func() bool { return processGone(before.PID) })
	if st := h.status(t, "b"); !st.LastUsed.Equal(before.LastUsed) {
		t.Errorf("changed member's LastUsed after the reload: %v, want %v", st.LastUsed, before.LastUsed)
	}
	if err := h.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := readState(state); err != nil || !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("saved order: %v, %v; want [b a]", got, err)
	}

	// A restart with room for one pre-warms the most recently used: b.
	h2 := newHarness(t, []Spec{inGroup("g", fake("a")), inGroup("g", fake("b", "-delay", "1ms"))},
		[]GroupSpec{{Name: "g", Slots: 1}}, Options{StateFile: state})
	if err := h2.m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a member to be pre-warmed", func() bool { return len(h2.running()) == 1 })
	if got := h2.running(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("pre-warmed %v, want [b]", got)
	}
}

// TestReloadRetiredReleaseCountsForNewMember: an attempt that held the old process across the
// Reload is a use of the member of that name: its release is the new member's last use (this test
// failed first: the release counted only for the retired member, which nobody sees again).
func TestReloadRetiredReleaseCountsForNewMember(t *testing.T) {
	groups := []GroupSpec{{Name: "g", Slots: 2}}
	h := newHarness(t, []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))}, groups, Options{})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, release, err := h.m.Ensure(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Minute)
	h.use(t, "a")
	if err := h.m.Reload([]Spec{inGroup("g", fake("a")), inGroup("g", fake("b", "-delay", "1ms"))},
		groups); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Minute)
	release()
	if st, want := h.status(t, "b"), h.clock.Now(); !st.LastUsed.Equal(want) {
		t.Errorf("b's LastUsed after the held attempt ended: %v, want %v", st.LastUsed, want)
	}
	h.m.mu.Lock()
	a, b := h.m.byName["a"].seq, h.m.byName["b"].seq
	h.m.mu.Unlock()
	if b <= a {
		t.Errorf("b (released last) is older than a in the LRU order: seq %d <= %d", b, a)
	}
}
