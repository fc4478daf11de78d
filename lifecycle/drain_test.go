//go:build unix

package lifecycle

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Once Drain is called (the gateway told to stop), a request waiting for a loading process gets
// ErrStopping at once, the loading process is stopped, and a ready one still serves until Close.
func TestDrainEndsWaitsAndStopsLoads(t *testing.T) {
	h := newHarness(t, []Spec{fake("ready"), fake("slow", "-hang")}, nil, Options{})
	h.use(t, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waited := make(chan error, 1)
	go func() {
		_, release, err := h.m.Ensure(ctx, "slow")
		if err == nil {
			release()
		}
		waited <- err
	}()
	eventually(t, "slow launched", func() bool { return h.status(t, "slow").PID != 0 })
	pid := h.status(t, "slow").PID
	h.m.Drain()
	if err := <-waited; !errors.Is(err, ErrStopping) {
		t.Errorf("Ensure(slow) after Drain: %v, want ErrStopping", err)
	}
	eventually(t, "the loading process to be stopped", func() bool { return processGone(pid) })
	if _, _, err := h.m.Ensure(ctx, "slow"); !errors.Is(err, ErrStopping) {
		t.Errorf("a new Ensure(slow) after Drain: %v, want ErrStopping", err)
	}
	h.use(t, "ready")
}
