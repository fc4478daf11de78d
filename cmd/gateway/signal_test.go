//go:build unix

package main

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignalForces: the first signal starts the graceful stop (the context ends) and the
// second forces the exit, instead of being swallowed while serve waits out its grace period.
func TestSecondSignalForces(t *testing.T) {
	forced := make(chan struct{}, 1)
	var clock atomic.Int64 // nanoseconds: each signal comes a second after the last
	now := func() time.Time { return time.Unix(0, clock.Add(int64(time.Second))) }
	ctx, stop := notifyShutdown(context.Background(), func() { forced <- struct{}{} }, now, syscall.SIGUSR1)
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

// TestSignalSentTwiceAtOnceIsOneStop: `timeout -s INT` signals the gateway and then its process
// group, which holds the gateway too; two copies that come together are one request to stop,
// not the operator's second, which would exit at once without draining.
func TestSignalSentTwiceAtOnceIsOneStop(t *testing.T) {
	forced := make(chan struct{}, 1)
	var clock atomic.Int64 // nanoseconds, moved by the test alone
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	ctx, stop := notifyShutdown(context.Background(), func() { forced <- struct{}{} }, now, syscall.SIGUSR1)
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the signal did not end the context")
	}
	// The copy, at the same instant by the clock (two sent at once may also merge into one
	// while pending, which needs nothing of the gateway).
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-forced:
		t.Fatal("two copies of one signal sent together forced the exit")
	case <-time.After(500 * time.Millisecond):
	}
	// A signal sameSignal later is the operator's second.
	clock.Add(int64(sameSignal))
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-forced:
	case <-time.After(5 * time.Second):
		t.Fatal("a later signal did not force the exit")
	}
}
