package upstream

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// TestClosedConnectionsLendTheirBuffers: a server that closes every connection after its
// answer makes the client dial for every request; the buffers of each connection closed go to
// the next one, so that far fewer are made than connections (sync.Pool drops some under the race
// detector, hence a bound rather than one), and every answer still reads as its own.
func TestClosedConnectionsLendTheirBuffers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Connection", "close")
		w.Header().Set("X-Echo", string(b))
		_, _ = io.WriteString(w, "answer to "+string(b))
	}))
	t.Cleanup(srv.Close)
	d := &net.Dialer{Timeout: time.Second}
	tr := &h1Transport{fallback: &http.Transport{}, idle: map[string]*idleList{}, dial: d.DialContext, maxIdle: 4}
	t.Cleanup(tr.CloseIdleConnections) // ends the sweeper
	tg := &core.Target{}
	seen := map[*connBufs]bool{}
	const n = 200
	for i := range n {
		q := strings.Repeat("q", i%7+1) + "-" + strings.Repeat("x", i)
		resp, _, err := tr.post(context.Background(), srv.URL+"/v1", "/chat/completions", tg, &payload{[]byte(q)}, "application/json", "")
		if err != nil {
			t.Fatal(err)
		}
		if b, ok := resp.Body.(*h1Body); ok && b.c.bufs != nil {
			seen[b.c.bufs] = true
		}
		echo := resp.Header.Get("X-Echo") // before the body ends: the map is free after
		got, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || string(got) != "answer to "+q || echo != q {
			t.Fatalf("exchange %d: %q, X-Echo %q, %v", i, got, echo, err)
		}
	}
	if len(seen) == 0 || len(seen) > n*3/4 {
		t.Errorf("%d connections used %d sets of buffers", n, len(seen))
	}
}
