package conntest

import (
	"bufio"
	"io"
	"net"
	"net/http"
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
	return Accepting(t, nil)
}

// AnswersAtOnce listens on a loopback port and answers each connection's request with answer
// (raw bytes, head and body) as soon as it has read the request's head, then neither reads nor
// closes the connection until the test ends: a server that refuses a request from its head (a
// 413 for a length it will not take) and leaves the body unread. An answer written before the
// request's head had come would be one net/http's client takes for a stray on an idle
// connection. It returns the listener's host:port.
func AnswersAtOnce(t testing.TB, answer string) string {
	t.Helper()
	return Accepting(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		_, _ = io.WriteString(c, answer)
	})
}

// Accepting listens on a loopback port and accepts connections, giving each to serve in turn on
// the accepting goroutine (nil: nothing is done with them); a connection serve returns from is
// left open. It returns the listener's host:port; the test's cleanup closes the listener and
// every connection it accepted.
func Accepting(t testing.TB, serve func(net.Conn)) string {
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
			if serve != nil {
				serve(c)
			}
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
