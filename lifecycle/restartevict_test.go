//go:build unix

package lifecycle

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestUnwantedRestartEvictable: an unpinned member that crashed after a healthy run restarts with
// nobody waiting for it nor holding it; while that restart loads (here it never passes its health
// check), a request for another member of its full group evicts it, rather than wait for a load
// nobody asked for, its whole load_timeout when the load never ends.
func TestUnwantedRestartEvictable(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	specs := []Spec{
		inGroup("g", fake("a", "-crash-after", "1", "-starts", starts, "-hang-from", "2")),
		inGroup("g", fake("b")),
	}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}},
		Options{RestartBackoff: time.Second, MaxRestartBackoff: time.Second})
	url := h.use(t, "a")
	if _, err := chat(url); err != nil {
		t.Fatal(err)
	}
	if _, err := chat(url); err == nil {
		t.Fatal("second chat succeeded; a should have crashed")
	}
	eventually(t, "a to wait for its restart", func() bool { return h.m.State("a") == StateBackoff })
	h.clock.Advance(2 * time.Second)
	eventually(t, "a's restart to launch", func() bool {
		st := h.status(t, "a")
		return st.State == StateStarting && st.PID != 0
	})
	pidA := h.status(t, "a").PID

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url, release, err := h.m.Ensure(ctx, "b")
	if err != nil {
		t.Fatalf("Ensure(b) while a's unwanted restart loads: %v", err)
	}
	defer release()
	if got, err := chat(url); err != nil || got != "b" {
		t.Errorf("b answered %q, %v", got, err)
	}
	if !processGone(pidA) {
		t.Errorf("a's restarting process %d runs beside b in a group of one slot", pidA)
	}
}

// TestUnaskedLoadsEvictable: a member loading for nobody — pre-warmed from the state file, or
// launched for a request that has gone — is stopped for a request for another member of its full
// group, rather than make that request wait for the load (here one that never passes its health
// check, so the request would wait out its load_timeout).
func TestUnaskedLoadsEvictable(t *testing.T) {
	t.Run("pre-warm", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "lru.json")
		if err := writeState(state, []string{"a"}); err != nil {
			t.Fatal(err)
		}
		specs := []Spec{inGroup("g", fake("a", "-hang")), inGroup("g", fake("b"))}
		h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{StateFile: state})
		if err := h.m.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a's pre-warm to launch", func() bool { return h.status(t, "a").PID != 0 })
		pidA := h.status(t, "a").PID
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, release, err := h.m.Ensure(ctx, "b")
		if err != nil {
			t.Fatalf("Ensure(b) while a pre-warms: %v", err)
		}
		release()
		if !processGone(pidA) {
			t.Errorf("a's pre-warming process %d runs beside b in a group of one slot", pidA)
		}
	})
	t.Run("abandoned", func(t *testing.T) {
		specs := []Spec{inGroup("g", fake("a", "-hang")), inGroup("g", fake("b"))}
		h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
		actx, acancel := context.WithCancel(context.Background())
		gotA := make(chan error, 1)
		go func() {
			_, _, err := h.m.Ensure(actx, "a")
			gotA <- err
		}()
		eventually(t, "a's process to launch", func() bool { return h.status(t, "a").PID != 0 })
		pidA := h.status(t, "a").PID
		acancel()
		<-gotA
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, release, err := h.m.Ensure(ctx, "b")
		if err != nil {
			t.Fatalf("Ensure(b) while a loads for nobody: %v", err)
		}
		release()
		if !processGone(pidA) {
			t.Errorf("a's abandoned process %d runs beside b in a group of one slot", pidA)
		}
	})
}
