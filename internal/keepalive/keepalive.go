// Package keepalive owns when a TCP connection of the gateway's sends keepalive probes: only when
// its peer may be on another machine. A probe finds a peer that vanished without a word (a host
// powered off, a cable pulled) and keeps a NAT's or a firewall's mapping alive under a long
// silent request; a peer on loopback has neither to find nor keep (its kernel, ours, closes or
// resets the connection the moment its process goes), so that for a connection to a local model
// service, or from a client on the same machine, the four setsockopt calls that turn probes on
// (SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT) buy nothing. Both ends of the gateway
// ask net for none at connect and accept, and turn them on after, by the peer's address, which
// net has already read: the same four calls as before for a peer off loopback, none for one on
// it, whatever name or proxy led there.
package keepalive

import (
	"context"
	"net"
)

// Remote reports whether addr, a TCP connection's peer, may be on another machine: true unless
// it is an address on loopback (127.0.0.0/8, ::1, and 127.0.0.0/8 written in IPv6). One net
// could not read (nil, or without an IP) may be anywhere, and has probes as before.
func Remote(addr net.Addr) bool {
	a, ok := addr.(*net.TCPAddr)
	return !ok || !a.IP.IsLoopback()
}

// Apply turns cfg's probes on for c when c is a TCP connection whose peer is Remote, and
// reports whether it did. Like net's own, a failure to set them is not c's failure: c is used
// as it is.
func Apply(c net.Conn, cfg net.KeepAliveConfig) bool {
	tc, ok := c.(*net.TCPConn)
	if !ok || !Remote(tc.RemoteAddr()) {
		return false
	}
	cfg.Enable = true
	_ = tc.SetKeepAliveConfig(cfg)
	return true
}

// Dialer returns d's DialContext with probes decided by Apply: d's KeepAlive and
// KeepAliveConfig give way to cfg, on a copy of d (d is not changed).
func Dialer(d *net.Dialer, cfg net.KeepAliveConfig) func(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := *d
	nd.KeepAlive, nd.KeepAliveConfig = -1, net.KeepAliveConfig{}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := nd.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		Apply(c, cfg)
		return c, nil
	}
}

// Listen listens on a TCP address as net.Listen does, its accepted connections' probes
// decided by Apply.
func Listen(ctx context.Context, network, address string, cfg net.KeepAliveConfig) (net.Listener, error) {
	ln, err := (&net.ListenConfig{KeepAlive: -1}).Listen(ctx, network, address)
	if err != nil {
		return nil, err
	}
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return ln, nil
	}
	return &listener{TCPListener: tl, cfg: cfg}, nil
}

// listener is a TCP listener whose Accept applies cfg by the peer.
type listener struct {
	*net.TCPListener
	cfg net.KeepAliveConfig
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	Apply(c, l.cfg)
	return c, nil
}
