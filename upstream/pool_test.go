package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/hayula/gateway/core"
)

// countingServer is an httptest upstream that counts the connections it accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	return counting(t, h, (*httptest.Server).Start)
}

// counting is an httptest upstream started by start (Start or StartTLS), closed when the test
// ends, and the count of the connections it accepted.
func counting(t *testing.T, h http.HandlerFunc, start func(*httptest.Server)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	start(srv)
	t.Cleanup(srv.Close)
	return srv, &conns
}

const doneStream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"

// A stream whose [DONE] arrives before the end of its chunked body still gives its connection
// back: Close reads the tail.
func TestStreamTailDrainedForReuse(t *testing.T) {
	release := make(chan struct{}, 4)
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, doneStream)
		w.(http.Flusher).Flush()
		// The chunked terminator goes out only when the handler returns, after the client has
		// read [DONE].
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	s := newSet(t, target(srv.URL))
	for i := range 3 {
		resp, err := s.Chat(context.Background(), target(srv.URL), chatReq(true))
		if err != nil {
			t.Fatal(err)
		}
		if ev, end := drain(resp.Stream); len(ev) != 1 || end != "EOF" {
			t.Fatalf("request %d: events %q, end %s", i, ev, end)
		}
		release <- struct{}{}
		if err := resp.Stream.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("upstream accepted %d connections for 3 sequential streams, want 1 (reused)", got)
	}
}

// Sequential non-streaming answers share one connection.
func TestAnswerConnectionReused(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"id":"x","choices":[{"index":0}]}`)
	})
	s := newSet(t, target(srv.URL))
	for i := range 5 {
		if _, err := s.Chat(context.Background(), target(srv.URL), chatReq(false)); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("upstream accepted %d connections for 5 sequential answers, want 1", got)
	}
}

func TestLooksLikeObject(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`{"id":"x"}`, true},
		{" \n{}\r\n", true},
		{"<html>captive portal</html>", false},
		{"", false},
		{"{", false},
		{`[{"id":"x"}]`, false},
		{"Bad Gateway", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := looksLikeObject([]byte(tt.in)); got != tt.want {
				t.Errorf("looksLikeObject(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// An answer shorter than its Content-Length is a body that broke off, not an answer.
func TestAnswerShorterThanContentLength(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, `{"id":"x",`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	tg := target(srv.URL)
	_, err := newSet(t, tg).Chat(context.Background(), tg, chatReq(false))
	if !errors.As(err, new(*core.StreamError)) {
		t.Fatalf("Chat error = %v (%T), want *core.StreamError", err, err)
	}
}
