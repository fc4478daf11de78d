package upstream

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestNoConnectionPooledAfterClose: a stream under way when its Set is closed (the server that
// owns it is closing) does not put its connection back in the pool once it ends: nothing would
// ever take or expire it, and the socket stayed open, and the upstream's connection with it,
// until the upstream gave up on it. As with net/http's CloseIdleConnections, a connection that
// ends after it is closed instead, until a new exchange begins.
func TestNoConnectionPooledAfterClose(t *testing.T) {
	release := make(chan struct{})
	closed := make(chan struct{}, 4)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, doneStream)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	tg := target(srv.URL)
	s := newSet(t, tg)
	resp, err := s.Chat(context.Background(), tg, chatReq(true))
	if err != nil {
		t.Fatal(err)
	}
	if ev, end := drain(resp.Stream); len(ev) != 1 || end != "EOF" {
		t.Fatalf("events %q, end %s", ev, end)
	}
	s.Close()
	close(release)
	if err := resp.Stream.Close(); err != nil {
		t.Fatal(err)
	}
	h1, ok := s.clients[tg.Index].Transport.(*h1Transport)
	if !ok {
		t.Fatalf("the target's transport is a %T, want the pooled HTTP/1.1 client", s.clients[tg.Index].Transport)
	}
	h1.mu.Lock()
	pooled := h1.nIdle
	h1.mu.Unlock()
	if pooled != 0 {
		t.Fatalf("%d connection(s) pooled after the Set was closed", pooled)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Error("the upstream's connection was not closed")
	}
}
