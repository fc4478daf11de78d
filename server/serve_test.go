package server_test

import (
	"bufio"
	"context"
	"errors"
	"io"
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

// TestStopClosesStalledBody: a client that sent a chat request's head and part of its body, then
// stopped, does not hold a stop for the grace (30 s here; the gateway's is 10 s): nothing runs
// for it until the body is whole, so Serve closes its connection at once, as an idle one's, and
// returns within 10 s. It waited for the whole grace before.
func TestStopClosesStalledBody(t *testing.T) {
	a := newFake(t, "a")
	g := newGateway(t, target("a", a.url(), "private")+"[routes.r]\ntargets = [\"a\"]\n", nil)
	reached := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		g.srv.Handler().ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, ln, h, 30*time.Second, nil) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		"Content-Length: 1000\r\n\r\n{\"model\":\"r\",\"messages\":[")); err != nil {
		t.Fatal(err)
	}
	<-reached
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stop still waits after 10 s for a request whose body stalled")
	}
	// Closed without an answer: one would mean the request never waited for its body.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Errorf("the client got %q, want the connection closed with no answer", b)
	}
	if a.hits.Load() != 0 {
		t.Error("the upstream was asked")
	}
}
