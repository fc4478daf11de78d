//go:build unix

package h1

import (
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestStoppedHeadReadsWhatCameBeforeTheStop: the rest of a stalled head came, and waits in the
// socket unread, when the head is stopped (to make room at the cap, or by Shutdown): the stop's
// past deadline ended the read at once, and the connection was closed with the head's rest in
// it, reset under a client that had sent its whole request. The read now takes, without
// waiting, what the socket holds: a head made whole is read (and served: keepHead), one still
// short fails at once rather than wait for more.
func TestStoppedHeadReadsWhatCameBeforeTheStop(t *testing.T) {
	for _, tc := range []struct {
		name, sent string
		whole      bool
	}{
		{"whole", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", true},
		{"short", "POST /a HTTP/1.1\r\nHost: x\r\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			nc, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			s := &Server{ReadHeaderTimeout: time.Hour}
			c := s.newConn(nc)
			c.bufs = s.getBufs(c)
			defer s.putBufs(c.bufs)

			if _, err := io.WriteString(client, tc.sent); err != nil {
				t.Fatal(err)
			}
			waitSocketHolds(t, nc, len(tc.sent))
			c.state.Store(stateHead)
			c.phase = rdlHead
			if !c.state.CompareAndSwap(stateHead, stateClosing) {
				t.Fatal("not in its head")
			}
			c.stopHead()

			err = c.readRequest()
			if tc.whole {
				if err != nil || c.base.URL == nil || c.base.URL.Path != "/a" {
					t.Fatalf("a stopped head whose rest waited in the socket: %v, want it read whole", err)
				}
				if !s.keepHead(c, err) || c.state.Load() != stateActive {
					t.Errorf("a whole head was not taken back from the stop (state %d)", c.state.Load())
				}
			} else if err == nil {
				t.Fatal("a head still short read as whole")
			}
		})
	}
}

// waitSocketHolds waits until nc's socket holds n bytes not yet read, looking without taking them.
func waitSocketHolds(t *testing.T, nc net.Conn, n int) {
	t.Helper()
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, n)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got int
		_ = rc.Control(func(fd uintptr) {
			got, _, _ = syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		})
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the socket holds %d of the %d bytes sent", got, n)
		}
		runtime.Gosched()
	}
}
