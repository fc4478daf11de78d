package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// get writes a GET for path on c and reads its answer's status line and body (the answers
// here have a Content-Length), leaving the connection open unless the answer closes it.
func get(t *testing.T, c net.Conn, br *bufio.Reader, path string, close bool) string {
	t.Helper()
	raw := "GET " + path + " HTTP/1.1\r\nHost: x\r\n"
	if close {
		raw += "Connection: close\r\n"
	}
	if _, err := io.WriteString(c, raw+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Status + " " + string(b)
}

// waitIdleSince waits until every connection s has open waits for its next request, one of
// them idle since after since (s.now): the one whose request was the last answered then.
func waitIdleSince(t *testing.T, s *Server, since int64) {
	t.Helper()
	for {
		s.mu.Lock()
		idle, newest := true, int64(0)
		for c := range s.conns {
			idle = idle && c.state.Load() == stateIdle
			newest = max(newest, c.idleAt.Load())
		}
		s.mu.Unlock()
		if idle && newest > since {
			return
		}
		runtime.Gosched()
	}
}

// closedByServer reports whether the server has closed c: its next read ends with EOF (or a
// reset), not with the 10 s deadline dialRaw puts on it.
func closedByServer(br *bufio.Reader) bool {
	_, err := br.ReadByte()
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// At the cap, a new connection is not served until one of those open closes: the accept loop
// holds it, and takes no other from the listener, while every open connection has a request
// under way.
func TestConnLimitWaitsForAConnectionToClose(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var oks atomic.Int32
	waiting := make(chan struct{}, 1)
	lim := NewConnLimit(1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			close(entered)
			<-release
		} else {
			oks.Add(1)
		}
		_, _ = io.WriteString(w, "ok")
	}), func(s *Server) {
		s.Conns = lim
		s.waitingRoom = func() { waiting <- struct{}{} }
	})

	a, abr := dialRaw(t, addr)
	if _, err := io.WriteString(a, "GET /block HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-entered
	b, bbr := dialRaw(t, addr)
	if _, err := io.WriteString(b, "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-waiting // the accept loop holds b, the cap reached by a, whose request is under way
	if n := oks.Load(); n != 0 {
		t.Fatalf("a connection over the cap was served (%d requests) while the one open was busy", n)
	}
	if st := lim.Stats(); st.Open != 1 || st.Waited != 1 || st.IdleClosed != 0 {
		t.Errorf("stats while b waits = %+v, want Open 1, Waited 1, IdleClosed 0", st)
	}
	close(release)
	resp, err := http.ReadResponse(abr, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	a.Close()
	// a's answer closes it: b is served.
	resp, err = http.ReadResponse(bbr, nil)
	if err != nil {
		t.Fatalf("the waiting connection was not served once the open one closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || oks.Load() != 1 {
		t.Errorf("b got %s, %d requests served, want 200 and 1", resp.Status, oks.Load())
	}
}

// At the cap, the connection that has waited longest for a request is closed to make room for a
// new one, which is served; a younger idle one stays open.
func TestConnLimitClosesOldestIdleForNewConnection(t *testing.T) {
	lim := NewConnLimit(2)
	var srv *Server
	var handled atomic.Int64 // when (srv.now) the last handler ran
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handled.Store(srv.now())
		_, _ = io.WriteString(w, "ok")
	}), func(s *Server) { s.Conns = lim; srv = s })

	a, abr := dialRaw(t, addr)
	if got := get(t, a, abr, "/a", false); got != "200 OK ok" {
		t.Fatalf("a: %q", got)
	}
	// The client has the answer before the server's goroutine is back waiting for the next
	// request: until then the connection is not idle, and a stamped after b would be the younger.
	waitIdleSince(t, srv, handled.Load())
	b, bbr := dialRaw(t, addr)
	if got := get(t, b, bbr, "/b", false); got != "200 OK ok" {
		t.Fatalf("b: %q", got)
	}
	waitIdleSince(t, srv, handled.Load())
	// a and b are idle, a the longer: c, a client with a request, takes a's place.
	c, cbr := dialRaw(t, addr)
	if got := get(t, c, cbr, "/c", true); got != "200 OK ok" {
		t.Fatalf("c, over the cap with two idle connections open: %q", got)
	}
	if !closedByServer(abr) {
		t.Error("the oldest idle connection (a) was not closed to make room")
	}
	if got := get(t, b, bbr, "/b2", false); got != "200 OK ok" {
		t.Errorf("b, the younger idle connection, was closed too: %q", got)
	}
	if st := lim.Stats(); st.IdleClosed != 1 || st.Waited != 1 {
		t.Errorf("stats = %+v, want IdleClosed 1, Waited 1", st)
	}
}

// A connection the cap holds is let in when the cap is raised (a reload), and one lowered under
// the connections open closes none of those busy: only a new connection waits.
func TestConnLimitSetWhileServing(t *testing.T) {
	entered, release := make(chan struct{}, 2), make(chan struct{})
	waiting := make(chan struct{}, 1)
	lim := NewConnLimit(0)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}), func(s *Server) {
		s.Conns = lim
		s.waitingRoom = func() { waiting <- struct{}{} }
	})
	var busy []*bufio.Reader
	for range 2 {
		c, br := dialRaw(t, addr)
		if _, err := io.WriteString(c, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		<-entered
		busy = append(busy, br)
	}
	lim.Set(1) // lowered under the two open, both busy: neither is cut
	n, nbr := dialRaw(t, addr)
	if _, err := io.WriteString(n, "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-waiting
	lim.Set(3)
	resp, err := http.ReadResponse(nbr, nil)
	if err != nil {
		t.Fatalf("the connection held at the cap was not served once the cap was raised: %v", err)
	}
	resp.Body.Close()
	close(release)
	for i, br := range busy {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("busy connection %d was cut by the lowered cap: %v", i, err)
		}
		resp.Body.Close()
	}
}

// emfileListener fails accepts with EMFILE, as a process out of file descriptors sees it, while
// fails is positive and a connection waits in the kernel's queue (held in pending until then).
type emfileListener struct {
	net.Listener
	mu      sync.Mutex
	fails   int
	pending net.Conn
}

var errEMFILE = &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}

func (l *emfileListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.pending != nil {
		defer l.mu.Unlock()
		if l.fails > 0 {
			l.fails--
			return nil, errEMFILE
		}
		nc := l.pending
		l.pending = nil
		return nc, nil
	}
	l.mu.Unlock()
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fails > 0 {
		l.fails--
		l.pending = nc
		return nil, errEMFILE
	}
	return nc, nil
}

// lockedBuffer is a log's destination that the accept loop and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// An accept that fails for want of file descriptors is retried after a pause, and the server
// goes on serving; the failures are logged once, not at each accept, and an idle connection is
// closed to free a descriptor for the client waiting.
func TestAcceptOutOfFilesSurvived(t *testing.T) {
	var logs lockedBuffer
	lim := NewConnLimit(0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	el := &emfileListener{Listener: ln}
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), IdleTimeout: 30 * 1e9, Conns: lim, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	done := make(chan error, 1)
	go func() { done <- s.Serve(el) }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
		waitConns(t, s)
	})
	addr := ln.Addr().String()

	idle, ibr := dialRaw(t, addr)
	if got := get(t, idle, ibr, "/first", false); got != "200 OK ok" {
		t.Fatalf("first: %q", got)
	}
	el.mu.Lock()
	el.fails = 3
	el.mu.Unlock()
	c, cbr := dialRaw(t, addr)
	if got := get(t, c, cbr, "/after", true); got != "200 OK ok" {
		t.Fatalf("after three failed accepts: %q", got)
	}
	if !closedByServer(ibr) {
		t.Error("out of file descriptors, the server kept its idle connection")
	}
	c2, c2br := dialRaw(t, addr)
	if got := get(t, c2, c2br, "/again", true); got != "200 OK ok" {
		t.Fatalf("later: %q", got)
	}
	var warns []string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "accept failed") {
			warns = append(warns, line)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "too many open files") {
		t.Errorf("three failed accepts logged %d lines, want one naming the error:\n%s", len(warns), logs.String())
	}
	if !strings.Contains(logs.String(), "accepting connections again") {
		t.Errorf("the end of the failures is not logged:\n%s", logs.String())
	}
	if st := lim.Stats(); st.AcceptErrors != 3 || st.IdleClosed != 1 {
		t.Errorf("stats = %+v, want AcceptErrors 3, IdleClosed 1", st)
	}
}

// A connection that goes idle while the accept loop, at the cap, has just looked for an idle one
// to close and found none (its request was under way) still wakes the loop, which then closes
// it for the connection it holds. Woken only by a connection's end, the loop kept the new one
// waiting for the idle one's IdleTimeout, or for good without one.
func TestConnLimitIdleDuringLookWakesAcceptLoop(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	lim := NewConnLimit(1)
	var once sync.Once
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			close(entered)
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}), func(s *Server) {
		s.Conns = lim
		s.lookedForIdle = func() { // s.mu is held
			once.Do(func() {
				var a *conn
				for c := range s.conns {
					a = c
				}
				at := a.idleAt.Load()
				close(release)
				if s.roomWanted.Load() {
					return // a's going idle takes s.mu to wake the loop, which it cannot hold before this returns
				}
				// a goes idle, unseen by the look just made, and waits for its next request.
				for a.idleAt.Load() == at {
					runtime.Gosched()
				}
			})
		}
	})

	a, abr := dialRaw(t, addr)
	if _, err := io.WriteString(a, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-entered
	b, bbr := dialRaw(t, addr)
	if _, err := io.WriteString(b, "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(abr, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.ReadResponse(bbr, nil)
	if err != nil {
		t.Fatalf("the connection held at the cap was not served after the open one went idle: %v", err)
	}
	resp.Body.Close()
	if !closedByServer(abr) {
		t.Error("the idle connection was not closed to make room")
	}
	if st := lim.Stats(); st.IdleClosed != 1 || st.Waited != 1 {
		t.Errorf("stats = %+v, want IdleClosed 1, Waited 1", st)
	}
}

// waitHeadStalled waits until s has n connections waiting on the socket for the rest of a head.
func waitHeadStalled(s *Server, n int) {
	for {
		s.mu.Lock()
		k := 0
		for c := range s.conns {
			if c.state.Load() == stateHead && c.headAt.Load() != 0 {
				k++
			}
		}
		s.mu.Unlock()
		if k >= n {
			return
		}
		runtime.Gosched()
	}
}

// At the cap, with no idle connection to close, the connection that has waited longest for the
// rest of a request's head (a slowloris client: part of a head, then nothing) is closed to make
// room for a new one once its grace has passed, rather than holding its slot for the whole
// ReadHeaderTimeout (an hour here: the new client's read, 10 s, ran out first before); a younger
// one still in its head stays open and is served when it finishes its head.
func TestConnLimitClosesStalledHeadForNewConnection(t *testing.T) {
	lim := NewConnLimit(2)
	var srv *Server
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), func(s *Server) { s.Conns = lim; s.ReadHeaderTimeout = time.Hour; srv = s })

	a, abr := dialRaw(t, addr)
	if _, err := io.WriteString(a, "GET /a HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	waitHeadStalled(srv, 1)
	b, bbr := dialRaw(t, addr)
	if _, err := io.WriteString(b, "GET /b HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	waitHeadStalled(srv, 2)

	c, cbr := dialRaw(t, addr)
	if got := get(t, c, cbr, "/c", true); got != "200 OK ok" {
		t.Fatalf("c, over the cap with two stalled heads open: %q", got)
	}
	if !closedByServer(abr) {
		t.Error("the connection stalled longest in its head (a) was not closed to make room")
	}
	if _, err := io.WriteString(b, "\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bbr, nil)
	if err != nil {
		t.Fatalf("b, the younger stalled head, finishing its head: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("b: %s", resp.Status)
	}
	if st := lim.Stats(); st.IdleClosed != 1 || st.Waited != 1 {
		t.Errorf("stats = %+v, want IdleClosed 1, Waited 1", st)
	}
}

// A connection whose head has begun but has not yet waited on the socket for its rest (its
// first bytes parsed, headAt 0) is looked at again once its grace could have passed: its head
// may stall from its next read on, which wakes no accept loop, and a new connection at the cap
// then waited for the stalled one's ReadHeaderTimeout, not its grace. A connection that goes
// from a request's answer to its next head passes through idle (wentIdle wakes the loop), but
// one whose next head was pipelined, or came just then, can be in that state when the loop looks.
func TestConnLimitLooksAgainAtHeadBegun(t *testing.T) {
	s := &Server{Conns: NewConnLimit(1)}
	c := &conn{s: s}
	c.state.Store(stateHead)
	s.conns = map[*conn]struct{}{c: {}}
	s.mu.Lock()
	later := s.closeOldestIdle()
	s.mu.Unlock()
	if later <= 0 {
		t.Errorf("closeOldestIdle with a head begun, not yet waited for: look again in %v, want a look once its grace can pass", later)
	}
	if c.state.Load() != stateHead {
		t.Errorf("the connection reading its head was closed (state %d)", c.state.Load())
	}
}
