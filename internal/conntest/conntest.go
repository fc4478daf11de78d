// Package conntest owns test doubles for network connections: a listener whose connections report
// their writes and read deadlines, for tests that check what a server does to a socket (how many
// writes an answer takes, which deadlines it sets), a wedged server that accepts and never
// reads or answers (Wedged), for tests of what a client does when nothing comes, and one that
// answers a request from its head and reads nothing more (AnswersAtOnce), a connection's two
// ends from a listener of the test's own (Pair), and a socket option read back (SockOpt).
// Tests only.
package conntest

import (
	"context"
	"net"
	"testing"
	"time"
)

// Listener wraps a listener (use a *Listener: servers keep listeners as map keys, and one with
// hooks cannot be one); the connections it accepts call the hooks that are set. A hook
// may be called from any goroutine that uses the connection.
type Listener struct {
	net.Listener
	OnWrite        func()          // before each Write: counted before the peer can read its bytes
	OnReadDeadline func(time.Time) // after each SetReadDeadline, with its time
}

// Accept accepts a connection and wraps it.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, l: l}, nil
}

type conn struct {
	net.Conn
	l *Listener
}

func (c *conn) Write(p []byte) (int, error) {
	if c.l.OnWrite != nil {
		c.l.OnWrite()
	}
	return c.Conn.Write(p)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	err := c.Conn.SetReadDeadline(t)
	if c.l.OnReadDeadline != nil {
		c.l.OnReadDeadline(t)
	}
	return err
}

// Pair dials ln with dial and accepts the connection on it, and returns both ends; the test's
// cleanup closes them. For a test of what a listener or a dialer of its own does to a socket.
func Pair(t testing.TB, ln net.Listener, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (dialed, accepted net.Conn) {
	t.Helper()
	got := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	dialed, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	accepted = <-got
	if accepted == nil {
		dialed.Close()
		t.FailNow()
	}
	t.Cleanup(func() { dialed.Close(); accepted.Close() })
	return dialed, accepted
}
