package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestClientAndUpstreamOnLoopbackHaveNoProbes: gateway serve, listening on loopback, accepts
// a client's connection and dials its target's without TCP keepalive probes (internal/keepalive):
// the four setsockopt calls each would cost find nothing on loopback. The sockets are this
// process's, found by their addresses; the client's end and the fake upstream's, made by net
// with its defaults, have probes, which says the reading can tell.
func TestClientAndUpstreamOnLoopbackHaveNoProbes(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	up := fakeModel(t, hold)
	base, _ := serveJourney(t, gatewayFile("127.0.0.1:0", up.URL, "r"))
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"r","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	gw, upAddr := port(t, base), port(t, up.URL)
	// Both connections stay open, idle in their pools, after the answer.
	var accepted, dialed, clientEnd, upstreamEnd []int
	for _, s := range sockets(t) {
		switch {
		case s.local == gw:
			accepted = append(accepted, s.keepalive)
		case s.peer == gw:
			clientEnd = append(clientEnd, s.keepalive)
		case s.peer == upAddr:
			dialed = append(dialed, s.keepalive)
		case s.local == upAddr:
			upstreamEnd = append(upstreamEnd, s.keepalive)
		}
	}
	if len(accepted) == 0 || len(dialed) == 0 || len(clientEnd) == 0 || len(upstreamEnd) == 0 {
		t.Fatalf("sockets not found: accepted %v, dialed %v, client %v, upstream %v", accepted, dialed, clientEnd, upstreamEnd)
	}
	for _, v := range append(clientEnd, upstreamEnd...) {
		if v == 0 {
			t.Fatalf("net's own ends read without SO_KEEPALIVE (client %v, upstream %v): the reading cannot tell", clientEnd, upstreamEnd)
		}
	}
	for _, v := range accepted {
		if v != 0 {
			t.Errorf("the gateway's end of a client's connection has SO_KEEPALIVE %v, want 0", accepted)
		}
	}
	for _, v := range dialed {
		if v != 0 {
			t.Errorf("the gateway's end of its target's connection has SO_KEEPALIVE %v, want 0", dialed)
		}
	}
}

// port is the TCP port of a URL's host, as the sockets below carry it.
func port(t *testing.T, raw string) int {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type socket struct{ local, peer, keepalive int }

// sockets lists this process's IPv4 TCP sockets on loopback with both ends: their ports and
// SO_KEEPALIVE.
func sockets(t *testing.T) []socket {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []socket
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		la, err1 := syscall.Getsockname(fd)
		pa, err2 := syscall.Getpeername(fd)
		l, ok1 := la.(*syscall.SockaddrInet4)
		p, ok2 := pa.(*syscall.SockaddrInet4)
		if err1 != nil || err2 != nil || !ok1 || !ok2 || !net.IP(l.Addr[:]).IsLoopback() {
			continue
		}
		ka, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
		if err != nil {
			continue
		}
		out = append(out, socket{local: l.Port, peer: p.Port, keepalive: ka})
	}
	return out
}
