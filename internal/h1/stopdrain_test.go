package h1

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestShutdownEndsDrainAfterAnswer: a handler that answers before reading its request's body
// (an early 401) leaves the connection to drain the rest of the body, for up to 5 s, so that it
// can carry the next request; a client that sends no more held a graceful Shutdown for those
// 5 s, though its answer was out and the connection was to close anyway. Under Shutdown the
// connection now ends once its answer is written, with the lingering close it ends with
// otherwise (the write side shut first, so the answer is not reset under the client), whether
// the drain had begun before Shutdown or not. The 4 s bound is a watchdog under the drain's 5 s,
// not a speed asserted: Shutdown returns at once.
func TestShutdownEndsDrainAfterAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after bool // the answer is written after Shutdown began, rather than before
	}{{"drain under way", false}, {"answer under shutdown", true}} {
		t.Run(tc.name, func(t *testing.T) {
			running, stopping := make(chan struct{}), make(chan struct{})
			s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(running)
				if tc.after {
					<-stopping
				}
				http.Error(w, "no key", http.StatusUnauthorized)
			}), func(s *Server) { s.ReadBodyTimeout = 30 * time.Second })
			c, br := dialRaw(t, addr)
			// 200 KiB stated (under maxDrain, so the rest would be drained), 1 KiB sent.
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n%s", 200<<10, strings.Repeat("x", 1<<10))
			shut := make(chan error, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			<-running
			if tc.after {
				go func() { shut <- s.Shutdown(ctx) }()
				for !s.inShutdown.Load() {
					runtime.Gosched()
				}
				close(stopping)
			}
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(res.Body)
			if err != nil || res.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "no key") {
				t.Fatalf("answer %d %q, %v", res.StatusCode, b, err)
			}
			if !tc.after {
				go func() { shut <- s.Shutdown(ctx) }()
			}
			select {
			case err := <-shut:
				if err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
			case <-time.After(4 * time.Second):
				t.Fatal("Shutdown waits for the drain of a body whose answer is out")
			}
			// The server shut its write side, then closed: the client sees the end.
			if _, err := br.ReadByte(); err == nil {
				t.Error("the connection is still open after Shutdown")
			}
		})
	}
}
