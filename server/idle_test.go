package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// stallAfterHead answers with a head (and, for a stream, the events in first; for a whole
// answer, the start of its body, unless first is given, when it sends none) and then sends
// nothing until the gateway closes the connection, or for 10 s: then the answer ends cut short,
// a server_error that the tests' route does not fall through on, so that a gateway without the
// idle timeout fails them rather than hangs.
func stallAfterHead(stream bool, first ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range first {
				fmt.Fprintf(w, "data: %s\n\n", ev)
			}
		} else {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			if len(first) == 0 {
				fmt.Fprint(w, `{"id":"c1",`)
			}
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
}

// idleChain is route r over a (whose idle_timeout is short) then b, falling through on timeouts
// only.
func idleChain(t *testing.T) (*gateway, *fake, *fake) {
	t.Helper()
	a, b := newFake(t, "a"), newFake(t, "b")
	// Short against a stall that lasts until the test ends; nothing waits on it to pass.
	cfg := target("a", a.url(), "private", `idle_timeout = "100ms"`) + target("b", b.url(), "private") + `
[routes.r]
targets = ["a", "b"]
fallback_on = ["timeout"]
`
	return newGateway(t, cfg, nil), a, b
}

// An upstream that sends its answer's head and then nothing is a timeout once its idle_timeout
// has passed: a whole answer, and a stream before its first event, fall through to the next
// target (and x-hayula-chain says so); a stream that had sent an event ends with an error
// event, and nothing falls through.
func TestIdleUpstreamBody(t *testing.T) {
	const hello = `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"partial"}}]}`
	t.Run("whole answer", func(t *testing.T) {
		g, a, b := idleChain(t)
		a.set(stallAfterHead(false))
		rep := g.chat(t, "r")
		if rep.status != http.StatusOK || !strings.Contains(string(rep.body), "hello from b") {
			t.Fatalf("status %d: %s", rep.status, rep.body)
		}
		if got, want := rep.header.Get("x-hayula-chain"), "a→b (served by b)"; got != want {
			t.Errorf("x-hayula-chain = %q, want %q", got, want)
		}
		if b.hits.Load() != 1 {
			t.Errorf("b asked %d times, want 1", b.hits.Load())
		}
	})
	// A 2xx head and not a byte of its body: the idle_timeout counts from the head, as CONFIG.md
	// says, not the target's timeout (120 s here) that bounds the wait for the head.
	t.Run("whole answer, head alone", func(t *testing.T) {
		g, a, b := idleChain(t)
		a.set(stallAfterHead(false, "no body"))
		rep := g.chat(t, "r")
		if rep.status != http.StatusOK || !strings.Contains(string(rep.body), "hello from b") ||
			rep.header.Get("x-hayula-chain") != "a→b (served by b)" || b.hits.Load() != 1 {
			t.Fatalf("status %d, chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
		}
	})
	t.Run("stream before its first event", func(t *testing.T) {
		g, a, _ := idleChain(t)
		a.set(stallAfterHead(true))
		resp := postStream(t, g, "r")
		if got, want := resp.Header.Get("x-hayula-chain"), "a→b (served by b)"; got != want {
			t.Errorf("x-hayula-chain = %q, want %q", got, want)
		}
		if ev := readEvents(t, resp); len(ev) != 5 || !strings.Contains(ev[2], " b") || ev[4] != "[DONE]" {
			t.Fatalf("events %q", ev)
		}
	})
	t.Run("stream after an event", func(t *testing.T) {
		g, a, b := idleChain(t)
		a.set(stallAfterHead(true, hello))
		resp := postStream(t, g, "r")
		if got := resp.Header.Get("x-hayula-chain"); got != "a" {
			t.Errorf("x-hayula-chain = %q, want a", got)
		}
		ev := readEvents(t, resp)
		if len(ev) != 2 || ev[0] != hello || !strings.HasPrefix(ev[1], `{"error":{`) ||
			!strings.Contains(ev[1], `"code":"stream_interrupted"`) || !strings.Contains(ev[1], "idle_timeout") {
			t.Fatalf("events %q, want the event and an error event naming idle_timeout", ev)
		}
		if b.hits.Load() != 0 {
			t.Error("fell through after the first byte")
		}
	})
}
