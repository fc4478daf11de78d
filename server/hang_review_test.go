package server_test

import (
	"strings"
	"testing"

	"github.com/hayula/gateway/internal/conntest"
)

// TestUpstreamThatNeverReadsTimesOut: an upstream that accepts the connection and then reads
// nothing (a wedged or stopped server: the kernel accepts for it) must not hold a request whose
// body is larger than the socket buffers for ever. The target's timeout, how long to wait for the
// answer's head, bounds the wait from the request's sending, writing included: the attempt fails
// as a timeout and the chain moves on. The write was bounded by nothing but the client's going
// away: the request hung, and the next target was never asked.
func TestUpstreamThatNeverReadsTimesOut(t *testing.T) {
	t.Parallel()
	addr := conntest.Wedged(t) // never reads, never answers
	b := newFake(t, "b")
	b.set(bigBodyOK("b"))
	g := newGateway(t, "max_body_bytes = 67108864\n\n"+
		target("a", "http://"+addr+"/v1", "private", `timeout = "200ms"`)+target("b", b.url(), "private")+
		"[routes.r]\ntargets = [\"a\", \"b\"]\n", nil)
	// Far more than loopback's socket buffers hold: the write blocks until a reader comes.
	big := strings.Repeat("x", 48<<20)
	rep := g.post(t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"`+big+`"}]}`)
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "a→b (served by b)" {
		t.Fatalf("status %d, chain %q: %.300s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
}
