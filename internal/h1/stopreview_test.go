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
