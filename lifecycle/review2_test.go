//go:build unix

package lifecycle

import (
	"context"
	"errors"
	"testing"
	"time"
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
