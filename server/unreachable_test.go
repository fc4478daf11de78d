package server_test

import (
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A target whose port refuses connections: the client reads the target's name and the cause,
// never the upstream's address (errmap's connCause); the log has the whole error.
func TestUnreachableHidesAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ln.Close() // nothing listens there now: the dial is refused
	var logs syncBuffer
	g := newGateway(t, target("dead", "http://"+addr+"/v1", "private")+"[routes.r]\ntargets = [\"dead\"]\n", nil, withLog(&logs))
	rep := g.chat(t, "r")
	type answer struct {
		Status        int
		Code, Message any
	}
	got := answer{rep.status, rep.errorField(t, "code"), rep.errorField(t, "message")}
	want := answer{502, "upstream_unreachable", "upstream dead unreachable: connection refused"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	for _, s := range []string{"127.0.0.1", port, "http://", "dial"} {
		if strings.Contains(string(rep.body), s) {
			t.Errorf("the client's error holds %q: %s", s, rep.body)
		}
	}
	var line string
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "msg=\"attempt failed\"") {
			line = l
		}
	}
	if !strings.Contains(line, "target=dead") || !strings.Contains(line, addr) || !strings.Contains(line, "connection refused") {
		t.Errorf("the log has no attempt line with the whole error (%s):\n%s", addr, logs.String())
	}
}
