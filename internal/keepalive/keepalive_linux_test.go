package keepalive

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/hayula/gateway/internal/conntest"
)

// TestLoopbackHasNoProbes: both ends of a connection on loopback, dialed by Dialer and accepted
// by Listen's listener, have SO_KEEPALIVE off, where net's own dialer and listener turn it on
// (which this test reads the same way, so that it can tell).
func TestLoopbackHasNoProbes(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "[::1]"} {
		ln, err := Listen(context.Background(), "tcp", host+":0", net.KeepAliveConfig{})
		if err != nil {
			if host == "[::1]" {
				t.Logf("no IPv6 loopback here: %v", err)
				continue
			}
			t.Fatal(err)
		}
		defer ln.Close()
		d, a := conntest.Pair(t, ln, Dialer(&net.Dialer{KeepAlive: 30 * time.Second}, net.KeepAliveConfig{Idle: 30 * time.Second}))
		if got := conntest.SockOpt(t, d, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); got != 0 {
			t.Errorf("%s: the dialed end has SO_KEEPALIVE %d, want 0", host, got)
		}
		if got := conntest.SockOpt(t, a, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); got != 0 {
			t.Errorf("%s: the accepted end has SO_KEEPALIVE %d, want 0", host, got)
		}
		if got := conntest.SockOpt(t, d, syscall.IPPROTO_TCP, syscall.TCP_NODELAY); got == 0 {
			t.Errorf("%s: the dialed end lost TCP_NODELAY", host)
		}

		plain, err := net.Listen("tcp", host+":0")
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		d, a = conntest.Pair(t, plain, (&net.Dialer{}).DialContext)
		if conntest.SockOpt(t, d, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE) == 0 || conntest.SockOpt(t, a, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE) == 0 {
			t.Errorf("%s: net's own ends read without SO_KEEPALIVE: the reading cannot tell", host)
		}
	}
}

// TestApplyTurnsProbesOn: Apply leaves a peer on loopback without probes, and gives a peer off
// it those cfg sets, net's defaults where it sets none (a client's idle 15 s, Listen's here). The peer off loopback is this machine's
// own address on another interface (a connection to it never leaves the machine); the test skips
// that half where there is none.
func TestApplyTurnsProbesOn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d, _ := conntest.Pair(t, ln, (&net.Dialer{KeepAlive: -1}).DialContext)
	if Apply(d, net.KeepAliveConfig{Idle: 30 * time.Second}) {
		t.Fatal("Apply turned probes on for a peer on loopback")
	}
	if got := conntest.SockOpt(t, d, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); got != 0 {
		t.Fatalf("SO_KEEPALIVE %d after Apply on loopback, want 0", got)
	}

	host := ownAddress(t)
	if host == nil {
		t.Skip("no non-loopback IPv4 address on this machine")
	}
	remote, err := Listen(context.Background(), "tcp", net.JoinHostPort(host.String(), "0"), net.KeepAliveConfig{})
	if err != nil {
		t.Skipf("cannot listen on %v: %v", host, err)
	}
	defer remote.Close()
	d, a := conntest.Pair(t, remote, Dialer(&net.Dialer{}, net.KeepAliveConfig{Idle: 30 * time.Second}))
	for _, end := range []struct {
		c    net.Conn
		name string
		idle int
	}{{d, "the dialed end", 30}, {a, "the accepted end", 15}} {
		for _, o := range []struct {
			level, opt, want int
			name             string
		}{
			{syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1, "SO_KEEPALIVE"},
			{syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, end.idle, "TCP_KEEPIDLE"},
			{syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, 15, "TCP_KEEPINTVL"},
			{syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, 9, "TCP_KEEPCNT"},
		} {
			if got := conntest.SockOpt(t, end.c, o.level, o.opt); got != o.want {
				t.Errorf("%s, its peer %v: %s %d, want %d", end.name, end.c.RemoteAddr(), o.name, got, o.want)
			}
		}
	}
}

// ownAddress is this machine's first IPv4 address off loopback, or nil.
func ownAddress(t *testing.T) net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Logf("interface addresses: %v", err)
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	return nil
}
