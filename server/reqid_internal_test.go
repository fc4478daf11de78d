package server

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Generated IDs are distinct and cost one allocation: the ID and its header value together.
func TestRequestIDSource(t *testing.T) {
	g := newRequestIDs(nil)
	seen := make(map[string]bool, 1<<14)
	for range 1 << 14 {
		id := g.next()[0]
		if len(id) != genIDLen || id[:4] != "req_" || seen[id] {
			t.Fatalf("ID %q: not of the form, or repeated", id)
		}
		seen[id] = true
	}
	// Counts next to each other, and the counter's wrap, still give distinct IDs.
	g.n.Store(^uint64(0) - 2)
	for range 4 {
		if id := g.next()[0]; seen[id] {
			t.Fatalf("ID %q repeated across the counter's wrap", id)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = g.next() }); n != 1 {
		t.Errorf("next allocates %v times, want 1", n)
	}
	// And a header map takes the value as it is: a client's ID costs its one-element slice only.
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set(hdrRequestID, "from-client")
	w := httptest.NewRecorder()
	var line []byte
	if n := testing.AllocsPerRun(100, func() { _ = g.assign(w, r, &line) }); n > 1 {
		t.Errorf("assign of a client's ID allocates %v times, want at most 1", n)
	}
	if got := w.Header().Values(hdrRequestID); len(got) != 1 || got[0] != "from-client" {
		t.Errorf("header %q", got)
	}
}

// Many goroutines drawing from one source at once (every request of a server does) get distinct
// IDs, each whole: run with -race, a torn or shared ID buffer shows here.
func TestRequestIDSourceConcurrent(t *testing.T) {
	g := newRequestIDs(nil)
	const workers, each = 16, 2000
	ids := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				ids[w] = append(ids[w], g.next()[0])
			}
		})
	}
	wg.Wait()
	seen := make(map[string]bool, workers*each)
	for _, l := range ids {
		for _, id := range l {
			if len(id) != genIDLen || id[:4] != "req_" || seen[id] {
				t.Fatalf("ID %q: not of the form, or repeated", id)
			}
			seen[id] = true
		}
	}
}
