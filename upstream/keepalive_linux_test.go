package upstream

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/conntest"
)

// TestLoopbackDialHasNoProbes: a new connection to a target on this machine, dialed as both of a
// target's clients dial (newTransport's DialContext), is made without TCP keepalive probes: four
// setsockopt calls a connection for a peer whose going the kernel reports at once
// (internal/keepalive). Read against net's own dialer, which turns them on.
func TestLoopbackDialHasNoProbes(t *testing.T) {
	addr := conntest.Accepting(t, nil)
	keepalive := func(dial func(context.Context, string, string) (net.Conn, error)) int {
		t.Helper()
		c, err := dial(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return conntest.SockOpt(t, c, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
	}
	if keepalive((&net.Dialer{}).DialContext) == 0 {
		t.Fatal("net's own dialer reads without SO_KEEPALIVE: the reading cannot tell")
	}
	tg := &core.Target{Name: "t", URL: "http://" + addr, Timeout: 120 * time.Second}
	for _, o := range []Options{{DialTimeout: 10 * time.Second}, {}} {
		if got := keepalive(newTransport(o, tg).DialContext); got != 0 {
			t.Errorf("DialTimeout %v: a connection to a target on loopback has SO_KEEPALIVE %d, want 0", o.DialTimeout, got)
		}
	}
}
