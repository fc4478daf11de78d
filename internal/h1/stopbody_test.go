package h1

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestShutdownClosesStalledBody: a client that sent a request's head and part of its body, then
// stopped, is closed by Shutdown at once, as an idle one is: its handler is waiting for the body
// and has answered nothing (the gateway reads a body whole before it does anything with it), so
// nothing under way is lost. The handler's read fails. It held a Shutdown for its whole grace
// (the gateway's 10 s) before, or until ReadBodyTimeout. A body of known length and a chunked
// one; ReadBodyTimeout and the Shutdown's context are 30 s, and Shutdown must return in 10.
func TestShutdownClosesStalledBody(t *testing.T) {
	for _, tc := range []struct{ name, raw string }{
		{"content-length", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n0123456789"},
		{"chunked", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n"},
		{"after 100 continue", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reading, read := make(chan struct{}), make(chan error, 1)
			s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(reading)
				_, err := io.ReadAll(r.Body)
				read <- err
				if err != nil {
					http.Error(w, "body", http.StatusBadRequest)
					return
				}
				_, _ = io.WriteString(w, "ok")
			}), func(s *Server) { s.ReadBodyTimeout = 30 * time.Second })
			c, br := dialRaw(t, addr)
			if _, err := io.WriteString(c, tc.raw); err != nil {
				t.Fatal(err)
			}
			<-reading
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			shut := make(chan error, 1)
			go func() { shut <- s.Shutdown(ctx) }()
			select {
			case err := <-shut:
				if err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Shutdown still waits after 10 s for a request whose body stalled")
			}
			if err := <-read; err == nil {
				t.Error("the handler read the stalled body whole")
			}
			for {
				if _, err := br.ReadByte(); err != nil {
					if errors.Is(err, io.EOF) || !isTimeout(err) {
						break
					}
					t.Fatalf("the connection is still open: %v", err)
				}
			}
		})
	}
}

// TestShutdownWaitsForBodyAfterAnswer: a handler that has begun its answer and then reads the
// body is under way: Shutdown leaves its connection open (here until its context ends) rather
// than cut the answer.
func TestShutdownWaitsForBodyAfterAnswer(t *testing.T) {
	reading, read := make(chan struct{}), make(chan error, 1)
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "early")
		w.(http.Flusher).Flush()
		close(reading)
		_, err := io.ReadAll(r.Body)
		read <- err
	}), func(s *Server) { s.ReadBodyTimeout = 30 * time.Second })
	c, _ := dialRaw(t, addr)
	fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n01234")
	<-reading
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want it to wait for the answer under way", err)
	}
	fmt.Fprint(c, "56789")
	if err := <-read; err != nil {
		t.Errorf("the handler's read: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}
