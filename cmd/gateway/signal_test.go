//go:build unix

package main

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignalForces: the first signal starts the graceful stop (the context ends) and the
// second forces the exit, instead of being swallowed while serve waits out its grace period.
func TestSecondSignalForces(t *testing.T) {
	forced := make(chan struct{}, 1)
	ctx, stop := notifyShutdown(context.Background(), func() { forced <- struct{}{} }, syscall.SIGUSR1)
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first signal did not end the context")
	}
	select {
	case <-forced:
		t.Fatal("forced after one signal")
	default:
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-forced:
	case <-time.After(5 * time.Second):
		t.Fatal("the second signal was swallowed: the exit waits out the whole grace period")
	}
}
