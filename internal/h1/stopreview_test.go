package h1

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
)

// TestServeAfterShutdownClosesListener: a listener handed to Serve once Shutdown has begun (the
// gateway told to stop as it starts: Serve's goroutine may reach it after the shutdown) is
// closed, as every other listener of the server is, rather than left open with connections
// queueing on it that nothing will accept.
func TestServeAfterShutdownClosesListener(t *testing.T) {
	s := &Server{Handler: http.NotFoundHandler()}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := s.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve after Shutdown: %v", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts connections after Serve returned")
	}
}

// TestShutdownAsServeStarts: Shutdown called while Serve's goroutine is starting (the gateway
// told to stop as it starts) reads the server's clock only once Serve has set it, or once Serve
// never will: under -race, a Shutdown that read it unordered with Serve's first steps was a data
// race (seen in TestDemoStoppedBeforeListeningInvitesNoOne). Both return, and the listener is
// closed.
func TestShutdownAsServeStarts(t *testing.T) {
	for range 200 {
		s := &Server{Handler: http.NotFoundHandler()}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- s.Serve(ln) }()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Fatalf("Serve: %v", err)
		}
		ln.Close()
	}
}
