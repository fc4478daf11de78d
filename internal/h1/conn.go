package h1

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Connection states, for Shutdown: only an idle connection is closed under it.
const (
	stateIdle    int32 = iota // waiting for a request's first byte
	stateActive               // reading a request or answering it
	stateClosing              // Shutdown closed it while idle
)

// conn is one client connection. Its goroutine reads a request, runs the handler and writes
// the answer, in turn; the watcher (watch) is the only other goroutine that reads it.
type conn struct {
	s      *Server
	nc     net.Conn
	remote string
	bufs   *connBufs
	state  atomic.Int32
	res    response
	body   body

	// The watcher. wmu guards the fields below it.
	armedAt atomic.Int64 // when armWatch ran (Server.now), 0 when not armed
	wmu     sync.Mutex
	wstate  int
	wdone   chan struct{}
	cancel  context.CancelFunc // the running request's
	gone    bool               // the watcher saw the client leave
	peeked  bool               // the watcher read a byte of the next request: peek
	peek    [1]byte
	aborted bool // Close closed the connection
}

const (
	watchIdle = iota
	watchArmed
	watchReading
)

// aLongTimeAgo is a read deadline that has passed, to stop the watcher's read at once.
var aLongTimeAgo = time.Unix(1, 0)

func (s *Server) newConn(nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, remote: nc.RemoteAddr().String()}
	c.res.c = c
	c.body.c = c
	return c
}

// connReader hands the watcher's peeked byte, if any, to the next read.
type connReader struct{ c *conn }

func (r connReader) Read(p []byte) (int, error) {
	if r.c.peeked && len(p) > 0 {
		r.c.peeked = false
		p[0] = r.c.peek[0]
		return 1, nil
	}
	return r.c.nc.Read(p)
}

func (c *conn) serve() {
	s := c.s
	c.bufs = s.getBufs(c)
	defer func() {
		_ = c.nc.Close()
		s.untrackConn(c)
		s.putBufs(c.bufs)
		c.bufs = nil
	}()
	for {
		c.state.Store(stateIdle) // Shutdown moves only an idle connection, so nothing is lost here
		if s.inShutdown.Load() {
			return
		}
		deadline := false
		if s.IdleTimeout > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(s.IdleTimeout))
			deadline = true
		}
		if _, err := c.bufs.br.Peek(1); err != nil {
			return
		}
		if !c.state.CompareAndSwap(stateIdle, stateActive) {
			return // Shutdown closed it
		}
		if s.ReadHeaderTimeout > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(s.ReadHeaderTimeout))
			deadline = true
		}
		req, perr := c.readRequest()
		if perr != nil {
			c.reject(perr)
			return
		}
		switch {
		case !c.body.eof && !c.body.cont && s.ReadBodyTimeout > 0:
			c.body.startTimer() // replaces the head's deadline
		case deadline:
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		if !c.handle(req) {
			return
		}
	}
}

// handle runs the handler for req, finishes the answer, and reports whether the connection
// can carry another request.
func (c *conn) handle(base *http.Request) (keep bool) {
	ctx, cancel := context.WithCancel(context.Background())
	c.wmu.Lock()
	c.cancel = cancel
	c.wmu.Unlock()
	req := base.WithContext(ctx)
	w := &c.res
	w.reset(req)
	defer func() {
		if p := recover(); p != nil {
			c.s.panicked(p, req)
			c.body.done = true
			c.unwatch()
			cancel()
			w.abandon()
			keep = false
		}
	}()
	if c.body.n == 0 && !c.body.chunked {
		c.armWatch()
	}
	c.s.Handler.ServeHTTP(w, req)
	c.body.done = true
	c.unwatch()
	cancel()
	keep = w.finish()
	keep = c.body.drain() && keep
	c.wmu.Lock()
	gone := c.gone || c.aborted
	c.cancel = nil
	c.wmu.Unlock()
	return keep && !gone && !req.Close && !c.s.inShutdown.Load()
}

// armWatch marks the request as one the sweeper should watch once it has run for WatchAfter.
// It is called when the request's body has been read to its end: before that the handler
// reads the connection. It costs an atomic store and load: no timer, which would wake the
// thread sleeping in the network poller on every request.
func (c *conn) armWatch() {
	c.wmu.Lock()
	c.wstate = watchArmed
	c.wmu.Unlock()
	c.armedAt.Store(c.s.now() | 1)
	c.s.wakeSweeper()
}

// watch reads one byte from the connection while the request runs: an error other than the
// deadline unwatch sets means the client left, and cancels the request's context; a byte is
// the start of a pipelined request and is kept for the next read.
func (c *conn) watch() {
	c.wmu.Lock()
	if c.wstate != watchArmed || c.bufs.br.Buffered() > 0 {
		c.wmu.Unlock()
		return
	}
	c.wstate = watchReading
	done := make(chan struct{})
	c.wdone = done
	c.wmu.Unlock()
	if c.s.watching != nil {
		c.s.watching()
	}
	n, err := c.nc.Read(c.peek[:])

	c.wmu.Lock()
	if n == 1 {
		c.peeked = true
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.gone = true
		if c.cancel != nil {
			c.cancel()
		}
	}
	close(done)
	c.wmu.Unlock()
}

// unwatch disarms the watch and, when the watcher is reading, stops its read and waits for it.
func (c *conn) unwatch() {
	c.armedAt.Store(0)
	c.wmu.Lock()
	st, done := c.wstate, c.wdone
	c.wstate, c.wdone = watchIdle, nil
	c.wmu.Unlock()
	if st != watchReading {
		return
	}
	select {
	case <-done:
	default:
		_ = c.nc.SetReadDeadline(aLongTimeAgo)
		<-done
	}
	_ = c.nc.SetReadDeadline(time.Time{})
}

// abort closes the connection for Close, cancelling the request under way.
func (c *conn) abort() {
	c.wmu.Lock()
	c.aborted = true
	if c.cancel != nil {
		c.cancel()
	}
	c.wmu.Unlock()
	_ = c.nc.Close()
}

// reject answers a request that could not be parsed, then the connection closes. A
// connection that closed or timed out before a whole request arrived gets no answer.
func (c *conn) reject(err error) {
	var pe *parseError
	if !errors.As(err, &pe) {
		return
	}
	ct, body := "text/plain; charset=utf-8", []byte(pe.msg+"\n")
	if c.s.Reject != nil {
		ct, body = c.s.Reject(pe.status, pe.code, pe.msg)
	}
	bw := c.bufs.bw
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = bw.Write(statusLine(nil, pe.status))
	_, _ = bw.WriteString("Content-Type: ")
	_, _ = bw.WriteString(ct)
	_, _ = bw.WriteString("\r\nContent-Length: ")
	_, _ = bw.Write(appendInt(nil, int64(len(body))))
	_, _ = bw.WriteString("\r\nConnection: close\r\n")
	_, _ = bw.Write(c.s.date.get(time.Now()))
	_, _ = bw.WriteString("\r\n")
	_, _ = bw.Write(body)
	_ = bw.Flush()
	// Closing a socket with unread input resets the connection, and a reset can destroy the
	// answer before the client reads it: half-close, then read what is left for a moment.
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
		_ = c.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, maxDrain))
	}
}
