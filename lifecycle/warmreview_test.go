//go:build unix

package lifecycle

import (
	"context"
	"testing"
	"time"
)

// TestWarmOfStoppingMemberStarts: a background start asked while the member is stopping (idle
// stop or eviction under way, its process in its grace) waits for it to stop and then starts it,
// as Ensure does. Warm took a stopping member for one starting or running and returned, and the
// start never happened.
func TestWarmOfStoppingMemberStarts(t *testing.T) {
	spec := fake("a", "-ignore-term")
	spec.IdleStop = time.Minute
	h := newHarness(t, []Spec{spec}, nil, Options{})
	h.use(t, "a")
	pid := h.status(t, "a").PID
	eventually(t, "a to ignore SIGTERM", func() bool { return termIgnored(pid) })
	h.clock.Advance(time.Minute)
	if st := h.m.State("a"); st != StateStopping {
		t.Fatalf("a is %s after its idle_stop, want stopping", st)
	}
	warmed := make(chan error, 1)
	go func() { warmed <- h.m.Warm(context.Background(), "a") }()
	h.passGraces()
	if err := <-warmed; err != nil {
		t.Fatalf("Warm(a): %v", err)
	}
	eventually(t, "a to be started again", func() bool {
		st := h.status(t, "a")
		return st.State == StateReady && st.Starts == 2
	})
	if !processGone(pid) {
		t.Errorf("a's first process %d still runs", pid)
	}
}

// TestWarmGivesWayWhileVictimStops: a background start that evicted a member waits for it to go
// before launching; a request's start that joined its group's line meanwhile gets the slot, and
// the warmed member is not launched only to be evicted for it (a spawn and a stop grace the
// request waited for).
func TestWarmGivesWayWhileVictimStops(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a", "-ignore-term")), inGroup("g", fake("b")), inGroup("g", fake("c"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	h.use(t, "a")
	pid := h.status(t, "a").PID
	eventually(t, "a to ignore SIGTERM", func() bool { return termIgnored(pid) })
	if err := h.m.Warm(context.Background(), "b"); err != nil {
		t.Fatalf("Warm(b): %v", err)
	}
	gotC := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, release, err := h.m.Ensure(ctx, "c")
		if err == nil {
			release()
		}
		gotC <- err
	}()
	eventually(t, "c's start to join the slot line", func() bool {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return len(h.m.slotLine) == 1
	})
	h.passGraces()
	if err := <-gotC; err != nil {
		t.Fatalf("Ensure(c): %v", err)
	}
	if st := h.status(t, "b"); st.Starts != 0 {
		t.Errorf("b, warmed for nobody, was launched while a request waited for its slot: %+v", st)
	}
}
