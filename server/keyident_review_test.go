package server_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/server"
)

// TestKeyCapsFollowTheKeyNotItsName: across a reload a key's caps (its max_concurrent slots, its
// rpm and tpm buckets, the answers under way charged to its tpm) go on with the key itself, its
// sha256, not with its name. A key rotated under the same name (the old one leaked) is a new
// credential: the leaked key's requests still under way, and the debt it ran up, must not hold
// the new key back. A key renamed with its sha256 unchanged is the same client, whose spent
// buckets a rename must not refill; and two keys whose names a reload swaps keep their own.
func TestKeyCapsFollowTheKeyNotItsName(t *testing.T) {
	up := newFake(t, "up")
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var held atomic.Bool
	up.set(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		if strings.Contains(string(b), "hold me") && !held.Swap(true) {
			entered <- struct{}{}
			if !waitRelease(r, release) {
				return
			}
		}
		usageHandler(100, 50, false, false)(w, r) // 150 tokens: a tpm = 100 bucket in debt
	})
	clock := health.NewManualClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	tail := target("up", up.url(), "private") + "[routes.r]\ntargets = [\"up\"]\n"
	bearer := func(k string) []string { return []string{"Authorization", "Bearer " + k} }
	newServer := func(text string, prev *server.Server) *server.Server {
		return newServerWith(t, server.Options{Config: parseText(t, text+tail), Clock: clock, Previous: prev})
	}

	t.Run("rotated", func(t *testing.T) {
		caps := []string{"max_concurrent = 1", "rpm = 2", "tpm = 100"}
		old := newServer(keyBlock("alice", "hk-leaked", caps...), nil)
		l := server.NewLive(old)
		g := &gateway{ts: serveLive(t, l)}
		// The leaked key holds the one slot.
		done := make(chan reply, 1)
		go func() {
			done <- g.post(t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"hold me"}]}`,
				bearer("hk-leaked")...)
		}()
		<-entered
		l.Replace(newServer(keyBlock("alice", "hk-new", caps...), old))
		if rep := g.chat(t, "r", bearer("hk-leaked")...); rep.status != 401 {
			t.Errorf("the leaked key after the rotation: %d %s, want 401", rep.status, rep.body)
		}
		if rep := g.chat(t, "r", bearer("hk-new")...); rep.status != 200 {
			t.Errorf("the new key, while the leaked one's request is under way: %d %s, want 200", rep.status, rep.body)
		}
		close(release)
		if rep := <-done; rep.status != 200 {
			t.Fatalf("the leaked key's request across the reload: %d %s", rep.status, rep.body)
		}
		// The new key's own answer (150 tokens) put its bucket 50 in debt, paid in 30.6 s: past
		// that, only the leaked key's answer (150 more, were it charged here) can refuse the next
		// request.
		clock.Advance(31 * time.Second)
		if rep := g.chat(t, "r", bearer("hk-new")...); rep.status != 200 {
			t.Errorf("the new key after the leaked key's answer ended: %d %s, want 200 (that answer is not its to pay)",
				rep.status, rep.body)
		}
	})

	t.Run("rotated in debt", func(t *testing.T) {
		old := newServer(keyBlock("alice", "hk-leaked", "tpm = 100"), nil)
		l := server.NewLive(old)
		g := &gateway{ts: serveLive(t, l)}
		if rep := g.chat(t, "r", bearer("hk-leaked")...); rep.status != 200 {
			t.Fatalf("before the rotation: %d %s", rep.status, rep.body)
		}
		tpmRefused(t, g.chat(t, "r", bearer("hk-leaked")...), "alice", 100, "31")
		l.Replace(newServer(keyBlock("alice", "hk-new", "tpm = 100"), old))
		if rep := g.chat(t, "r", bearer("hk-new")...); rep.status != 200 {
			t.Errorf("the new key, the leaked one's bucket in debt: %d %s, want 200", rep.status, rep.body)
		}
	})

	t.Run("renamed", func(t *testing.T) {
		old := newServer(keyBlock("alice", "hk-a", "tpm = 100"), nil)
		l := server.NewLive(old)
		g := &gateway{ts: serveLive(t, l)}
		if rep := g.chat(t, "r", bearer("hk-a")...); rep.status != 200 {
			t.Fatalf("before the rename: %d %s", rep.status, rep.body)
		}
		l.Replace(newServer(keyBlock("alice-laptop", "hk-a", "tpm = 100"), old))
		tpmRefused(t, g.chat(t, "r", bearer("hk-a")...), "alice-laptop", 100, "31")
	})

	t.Run("names swapped", func(t *testing.T) {
		old := newServer(keyBlock("alice", "hk-a", "tpm = 100")+keyBlock("bob", "hk-b", "tpm = 100"), nil)
		l := server.NewLive(old)
		g := &gateway{ts: serveLive(t, l)}
		if rep := g.chat(t, "r", bearer("hk-a")...); rep.status != 200 {
			t.Fatalf("before the swap: %d %s", rep.status, rep.body)
		}
		l.Replace(newServer(keyBlock("alice", "hk-b", "tpm = 100")+keyBlock("bob", "hk-a", "tpm = 100"), old))
		tpmRefused(t, g.chat(t, "r", bearer("hk-a")...), "bob", 100, "31")
		if rep := g.chat(t, "r", bearer("hk-b")...); rep.status != 200 {
			t.Errorf("hk-b, which spent nothing, now named alice: %d %s, want 200", rep.status, rep.body)
		}
	})
}
