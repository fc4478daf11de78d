package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A probe in flight stays the only request let through to its target when another request's
// attempt on it, begun before the bench, ends in a way that says nothing about the target (here a
// 400 request error): that attempt is not the probe, and a third request that went to the target
// too would be a second request to a target not yet known to be back
// (TestProbeOutlivesOtherAttemptsNonEvidence in health).
func TestProbeOutlivesAnotherAttemptsRequestError(t *testing.T) {
	a, b := newFake(t, "a"), newFake(t, "b")
	cfg := target("a", a.url(), "private") + target("b", b.url(), "private") + `
[cooldown]
failures = 1
base = "30s"

[routes.ra]
targets = ["a"]

[routes.r]
targets = ["a", "b"]
`
	g := newGateway(t, cfg, nil)
	post := func(model string) <-chan int {
		done := make(chan int, 1)
		go func() {
			body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
			resp, err := g.ts.Client().Post(g.ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				done <- -1
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		return done
	}
	// 1. A request reaches a while it is healthy, and waits there.
	entered, release := make(chan struct{}), make(chan struct{})
	a.set(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		if waitRelease(r, release) {
			errHandler(400, "invalid_request_error", "bad")(w, r)
		}
	})
	early := post("ra")
	<-entered
	// 2. Another fails on a, which is benched.
	a.set(errHandler(500, "internal", "down"))
	if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "a→b (served by b)" {
		t.Fatalf("bench: chain %q", rep.header.Get("x-hayula-chain"))
	}
	// 3. After the cooldown a request probes a, and waits there.
	g.clock.Advance(30 * time.Second)
	probeIn, probeOut := make(chan struct{}), make(chan struct{})
	a.set(func(w http.ResponseWriter, r *http.Request) {
		close(probeIn)
		if waitRelease(r, probeOut) {
			okHandler("a")(w, r)
		}
	})
	probe := post("r")
	<-probeIn
	// 4. The early request's attempt ends with a request error.
	close(release)
	if got := <-early; got != 400 {
		t.Fatalf("early request: status %d, want 400", got)
	}
	// 5. The probe is still out: a third request goes to b alone.
	a.set(okHandler("a"))
	rep := g.chat(t, "r")
	close(probeOut)
	if got := rep.header.Get("x-hayula-chain"); got != "b" {
		t.Errorf("while the probe is out: chain %q, want b (a skipped)", got)
	}
	if got := <-probe; got != 200 {
		t.Errorf("probe: status %d, want 200", got)
	}
}
