package lifecycle

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestWedgedTLSProbeLeavesNothingBehind: a probe of an https:// health URL whose server accepts
// the connection and never answers the TLS hello fails at ProbeTimeout and leaves nothing
// behind. net/http dials apart from the request (a probe that gives up does not end its dial),
// and the probe client's Transport had no TLS handshake timeout: each probe of a process so
// wedged (stopped, say, with SIGSTOP) left a dial and a handshake goroutine for as long as the
// process kept the connection, one more every PollInterval while its start was waited for.
func TestWedgedTLSProbeLeavesNothingBehind(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // never read, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	m, err := New(nil, nil, Options{ProbeTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close(context.Background()) }()
	before := goleak.IgnoreCurrent()
	for range 3 {
		if m.probeOnce(context.Background(), "https://"+ln.Addr().String()+"/health") {
			t.Fatal("a probe of a server that never answers passed")
		}
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("probes that ended left goroutines behind: %v", err)
	}
}
