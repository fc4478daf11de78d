package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestIdleConnectionsOfAnOldAddressExpire: a managed target's process listens on a new port at
// each launch ({port}), and the server sends the target's attempts to the live URL through the
// one transport. The connections pooled for a port no longer used were never looked at again:
// only a request to their address expired them. They stayed open for good (a socket each, in
// CLOSE_WAIT once the old process had gone), counted against the pool's bound, so that after
// enough relaunches nothing was pooled any more, and the map kept a key for every port. Once
// idle past the target's idle_timeout they are closed at the next request, to whatever address.
func TestIdleConnectionsOfAnOldAddressExpire(t *testing.T) {
	h := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
	}
	tg := target("http://127.0.0.1:1")
	s := newSet(t, tg)
	h1, ok := s.clients[tg.Index].Transport.(*h1Transport)
	if !ok {
		t.Fatalf("the target's transport is a %T, want the pooled HTTP/1.1 client", s.clients[tg.Index].Transport)
	}
	// Three launches, each on a port of its own, each leaving connections in the pool.
	var olds []*httptest.Server
	for range 3 {
		old := httptest.NewServer(http.HandlerFunc(h))
		t.Cleanup(old.Close)
		olds = append(olds, old)
		live := *tg
		live.URL = old.URL + "/v1"
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if _, err := s.Chat(context.Background(), &live, chatReq(false)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	h1.mu.Lock()
	pooled := h1.nIdle
	// Every connection pooled so far has been idle longer than idle_timeout.
	h1.epoch = h1.epoch.Add(-h1.idleTimeout - time.Minute)
	h1.mu.Unlock()
	if pooled == 0 {
		t.Fatal("nothing pooled: the test tests nothing")
	}
	now := httptest.NewServer(http.HandlerFunc(h))
	t.Cleanup(now.Close)
	live := *tg
	live.URL = now.URL + "/v1"
	if _, err := s.Chat(context.Background(), &live, chatReq(false)); err != nil {
		t.Fatal(err)
	}
	h1.mu.Lock()
	defer h1.mu.Unlock()
	for _, old := range olds {
		addr := old.Listener.Addr().String()
		if l, ok := h1.idle[addr]; ok {
			t.Errorf("%d connections (pooled %d in all) to %s, a port no longer used, still pooled past idle_timeout", len(l.conns), pooled, addr)
		}
	}
	if h1.nIdle != 1 || len(h1.idle) != 1 {
		t.Errorf("pool holds %d connections under %d addresses; want the live one's, 1 under 1", h1.nIdle, len(h1.idle))
	}
}
