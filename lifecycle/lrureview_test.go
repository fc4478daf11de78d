//go:build unix

package lifecycle

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestRetiredNewcomerGivesVictimSlotBack: a member evicted for a newcomer stops counting in the
// group's slots at once, since the newcomer counts in its place; when a Reload retires the
// newcomer before its victim has gone, the victim, still in its grace, must count again, or a
// third member starts beside it in a one-slot group.
func TestRetiredNewcomerGivesVictimSlotBack(t *testing.T) {
	c := inGroup("g", fake("c"))
	c.LoadTimeout = 2 * time.Hour // waits out a's grace
	specs := []Spec{inGroup("g", fake("a", "-ignore-term")), inGroup("g", fake("b")), c}
	groups := []GroupSpec{{Name: "g", Slots: 1}}
	h := newHarness(t, specs, groups, Options{StopGrace: time.Hour})
	h.use(t, "a")
	pidA := h.status(t, "a").PID
	eventually(t, "a to ignore SIGTERM", func() bool { return termIgnored(pidA) })

	ctx, cancel := context.WithCancel(context.Background())
	gotB := make(chan error, 1)
	go func() {
		_, _, err := h.m.Ensure(ctx, "b")
		gotB <- err
	}()
	eventually(t, "a to be evicted for b", func() bool {
		_, ok := h.clock.Next(time.Hour)
		return ok && h.m.State("b") == StateStarting
	})
	cancel()
	if err := <-gotB; !errors.Is(err, context.Canceled) {
		t.Fatalf("Ensure(b) after cancel: %v", err)
	}
	// b changes: the b that a was evicted for is retired before a has gone.
	changed := slices.Clone(specs)
	changed[1] = inGroup("g", fake("b", "-delay", "1ms"))
	if err := h.m.Reload(changed, groups); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the retired b to stop", func() bool {
		for _, st := range h.m.Status() {
			if st.Retired {
				return false
			}
		}
		return true
	})

	gotC := make(chan error, 1)
	go func() {
		_, release, err := h.m.Ensure(context.Background(), "c")
		if err == nil {
			release()
		}
		gotC <- err
	}()
	cm := h.m.member("c")
	inLine := func() bool {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return slices.Contains(h.m.slotLine, cm)
	}
	var early error
	returned := false
	eventually(t, "c to wait for the slot or be served", func() bool {
		select {
		case early = <-gotC:
			returned = true
			return true
		default:
			return inLine()
		}
	})
	if returned {
		t.Fatalf("c was served (err %v) while a (pid %d, gone %v) was still in its grace: two processes in a one-slot group",
			early, pidA, processGone(pidA))
	}
	h.clock.Advance(time.Hour)
	if err := <-gotC; err != nil {
		t.Fatalf("Ensure(c) once a has gone: %v", err)
	}
	if !processGone(pidA) {
		t.Errorf("a (pid %d) runs beside c", pidA)
	}
}

// TestReloadAfterDrainStartsNoPinned: once Drain is called nothing starts, and a Reload that
// comes then (one the gateway's stop caught while it built) starts no pinned member it adds.
func TestReloadAfterDrainStartsNoPinned(t *testing.T) {
	h := newHarness(t, []Spec{fake("a")}, nil, Options{})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.m.Drain()
	specs := []Spec{fake("a"), inGroup("p", fake("pinned"))}
	if err := h.m.Reload(specs, []GroupSpec{{Name: "p", Slots: 1, Pinned: []string{"pinned"}}}); err != nil {
		t.Fatal(err)
	}
	if st := h.status(t, "pinned"); st.State != StateStopped {
		t.Errorf("a pinned member a Reload added after Drain is %s, want stopped", st.State)
	}
}

// TestNoSlotLoadTimeoutNamesGroup: a request whose group stays full of members in use for its
// whole load_timeout gets a *LoadTimeoutError that names the group (nothing of its target loaded),
// and one whose process loads too slowly gets one that does not.
func TestNoSlotLoadTimeoutNamesGroup(t *testing.T) {
	b := inGroup("g", fake("b"))
	b.LoadTimeout = time.Minute
	slow := inGroup("h", fake("slow", "-hang"))
	slow.LoadTimeout = time.Minute
	specs := []Spec{inGroup("g", fake("a")), b, slow}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}, {Name: "h", Slots: 1}}, Options{})
	_, releaseA, err := h.m.Ensure(context.Background(), "a") // a long stream
	if err != nil {
		t.Fatal(err)
	}
	defer releaseA()
	for _, tc := range []struct{ target, group string }{{"b", "g"}, {"slow", ""}} {
		got := make(chan error, 1)
		go func() {
			_, release, err := h.m.Ensure(context.Background(), tc.target)
			if err == nil {
				release()
			}
			got <- err
		}()
		if tc.group == "" {
			eventually(t, "slow to launch", func() bool { return h.status(t, "slow").PID != 0 })
		} else {
			eventually(t, "b's request to wait for the slot", func() bool { return h.clock.Pending() > 0 })
		}
		h.clock.Advance(time.Minute)
		err := <-got
		lt, ok := errors.AsType[*LoadTimeoutError](err)
		if !ok || lt.Group != tc.group {
			t.Errorf("Ensure(%s) at load_timeout: %v (%#v), want a *LoadTimeoutError with Group %q", tc.target, err, lt, tc.group)
		}
	}
}

// TestReloadToNoneKeepsStateFile: a Reload to a configuration with no managed target at all (a
// server that took the manager over, so that the old processes stop once unused) leaves the
// state file's order as the last configuration with some left it, rather than empty it: a
// restart with the commands back pre-warms what was in use.
func TestReloadToNoneKeepsStateFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "lru.json")
	specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2}}, Options{StateFile: state})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.use(t, "b")
	h.use(t, "a")
	if err := h.m.Reload(nil, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the retired processes to stop", func() bool { return len(h.m.Status()) == 0 })
	if err := h.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if recent, err := readState(state); err != nil || !slices.Equal(recent, []string{"a", "b"}) {
		t.Errorf("state file after a reload to no managed target: %v, %v; want [a b]", recent, err)
	}
}

// TestWaitForRemovedTargetEnds: a request waiting for a slot for a target that a Reload removes
// gets ErrRemoved at once, not an unknown target's error (the server's 502, counted against the
// target) nor a wait for a process that will never start.
func TestWaitForRemovedTargetEnds(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))}
	groups := []GroupSpec{{Name: "g", Slots: 1}}
	h := newHarness(t, specs, groups, Options{})
	_, releaseA, err := h.m.Ensure(context.Background(), "a") // a long stream
	if err != nil {
		t.Fatal(err)
	}
	defer releaseA()
	got := make(chan error, 1)
	go func() {
		_, release, err := h.m.Ensure(context.Background(), "b")
		if err == nil {
			release()
		}
		got <- err
	}()
	eventually(t, "b's request to wait for the slot", func() bool { return h.clock.Pending() > 0 })
	if err := h.m.Reload(specs[:1], groups); err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, ErrRemoved) {
		t.Errorf("Ensure(b) once a reload removed b: %v, want ErrRemoved", err)
	}
}

// TestEnsureRemovedTarget: an attempt of the replaced configuration, still under way, on a target
// the Reload removed gets ErrRemoved (the server's 503, not counted against the target), as a
// request that waited for it does; a name never managed is still an UnknownTargetError, and one
// that a later Reload brings back is served.
func TestEnsureRemovedTarget(t *testing.T) {
	specs := []Spec{fake("a"), fake("b")}
	h := newHarness(t, specs, nil, Options{})
	if err := h.m.Reload(specs[:1], nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.m.Ensure(context.Background(), "b"); !errors.Is(err, ErrRemoved) {
		t.Errorf("Ensure(b) after a reload removed it: %v, want ErrRemoved", err)
	}
	if _, _, err := h.m.Ensure(context.Background(), "never"); !errors.As(err, new(*UnknownTargetError)) {
		t.Errorf("Ensure(never): %v, want *UnknownTargetError", err)
	}
	if err := h.m.Reload(specs, nil); err != nil {
		t.Fatal(err)
	}
	h.use(t, "b")
}
