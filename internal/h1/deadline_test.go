package h1

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hayula/gateway/internal/conntest"
)

// Requests whose head and body arrive whole on a kept-alive connection put no deadline on it
// but the idle one, and that one is kept from one request to the next (see armRead): the
// server used to set three or four a request.
func TestKeepAliveSetsOneDeadline(t *testing.T) {
	s := &Server{Handler: http.HandlerFunc(echo), ReadHeaderTimeout: 5 * time.Second,
		ReadBodyTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(&conntest.Listener{Listener: ln, OnReadDeadline: func(time.Time) { n.Add(1) }})
	}()
	defer func() {
		_ = s.Close()
		<-done
		waitConns(t, s)
	}()

	c, br := dialRaw(t, ln.Addr().String())
	const requests = 5
	for i := range requests {
		if _, err := io.WriteString(c, "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "body=hello") {
			t.Fatalf("request %d: got %q", i, b)
		}
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d read deadlines set over %d kept-alive requests, want 1 (the idle one)", got, requests)
	}
}

// A request that runs longer than IdleTimeout is still watched: the idle deadline the server
// leaves on the socket for the next request does not end the watcher's read, so a client that
// leaves later still cancels the request.
func TestWatchOutlivesIdleDeadline(t *testing.T) {
	cancelled := make(chan error, 1)
	reading := make(chan struct{}, 1)
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			cancelled <- r.Context().Err()
		case <-time.After(10 * time.Second):
			cancelled <- errors.New("the request was not cancelled within 10s of the client leaving")
		}
	}), func(s *Server) {
		s.WatchAfter = time.Millisecond
		s.IdleTimeout = 50 * time.Millisecond
	})
	s.watching = func() { reading <- struct{}{} }
	c, _ := dialRaw(t, addr)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-reading
	time.Sleep(150 * time.Millisecond) // three idle timeouts: a deadline left on the read has passed
	c.Close()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// The idle deadline kept from an earlier request still closes a connection left idle after it.
func TestIdleAfterRequestIsCut(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(echo), func(s *Server) { s.IdleTimeout = 100 * time.Millisecond })
	c, br := dialRaw(t, addr)
	for range 2 {
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("an idle connection: read %v, want EOF (the server closes it after IdleTimeout)", err)
	}
}

// A pipelined request whose head is partly in the buffer when the one before it ends gets a
// ReadHeaderTimeout of its own: the deadline put on the socket for the earlier head (which took
// two reads) had long passed, and armRead, seeing a header deadline on the socket already,
// kept it, so the next request's first read failed at once and the connection closed.
//
// The rest of the second head is sent while the first request's handler runs, and the handler
// returns only once the first head's deadline has passed: the read that needs a deadline of its
// own finds its bytes waiting, so no wall-time margin is left to the client (it was 100 ms,
// from the first answer to the client's next write). No watcher runs (WatchAfter), which would
// read those bytes into the buffer during the handler and spare the server the read.
func TestPipelinedHeadGetsItsOwnDeadline(t *testing.T) {
	const headTimeout = 500 * time.Millisecond
	slow, sent := make(chan struct{}), make(chan struct{})
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(slow)
			<-sent
			time.Sleep(headTimeout) // the first head's deadline, set before this handler ran, has passed
		}
		_, _ = io.WriteString(w, r.URL.Path)
	}), func(s *Server) { s.ReadHeaderTimeout, s.WatchAfter = headTimeout, time.Hour })
	c, br := dialRaw(t, addr)
	// A head bigger than the server's read buffer takes two reads, the second in the header
	// phase; the next request's first line comes in the same write.
	first := "GET /slow HTTP/1.1\r\nHost: h\r\nX-Pad: " + strings.Repeat("p", 6000) + "\r\n\r\n"
	if _, err := io.WriteString(c, first+"GET /next HTTP/1.1\r\nHost: h\r\n"); err != nil {
		t.Fatal(err)
	}
	<-slow // the first head has been read, the second's start is in the buffer
	if _, err := io.WriteString(c, "\r\n"); err != nil {
		t.Fatal(err)
	}
	close(sent)
	for i, want := range []string{"/slow", "/next"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != want {
			t.Fatalf("answer %d: %q, want %q", i, b, want)
		}
	}
}

// A handler that returns just as its watcher starts does not hang the connection: the watcher
// cleared the socket's deadline after unwatch had put one in the past on it to stop the read,
// so the read waited for the client (which waits for the answer) and unwatch waited for it.
func TestUnwatchAsWatcherStarts(t *testing.T) {
	watched := make(chan struct{}, 1)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-watched:
		case <-time.After(5 * time.Second):
		}
		_, _ = io.WriteString(w, "ok")
	}), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second, WatchAfter: time.Millisecond}
	past := make(chan struct{}, 1)
	// The watcher, about to read, lets the handler return and waits until unwatch has moved
	// the deadline into the past.
	s.watching = func() {
		watched <- struct{}{}
		select {
		case <-past:
		case <-time.After(2 * time.Second):
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	// Tell past when a read deadline in the past (unwatch stopping the watcher's read) is set.
	pastHook := func(t time.Time) {
		if !t.IsZero() && t.Before(time.Now()) {
			select {
			case past <- struct{}{}:
			default:
			}
		}
	}
	go func() { done <- s.Serve(&conntest.Listener{Listener: ln, OnReadDeadline: pastHook}) }()
	defer func() {
		_ = s.Close()
		<-done
		waitConns(t, s)
	}()
	c, br := dialRaw(t, ln.Addr().String())
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Fatalf("answer %q, want ok", b)
	}
}
