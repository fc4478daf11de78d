package upstream

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// TestDialTimeoutsAlloc: a target's timeout longer than the dial's own bound (DialTimeout, 10 s in
// the gateway; the targets' default is 120 s) costs a new connection's dial nothing: the dialer's
// Timeout alone bounds the connect. A context and a timer of the target's timeout around it (it
// never ended a connect first) were seven allocations more on every new upstream connection.
func TestDialTimeoutsAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Each dial waits for its accept, so that every accept's allocations fall inside the count:
	// left to run behind, the last accepts of a run fell inside it or not by the scheduler's
	// turns, and the two counts differed by one in 3 of 40 runs under load.
	accepted := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
			accepted <- struct{}{}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background()) // cancellable, as a request's is
	defer cancel()
	dials := func(timeout time.Duration) float64 {
		tg := &core.Target{Name: "t", URL: "http://" + ln.Addr().String(), Timeout: timeout}
		dial := newTransport(Options{DialTimeout: 10 * time.Second}, tg).DialContext
		return testing.AllocsPerRun(200, func() {
			c, err := dial(ctx, "tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			_ = c.Close()
			<-accepted
		})
	}
	none, long := dials(0), dials(120*time.Second)
	t.Logf("allocations a dial: %.0f with no target timeout, %.0f with one of 120 s", none, long)
	if long > none {
		t.Errorf("a dial under a 120 s target timeout made %.0f allocations, %.0f more than under none", long, long-none)
	}
}
