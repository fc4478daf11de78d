package server

import (
	"crypto/sha256"
	"fmt"
	"runtime"
	"testing"
	"weak"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
)

// TestReplacedServerHoldsNoSuccessor: a server a reload replaced, still serving a request (a
// stream an upstream trickles may run for hours), keeps what its request asks of the reloads
// since (reloadForbids, tpmNow), not the servers those reloads built: each reload's whole
// server (its routes, upstream pools, metrics, classifier) stayed reachable through the chain
// from the oldest request under way, about 88 KB a reload for the smallest configuration, so a
// gateway reloaded every minute under one endless stream grew without bound.
func TestReplacedServerHoldsNoSuccessor(t *testing.T) {
	mk := func(i int) *Server {
		targets := []*core.Target{{Name: fmt.Sprintf("t%d", i), URL: "http://10.0.0.1/v1"}}
		keys := []config.Key{{Name: "k", SHA256: sha256.Sum256([]byte("k"))}}
		return reloadServer(targets, keys, map[string]bool{"r": i%2 == 0})
	}
	first := mk(0) // its request is still under way
	l := NewLive(first)
	var gone []weak.Pointer[Server]
	for i := 1; i <= 20; i++ {
		next := mk(i)
		gone = append(gone, weak.Make(next))
		l.Replace(next)
	}
	l.Replace(mk(21)) // the current server, which l holds
	for range 3 {
		runtime.GC()
	}
	kept := 0
	for _, w := range gone {
		if w.Value() != nil {
			kept++
		}
	}
	if kept > 0 {
		t.Errorf("%d of the %d servers replaced since are still reachable from the oldest one serving a request", kept, len(gone))
	}
	// What the chain is for still holds: the request sees a reload's strict route.
	if !first.reloadForbids(&core.Request{}, "r", "", nil, &core.Target{Name: "t21", Privacy: core.Public}) {
		t.Error("a strict route of a later configuration no longer holds the request under way")
	}
	runtime.KeepAlive(first)
}
