package h1

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
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

// TestStoppedHeadThatCameWholeIsServed: a connection stalled in its head is stopped, to make room
// at the cap or by Shutdown, just as the rest of its head comes and is read (the hook holds the
// connection there until the stop has happened): the request is in the server's hands, and its
// client, whose POST is not idempotent, may not send it again, so it is served, its body read
// after the stop, rather than dropped unanswered (the client read a closed connection). At the
// cap the new connection is served once this one ends; under Shutdown the answer closes the
// connection and Shutdown returns once it is out.
func TestStoppedHeadThatCameWholeIsServed(t *testing.T) {
	for _, by := range []string{"cap", "shutdown"} {
		t.Run(by, func(t *testing.T) {
			stopped := make(chan struct{})
			shut := make(chan error, 1)
			var once sync.Once
			lim := NewConnLimit(1)
			var addr string
			var srv *Server
			var stopBy net.Conn // at the cap, the new connection the stop makes room for
			srv, addr = start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, err := io.ReadAll(r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				_, _ = w.Write(append([]byte(r.URL.Path+" "), b...))
			}), func(s *Server) {
				s.ReadHeaderTimeout = time.Hour
				if by == "cap" {
					s.Conns = lim
				}
				s.headRead = func(c *conn) {
					if c.base.URL == nil || c.base.URL.Path != "/a" {
						return
					}
					once.Do(func() {
						if by == "cap" {
							nb, err := net.Dial("tcp", addr)
							if err != nil {
								t.Error(err)
								return
							}
							stopBy = nb
						} else {
							go func() { shut <- srv.Shutdown(context.Background()) }()
						}
						for c.state.Load() != stateClosing {
							runtime.Gosched()
						}
						close(stopped)
					})
				}
			})

			a, abr := dialRaw(t, addr)
			if _, err := io.WriteString(a, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n"); err != nil {
				t.Fatal(err)
			}
			waitHeadStalled(srv, 1)
			if _, err := io.WriteString(a, "\r\n"); err != nil {
				t.Fatal(err)
			}
			<-stopped
			_, _ = io.WriteString(a, "hello")
			resp, err := http.ReadResponse(abr, nil)
			if err != nil {
				t.Fatalf("the request whose head came whole as it was stopped: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(b) != "/a hello" {
				t.Errorf("a got %s %q, want 200 \"/a hello\"", resp.Status, b)
			}
			switch by {
			case "cap":
				defer stopBy.Close()
				_ = stopBy.SetDeadline(time.Now().Add(10 * time.Second))
				if got := get(t, stopBy, bufio.NewReader(stopBy), "/b", true); got != "200 OK /b " {
					t.Errorf("the new connection, once a ended: %q", got)
				}
				if st := lim.Stats(); st.IdleClosed != 0 {
					t.Errorf("IdleClosed = %d, want 0: the stopped connection was served, not closed", st.IdleClosed)
				}
			case "shutdown":
				if err := <-shut; err != nil {
					t.Errorf("Shutdown: %v", err)
				}
			}
		})
	}
}
