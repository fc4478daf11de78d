//go:build unix

package lifecycle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A request waiting for a pinned member that cannot start gets the start's failure (a
// connection failure) when the launch it waited for fails, as for an unpinned member, instead of
// waiting out load_timeout through every restart and being told the model is loading.
func TestPinnedStartFailureAnswersWaiter(t *testing.T) {
	specs := []Spec{inGroup("g", fake("p", "-crash-at-start")), inGroup("g", fake("a"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2, Pinned: []string{"p"}}},
		Options{RestartBackoff: time.Second, MaxRestartBackoff: time.Second})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "p to wait for its first restart", func() bool {
		return h.status(t, "p").State == StateBackoff
	})
	got := make(chan error, 1)
	go func() {
		_, _, err := h.m.Ensure(context.Background(), "p")
		got <- err
	}()
	// The request's load_timeout timer joins the restart's.
	eventually(t, "the request to wait", func() bool { return h.clock.Pending() == 2 })
	h.clock.Advance(2 * time.Second) // the restart, which fails at once
	select {
	case err := <-got:
		var pe *ProcessError
		if !errors.As(err, &pe) || pe.Target != "p" {
			t.Fatalf("Ensure(p) = %v, want *ProcessError", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ensure(p) still waiting after the restart it waited for failed")
	}
}

// A request still holds the URL of a process that crashed under it (its same-target retries use
// it): that port must not go to another target's next process meanwhile, else the retry is
// answered by the other target's model.
func TestCrashedPortNotReusedWhileHeld(t *testing.T) {
	h := newHarness(t, []Spec{fake("a", "-crash-after", "1"), fake("b")}, nil, Options{})
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	scriptPorts(h.m, port, port) // the kernel's answer to a's launch, and again to b's
	urlA, release, err := h.m.Ensure(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if model, err := chat(urlA); err != nil || model != "a" {
		t.Fatalf("first chat with a: %q, %v", model, err)
	}
	if _, err := chat(urlA); err == nil {
		t.Fatal("chat with a succeeded; its process should have crashed")
	}
	eventually(t, "a's crash to be seen", func() bool { return h.m.State("a") == StateBackoff })
	urlB := h.use(t, "b")
	if model, err := chat(urlA); err == nil {
		t.Errorf("a retry at a's URL %s (b has %s) was answered by %q", urlA, urlB, model)
	}
}

// Each request waits up to load_timeout from its own arrival: one that joins a start already
// under way (which waited for a slot first) is not cut short when the first request's wait ends.
func TestLateJoinerWaitsItsOwnLoadTimeout(t *testing.T) {
	loaded := filepath.Join(t.TempDir(), "x.loaded")
	x := inGroup("g", fake("x", "-wait-file", loaded)) // loads until the test says
	x.LoadTimeout = 30 * time.Second
	h := newHarness(t, []Spec{inGroup("g", fake("a")), x}, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	_, releaseA, err := h.m.Ensure(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ensure := func() chan error {
		got := make(chan error, 1)
		go func() {
			_, release, err := h.m.Ensure(context.Background(), "x")
			if err == nil {
				release()
			}
			got <- err
		}()
		return got
	}
	waiters := func() int {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return h.m.byName["x"].waiting
	}
	first := ensure() // waits for a's slot from t=0
	eventually(t, "the first request to wait", func() bool { return waiters() == 1 && h.clock.Pending() == 1 })
	h.clock.Advance(20 * time.Second)
	releaseA() // x evicts a and loads until the first request has timed out
	eventually(t, "x to be launched", func() bool { return h.status(t, "x").PID != 0 })
	second := ensure() // from t=20s: may wait until t=50s
	eventually(t, "the second request to wait", func() bool { return waiters() == 2 })
	h.clock.Advance(10 * time.Second) // t=30s: the first request's load_timeout
	var lt *LoadTimeoutError
	if err := <-first; !errors.As(err, &lt) {
		t.Fatalf("first request: %v, want *LoadTimeoutError", err)
	}
	if err := os.WriteFile(loaded, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("second request, 10s into its 30s load_timeout: %v", err)
	}
}

// idle_stop counts from the last request, also across a crash: a member that crashed while idle
// and was restarted is stopped once idle_stop has passed since its last use, not a whole
// idle_stop after the restart (a model server that dies now and then would otherwise never be
// idle-stopped).
func TestIdleStopCountsAcrossRestart(t *testing.T) {
	spec := fake("a")
	spec.IdleStop = time.Minute
	h := newHarness(t, []Spec{spec}, nil, Options{RestartBackoff: time.Second, MaxRestartBackoff: time.Second})
	h.use(t, "a") // last use at t=0
	h.clock.Advance(50 * time.Second)
	pid := h.status(t, "a").PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a's crash to be seen", func() bool { return h.m.State("a") == StateBackoff })
	h.clock.Advance(2 * time.Second) // the restart, at t=52s
	eventually(t, "a to be restarted", func() bool {
		st := h.status(t, "a")
		return st.State == StateReady && st.PID != pid
	})
	h.clock.Advance(10 * time.Second) // t=62s: a minute without requests
	if st := h.m.State("a"); st != StateStopping && st != StateStopped {
		t.Errorf("a minute after its last use, a restarted while idle is %s, want stopping", st)
	}
}

// A member is used until its request ends: one whose long request ended after another member's
// short one was used more recently, and the other is evicted first.
func TestRecencyCountsTheEndOfAUse(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b")), inGroup("g", fake("c"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2}}, Options{})
	_, releaseA, err := h.m.Ensure(context.Background(), "a") // a long stream begins
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Second)
	h.use(t, "b") // a short request
	h.clock.Advance(time.Minute)
	releaseA() // the stream ends: a was in use a minute after b
	h.clock.Advance(time.Second)
	h.use(t, "c")
	eventually(t, "the victim to stop", func() bool { return len(h.running()) == 2 })
	if diff := cmp.Diff([]string{"a", "c"}, h.running()); diff != "" {
		t.Errorf("running after c needed a slot (-want +got):\n%s", diff)
	}
}

// A request that gives up while its member waits for a slot takes the start with it: the slot
// that frees later does not go to a model nobody waits for, evicting one that is in use.
func TestAbandonedWaitForSlotStartsNothing(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	_, releaseA, err := h.m.Ensure(context.Background(), "a") // a long stream
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, _, err := h.m.Ensure(ctx, "b")
		got <- err
	}()
	eventually(t, "b's request to wait for the slot", func() bool { return h.clock.Pending() == 1 })
	cancel() // the client leaves
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("Ensure(b) after cancel: %v", err)
	}
	releaseA() // the stream ends: the slot is free
	deadline := time.Now().Add(2 * time.Second)
	for h.clock.Pending() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := h.status(t, "b"); st.State != StateStopped || st.Starts != 0 {
		t.Errorf("b, which nobody waits for any more: %+v", st)
	}
	if diff := cmp.Diff([]string{"a"}, h.running()); diff != "" {
		t.Errorf("running (-want +got):\n%s", diff)
	}
}

// A request that gives up while its member waits for the member it evicted to exit launches
// nothing once that one has gone.
func TestAbandonedWaitForVictimLaunchesNothing(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a", "-ignore-term")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{StopGrace: 500 * time.Millisecond})
	h.use(t, "a")
	pidA := h.status(t, "a").PID
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, _, err := h.m.Ensure(ctx, "b")
		got <- err
	}()
	eventually(t, "a to be evicted for b", func() bool {
		return h.m.State("a") == StateStopping && h.m.State("b") == StateStarting
	})
	cancel() // the client leaves while a takes its grace to exit
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("Ensure(b) after cancel: %v", err)
	}
	eventually(t, "a's grace to start", func() bool {
		_, ok := h.clock.Next(500 * time.Millisecond)
		return ok
	})
	h.clock.Advance(500 * time.Millisecond)
	eventually(t, "a's process to exit", func() bool { return processGone(pidA) })
	eventually(t, "b to settle", func() bool {
		st := h.m.State("b")
		return st == StateStopped || st == StateReady
	})
	if st := h.status(t, "b"); st.State != StateStopped || st.Starts != 0 {
		t.Errorf("b, which nobody waits for any more: %+v", st)
	}
}
