package conntest

import (
	"net"
	"sync"
	"testing"
)

// Wedged listens on a loopback port and accepts connections but never reads from them nor
// writes to them, as a wedged or stopped server whose kernel accepts for it: a client's TLS
// hello, request head or large body goes unanswered (or unread once the socket buffers fill).
// It returns the listener's host:port; the test's cleanup closes the listener and every
// connection it accepted.
func Wedged(t testing.TB) string {
	t.Helper()
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
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}
