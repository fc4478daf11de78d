package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
)

// stalledConnect is a loopback address where a TCP connect does not complete (fullAcceptQueue).
func stalledConnect(t *testing.T) string {
	t.Helper()
	_, addr := fullAcceptQueue(t)
	return addr
}

// fullAcceptQueue is a loopback socket that listens with a backlog of 0 and never accepts, its
// one place in the accept queue taken, so that the kernel drops the next SYNs (as a host that
// drops them, or a server too busy to accept, does), and its address. The test's cleanup closes
// the socket and the connection that fills the queue; a kernel that completes connects beyond
// a full accept queue skips the test.
func fullAcceptQueue(t *testing.T) (*os.File, string) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "listener") // closes fd, once, in the cleanup
	t.Cleanup(func() { _ = f.Close() })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = filler.Close() })
	if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
		c.Close()
		t.Skip("this kernel completes connects beyond a full accept queue")
	}
	return f, addr
}

// TestConnectWithinTimeout: a target whose TCP connect does not complete fails within its
// timeout, as a timeout (which moves the chain on like any other), on http:// and https://
// targets alike, however long Options.DialTimeout (30 s here, 10 s in the gateway). The target's
// timeout is 300 ms; the attempt must end within 10 s. The synchronous client (http://) dialed
// under DialTimeout alone, and failed as a connection error after it; net/http's (https://)
// failed the attempt in time (headTransport) but left the connect going on behind it.
func TestConnectWithinTimeout(t *testing.T) {
	addr := stalledConnect(t)
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			tg := target(scheme + "://" + addr)
			tg.Timeout = 300 * time.Millisecond
			s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 30 * time.Second})
			t.Cleanup(s.Close)
			ctx, cancel := context.WithTimeout(context.Background(), generous)
			defer cancel()
			before := goleak.IgnoreCurrent()
			_, err := s.Chat(ctx, tg, chatReq(false))
			if ctx.Err() != nil {
				t.Fatalf("the attempt did not end within %v: %v", generous, err)
			}
			var te *core.TimeoutError
			if !errors.As(err, &te) || te.After != tg.Timeout {
				t.Fatalf("error %v (%T), want a *core.TimeoutError after the target's timeout", err, err)
			}
			if d := errmap.Classify(err); d.Class != core.ClassTimeout {
				t.Errorf("class %s, want timeout", d.Class)
			}
			if scheme == "https" {
				// net/http dials apart from the request: the connect went on after the attempt
				// had failed, for DialTimeout. (The synchronous client dials on the caller's
				// goroutine; its sweeper outlives the attempt by design.)
				if err := goleak.Find(before); err != nil {
					t.Errorf("the failed attempt left its connect behind: %v", err)
				}
			}
		})
	}
}

// TestConnectWithinDialTimeout: with a target's timeout longer than Options.DialTimeout, a
// connect that does not complete ends at DialTimeout as a connection error (the dialer's own
// timeout, a connection that could not be made), not a *core.TimeoutError after the target's
// timeout, on http:// and https:// targets alike: the dial is bounded by the nearer of the two,
// and only the target's is reported as the target's timeout (TestConnectWithinTimeout). Its
// class was timeout or connection by turns, as net's error came from the dial's context or from
// the poller's deadline (before, -count=3: timeout in 4 of 6).
func TestConnectWithinDialTimeout(t *testing.T) {
	addr := stalledConnect(t)
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			tg := target(scheme + "://" + addr)
			tg.Timeout = 30 * time.Second
			s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 300 * time.Millisecond})
			t.Cleanup(s.Close)
			ctx, cancel := context.WithTimeout(context.Background(), generous)
			defer cancel()
			_, err := s.Chat(ctx, tg, chatReq(false))
			if ctx.Err() != nil {
				t.Fatalf("the attempt did not end within %v: %v", generous, err)
			}
			var te *core.TimeoutError
			if errors.As(err, &te) {
				t.Fatalf("error %v, the target's timeout; want the dialer's, at DialTimeout", err)
			}
			if d := errmap.Classify(err); d.Class != core.ClassConnection {
				t.Errorf("class %s (%v), want connection", d.Class, err)
			}
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("error %v (%T), want the dialer's own timeout", err, err)
			}
		})
	}
}
