//go:build unix

package lifecycle

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaitAcrossReloadKeepsLoadTimeout: a request waiting for a start that a Reload replaces goes
// on waiting for the new member within its own load_timeout, counted from its arrival, as it
// keeps its place in a slot line. Its wait started again at the reload: every reload that changed
// the target while it loaded gave the request a whole load_timeout more.
func TestWaitAcrossReloadKeepsLoadTimeout(t *testing.T) {
	spec := func(args ...string) Spec {
		s := fake("b", args...)
		s.LoadTimeout = time.Minute
		return s
	}
	h := newHarness(t, []Spec{spec("-hang")}, nil, Options{})
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
	eventually(t, "b's process to launch", func() bool { return h.status(t, "b").PID != 0 })
	old := h.status(t, "b").PID
	h.clock.Advance(time.Minute / 2)
	if err := h.m.Reload([]Spec{spec("-hang", "-delay", "1ms")}, nil); err != nil {
		t.Fatal(err)
	}
	// The request's start of the new member launches it once the old process has gone.
	eventually(t, "the new b's process to launch for the request", func() bool {
		st := h.status(t, "b")
		return st.PID != 0 && st.PID != old && waitingFor(h, "b") == 1
	})
	h.clock.Advance(time.Minute / 2)
	select {
	case err := <-got:
		var lt *LoadTimeoutError
		if !errors.As(err, &lt) {
			t.Fatalf("Ensure(b): %v, want its load timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request still waits a minute after it came, its load_timeout")
	}
}
