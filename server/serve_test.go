package server_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/server"
)

// TestServeListenerFailureLeavesNothing: when the listener fails under Serve (closed by someone
// else), Serve returns the listener's error, and the HTTP server it ran is shut down first: its
// sweeper and the goroutines of the connections it still held end, and a kept-alive client
// connection is closed rather than served by nobody.
func TestServeListenerFailureLeavesNothing(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	done := make(chan error, 1)
	go func() { done <- server.Serve(context.Background(), ln, h, time.Minute, nil) }()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	ln.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Serve returned %v, want the listener's net.ErrClosed", err)
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("Serve returned and left goroutines behind: %v", err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Error("the kept-alive connection is still open after Serve returned")
	}
}
