package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/server"
)

// heldUpstream is a fake whose answers to a request saying "hold me" wait, each, for a value on
// release; entered has a value for each such request that reached it.
type heldUpstream struct {
	*fake
	entered, release chan struct{}
}

func newHeldUpstream(t *testing.T) *heldUpstream {
	h := &heldUpstream{fake: newFake(t, "up"), entered: make(chan struct{}, 16), release: make(chan struct{}, 16)}
	h.set(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		if strings.Contains(string(b), "hold me") {
			h.entered <- struct{}{}
			if !waitRelease(r, h.release) {
				return
			}
		}
		okHandler("up")(w, r)
	})
	return h
}

// capsReload is a gateway of one key, "one" (hk-one), with caps extra, on a Live that reload
// replaces with a configuration giving the key other caps.
type capsReload struct {
	t  *testing.T
	up *heldUpstream
	// replies has the reply of each held request as it ends: the upstream's release lets
	// whichever held handler takes it go, so end waits for a reply, not for one request's.
	replies chan reply
	l       *server.Live
	cur     *server.Server
	g       *gateway
	clock   *health.ManualClock
}

func (c *capsReload) config(extra ...string) *config.Config {
	return c.configOf(keyBlock("one", "hk-one", extra...))
}

// configOf is the gateway's configuration with keys, a block of [[keys]], and a scraper's key.
func (c *capsReload) configOf(keys string) *config.Config {
	return parseText(c.t, keys+keyBlock("scrape", "hk-scrape", "routes = []")+target("up", c.up.url(), "private")+
		"[routes.r]\ntargets = [\"up\"]\n")
}

func newCapsReload(t *testing.T, extra ...string) *capsReload {
	c := &capsReload{t: t, up: newHeldUpstream(t), replies: make(chan reply, 16), clock: health.NewManualClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))}
	c.cur = newServerWith(t, server.Options{Config: c.config(extra...), Clock: c.clock})
	c.l = server.NewLive(c.cur)
	c.g = &gateway{ts: serveLive(t, c.l)}
	return c
}

func (c *capsReload) reload(extra ...string) { c.reloadTo(c.config(extra...)) }

func (c *capsReload) reloadTo(cfg *config.Config) {
	next := newServerWith(c.t, server.Options{Config: cfg, Clock: c.clock, Previous: c.cur})
	c.l.Replace(next)
	c.cur = next
}

// held is a request hold sent, which the upstream holds until end lets one go.
type held struct{}

// hold sends a request of the key that the upstream holds until released, and returns once the
// upstream has it.
func (c *capsReload) hold() held {
	c.t.Helper()
	go func() {
		c.replies <- c.g.post(c.t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"hold me"}]}`,
			"Authorization", "Bearer hk-one")
	}()
	select {
	case <-c.up.entered:
	case rep := <-c.replies:
		c.t.Fatalf("a request to hold was answered: %d %s", rep.status, rep.body)
	}
	return held{}
}

// end lets one held request go and waits for its answer. Held requests of the one key are alike
// to the caps, so which of them ends does not matter; the argument names the one a test means.
// (It waited for that one's answer, while the release could go to another's handler: the test
// hung at its timeout.)
func (c *capsReload) end(held) {
	c.t.Helper()
	c.up.release <- struct{}{}
	if rep := <-c.replies; rep.status != 200 {
		c.t.Fatalf("a held request: %d %s", rep.status, rep.body)
	}
}

// want sends a request of the key that is not held and checks its status: 200, or 429 for
// max_concurrent.
func (c *capsReload) want(status int, when string) {
	c.t.Helper()
	rep := c.g.chat(c.t, "r", "Authorization", "Bearer hk-one")
	if rep.status != status {
		c.t.Errorf("%s: %d %s, want %d", when, rep.status, rep.body, status)
	}
	if rep.status == 429 && !strings.Contains(string(rep.body), "concurrent requests") {
		c.t.Errorf("%s: refused, but not by max_concurrent: %s", when, rep.body)
	}
}

// TestReloadAddingMaxConcurrentCountsRequestsUnderWay: a key without caps has two requests held
// at the upstream when a reload gives it max_concurrent = 2; they count against it, so a third is
// refused 429 until one of them ends, and then admitted. The count of a key's requests in flight
// is kept whatever its caps; a key that had no max_concurrent had no count, and right after the
// reload it could run two more on top of the two under way.
func TestReloadAddingMaxConcurrentCountsRequestsUnderWay(t *testing.T) {
	c := newCapsReload(t)
	a, b := c.hold(), c.hold()
	c.reload("max_concurrent = 2")
	c.want(429, "two requests under way, max_concurrent = 2 added by a reload")
	c.end(a)
	c.want(200, "one of the two ended")
	c.want(200, "one of the two ended, again")
	c.reload("max_concurrent = 1") // lowered: the one under way fills it
	c.want(429, "one request under way, max_concurrent lowered to 1")
	c.end(b)
	c.want(200, "none under way, max_concurrent = 1")
}

// TestReloadRemovingAndReaddingMaxConcurrent: requests that begin under a key's max_concurrent
// and end under none, and the reverse, across reloads that remove the cap and bring it back, give
// back exactly what they took: the cap brought back counts those still under way, whichever
// configuration they began on, and once all have ended the key has its whole cap again, no slot
// leaked and none given back twice.
func TestReloadRemovingAndReaddingMaxConcurrent(t *testing.T) {
	c := newCapsReload(t, "max_concurrent = 2")
	r1 := c.hold() // begins under the cap
	c.reload()     // no cap
	r2 := c.hold() // begins under none
	c.end(r1)      // began under the cap, ends under none
	c.reload("max_concurrent = 2")
	r3 := c.hold()
	c.want(429, "r2 (begun under no cap) and r3 under way, the cap back at 2")
	c.end(r2) // began under no cap, ends under one
	r4 := c.hold()
	c.want(429, "r3 and r4 under way")
	c.reload() // and once more without, and back, with both under way
	c.reload("max_concurrent = 2")
	c.want(429, "r3 and r4 under way across two more reloads")
	c.end(r3)
	c.end(r4)
	// Every request has ended: the cap is whole, neither less (a slot leaked) nor more (one given
	// back twice).
	r5, r6 := c.hold(), c.hold()
	c.want(429, "two held after every earlier one ended")
	c.end(r5)
	c.end(r6)
	c.want(200, "none under way")
}

// TestReloadRemovingAndReaddingKeyCountsRequestsUnderWay: a reload removes a key while a request
// of it is under way, a later one brings it back with max_concurrent = 1 (or renamed, the same
// sha256): the request still under way holds the slot, until it ends.
func TestReloadRemovingAndReaddingKeyCountsRequestsUnderWay(t *testing.T) {
	for _, name := range []string{"one", "renamed"} {
		t.Run(name, func(t *testing.T) {
			c := newCapsReload(t)
			r1 := c.hold()
			c.reloadTo(c.configOf("")) // the key is gone
			c.reloadTo(c.configOf(keyBlock(name, "hk-one", "max_concurrent = 1")))
			c.want(429, "the key back with max_concurrent = 1, its request under way")
			c.end(r1)
			c.want(200, "its request ended")
		})
	}
}
