//go:build unix

package lifecycle

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"
)

// A process that SIGKILL has not ended yet (stuck in a driver call, its Wait not returned) holds
// the stop only for KillWait on the manager's clock, the leader as much as the rest of its group:
// a slot held by it for good would stop the whole group.
func TestKillWaitBoundsStuckLeader(t *testing.T) {
	clock := newFakeClock()
	m, err := New(nil, nil, Options{Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.FindProcess(os.Getpid()) // never signalled: only its pid is read
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // the leader's Wait never returns
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.awaitKilled(&exec.Cmd{Process: p}, exited, nil)
	}()
	eventually(t, "the KillWait bound to be armed while the leader has not exited", func() bool {
		_, ok := clock.Next(KillWait)
		return ok
	})
	clock.Advance(KillWait)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("awaitKilled still waits after KillWait has passed")
	}
}
