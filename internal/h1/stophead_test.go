package h1

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestShutdownClosesStalledHead: a client that sent part of a request's head and then nothing (a
// slowloris client, or one that stalled mid-head) has no request under way: Shutdown closes its
// connection once its head's grace has passed, as it closes an idle one, rather than wait out the
// ReadHeaderTimeout (30 s here; the gateway's 10 s held every stop that long). A request under way
// on another connection is not touched and is answered in full. Shutdown begins as soon as the head
// has stalled, within its grace: it keeps looking, and closes it once the grace has passed. The
// bounds are watchdogs far under the 30 s, not speeds asserted.
func TestShutdownClosesStalledHead(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}), func(s *Server) { s.ReadHeaderTimeout = 30 * time.Second })

	busy, bbr := dialRaw(t, addr)
	if _, err := io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-entered
	half, hbr := dialRaw(t, addr)
	if _, err := io.WriteString(half, "GET /a HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	waitHeadStalled(s, 1)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctx) }()

	if !closedByServer(hbr) {
		t.Fatal("the connection stalled in its head is still open under Shutdown")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a request was under way", err)
	default:
	}
	close(release)
	resp, err := http.ReadResponse(bbr, nil)
	if err != nil {
		t.Fatalf("the request under way: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || string(b) != "ok" || !resp.Close {
		t.Errorf("the request under way got %s %q (%v), close %v; want 200 \"ok\" with Connection: close",
			resp.Status, b, err, resp.Close)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown still waits after 20 s, its connections answered or stalled in a head")
	}
}
