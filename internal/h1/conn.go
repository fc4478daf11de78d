package h1

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Connection states, for Shutdown: only a connection that waits for its client, with nothing
// under way, is closed under it.
const (
	stateIdle    int32 = iota // waiting for a request's first byte
	stateActive               // reading a request or answering it
	stateClosing              // Shutdown closed it while idle or waiting for a body, or ended its drain
	// stateBody: the handler waits, in a read that reached the socket, for more of its request's
	// body, and has begun no answer (set no status). Shutdown closes such a connection as it
	// closes an idle one (the handler's read fails with errStopped): the gateway reads a body
	// whole before it does anything with it, and a client that stalled mid-body held a stop for
	// its whole grace (TestShutdownClosesStalledBody).
	stateBody
	// stateDrain: the answer is out and the connection reads the rest of a body its handler
	// left (body.drain), to carry the next request. Shutdown ends that wait at once (the
	// connection would close after the answer anyway): it had a client that sent no more hold a
	// stop for drainWait (TestShutdownEndsDrainAfterAnswer).
	stateDrain
	// stateHead: the request's first byte has come and the rest of its head is being read; no
	// request is under way yet. At the cap a connection that has waited on the socket for its
	// head longer than headGrace is closed to make room once no idle one is left
	// (closeOldestIdle): a client that sent part of a head and then nothing (slowloris) held its
	// slot for the whole ReadHeaderTimeout, and a gateway at its cap served no one meanwhile
	// (TestConnLimitClosesStalledHeadForNewConnection). Shutdown closes it once it has waited so
	// for headGrace (TestShutdownClosesStalledHead).
	stateHead
)

// errStopped fails a handler's read of a body that had not arrived when Shutdown closed its
// connection (see stateBody).
var errStopped = errors.New("h1: the server stopped before the request body arrived")

// errHeadStopped fails the read of a head that stopHead stopped, once the socket holds no more.
var errHeadStopped = errors.New("h1: the server stopped waiting for the rest of the request head")

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
	base   http.Request // the request as read
	req    http.Request // what the handler gets: base with its context, overwritten by the next
	slot   *reqSlot     // the request's context and body handle
	url    url.URL      // the request's URL when its path is plain (see parseTarget)
	// names has the bit (nameBit) of each field name the request being served came with, for
	// MayHave. Only the connection's goroutine writes it, before the handler runs.
	names uint64
	// skipped counts the empty lines awaitRequest skipped before the request being read.
	skipped int
	// lingered is set by linger, which ends the connection once.
	lingered bool
	// madeRoom is set, under Server.mu, when the connection was closed idle to make room for a
	// new one (closeOldestIdle).
	madeRoom bool
	// idleAt is when (Server.now) the connection's wait for its next request reached the socket
	// (armRead), or it was let in (admit, not accepted: one held at the cap is no older for its
	// wait): the oldest idle is closed first to make room.
	idleAt atomic.Int64
	// headAt is when (Server.now, at least 1) the read of the head being read first reached the
	// socket for more (armRead); 0 while it has not: a head that came whole in the read of its
	// first byte is parsed without a clock read, and is never waited for.
	headAt atomic.Int64
	// inBody is set while the handler's read of its body, its answer not begun, is under way:
	// a read of the socket then marks the connection stateBody (see connReader). Only the
	// goroutine reading the body uses it, under the body handle's lock.
	inBody bool

	// Read deadlines (see armRead). Only the connection's goroutine uses these.
	phase  rdl   // the deadline a read that reaches the socket needs now
	have   rdl   // the deadline on the socket
	haveAt int64 // Server.now when an idle deadline was set

	// The watcher. wmu guards the fields below it.
	armedAt atomic.Int64 // when armWatch ran (Server.now), 0 when not armed
	wmu     sync.Mutex
	wstate  int
	wdone   chan struct{}
	ctx     *reqCtx // the running request's, to cancel
	gone    bool    // the watcher saw the client leave
	// peek holds what the watcher read (peek[peekFrom:peekTo] is left for the next read): the
	// empty lines an old client sends after a POST body, which it reads past, then at most
	// one byte of the next request.
	peek     [2*maxEmptyLines + 1]byte
	peekFrom int
	peekTo   int
	aborted  bool // Close closed the connection

	// The send timeout (see Server.SendTimeout). wseq counts the starts and ends of writes to
	// the client (connWriter), so it is odd while one is under way; watched is set while the
	// request's watcher runs, so that the sweeper keeps looking. sentSeq and sentAt are the
	// sweeper's, under Server.mu: the wseq it last saw, and when (Server.now) it saw it change.
	wseq    atomic.Uint64
	watched atomic.Bool
	sentSeq uint64
	sentAt  int64
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

// connReader is what the connection's buffered reader reads: it hands the watcher's peeked
// byte, if any, to the next read, and puts the deadline the read needs on the socket first.
type connReader struct{ c *conn }

func (r connReader) Read(p []byte) (int, error) {
	c := r.c
	if c.peekFrom < c.peekTo && len(p) > 0 {
		n := copy(p, c.peek[c.peekFrom:c.peekTo])
		if c.peekFrom += n; c.peekFrom == c.peekTo {
			c.peekFrom, c.peekTo = 0, 0
		}
		return n, nil
	}
	c.armRead()
	if c.inBody {
		return c.readBody(p)
	}
	if c.phase == rdlHead && c.state.Load() == stateClosing {
		// stopHead stopped the head. Looked at after armRead's deadline, not before: stopHead's
		// past deadline, put on the socket after its CompareAndSwap, then comes after armRead's
		// too, and the read below cannot wait.
		return c.lastLook(p)
	}
	n, err := c.nc.Read(p)
	if err != nil && c.phase == rdlHead && c.state.Load() == stateClosing {
		return c.lastLook(p) // the stop's deadline ended the read, maybe with the head's rest there
	}
	return n, err
}

// stopHead ends the wait for the rest of a head, for Shutdown or to make room at the cap, once
// the caller has moved the connection from stateHead to stateClosing: a deadline that has passed
// ends the read under way, and from then on connReader takes only what the socket already holds
// (lastLook), never waiting. The connection's goroutine then ends it, or serves its head if that
// came whole (keepHead): closing the socket from here would drop a request whose head the
// goroutine had just read.
func (c *conn) stopHead() {
	_ = c.nc.SetReadDeadline(aLongTimeAgo)
}

// readBody reads the socket for the handler's read of a body, its answer not begun: for the
// read, the connection is one Shutdown may close (stateBody). A read that Shutdown's close ended,
// or that returned as Shutdown closed the socket, fails with errStopped.
func (c *conn) readBody(p []byte) (int, error) {
	if !c.state.CompareAndSwap(stateActive, stateBody) {
		return 0, errStopped
	}
	n, err := c.nc.Read(p)
	if !c.state.CompareAndSwap(stateBody, stateActive) {
		return 0, errStopped
	}
	return n, err
}

// maxWritePiece is the most connWriter hands the socket in one write: a write that waits for
// a slow reader is seen to progress (by the sweeper, see Server.SendTimeout) at least at the
// end of every piece.
const maxWritePiece = 64 << 10

// connWriter is what the connection's buffered writer writes to, and WriteWhole's write or
// writev is counted the same way: every write to the client moves wseq before and after, so that the
// sweeper can tell a write that makes no progress without a write deadline (which would move a
// runtime timer on every answer, as a read deadline does; see armRead).
type connWriter struct{ c *conn }

func (w connWriter) Write(p []byte) (n int, err error) {
	c := w.c
	for n < len(p) {
		q := p[n:]
		if len(q) > maxWritePiece {
			q = q[:maxWritePiece]
		}
		c.beginWrite()
		m, err := c.nc.Write(q)
		c.wseq.Add(1)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// beginWrite counts the start of a write to the client (wseq) and, with a SendTimeout, wakes
// the sweeper if it is parked: a request that writes before its body has been read to its end
// is not armed (armWatch), and its stalled write would otherwise be seen by no one.
func (c *conn) beginWrite() {
	c.wseq.Add(1)
	if c.s.SendTimeout > 0 {
		c.s.wakeSweeper()
	}
}

// rdl names a read deadline.
type rdl uint8

const (
	rdlNone  rdl = iota // none: a read may wait for ever
	rdlIdle             // IdleTimeout, for the first byte of a request
	rdlHead             // ReadHeaderTimeout, for the rest of its head
	rdlOther            // set by someone else (body timer, drain, a handler): left alone while phase is rdlOther
)

// armRead puts on the socket the deadline that a read in the current phase needs, just before
// the read. Setting a deadline moves a runtime timer and can wake the network poller's
// thread; done eagerly, a keep-alive request cost three or four of them. Done here, a request
// whose head and body arrive in one read sets none but the idle deadline, and an idle deadline
// set less than idleRenew ago is kept: the idle wait is then between IdleTimeout − idleRenew
// and IdleTimeout.
func (c *conn) armRead() {
	s := c.s
	switch c.phase {
	case rdlOther:
		return
	case rdlIdle:
		if s.IdleTimeout > 0 {
			now := s.now()
			// The wait for the next request reaches the socket: from now the connection is idle,
			// the oldest of which closeOldestIdle closes first. Its clock read is the deadline's
			// (a connection whose next request is already buffered is idle for no time, and keeps
			// its last stamp for the moment it is).
			c.idleAt.Store(now)
			if c.have == rdlIdle && now-c.haveAt < int64(idleRenew(s.IdleTimeout)) {
				return
			}
			_ = c.nc.SetReadDeadline(time.Now().Add(s.IdleTimeout))
			c.have, c.haveAt = rdlIdle, now
			return
		}
	case rdlHead:
		if c.headAt.Load() == 0 {
			c.headAt.Store(max(s.now(), 1))
		}
		if s.ReadHeaderTimeout > 0 {
			if c.have != rdlHead {
				_ = c.nc.SetReadDeadline(time.Now().Add(s.ReadHeaderTimeout))
				c.have = rdlHead
			}
			return
		}
	}
	if c.have != rdlNone {
		_ = c.nc.SetReadDeadline(time.Time{})
		c.have = rdlNone
	}
}

// idleRenew is how old an idle deadline may be and still be kept for the next wait.
func idleRenew(idle time.Duration) time.Duration { return min(idle/16, time.Second) }

// setReadDeadline sets a deadline for someone other than armRead, which leaves it alone until
// the phase changes.
func (c *conn) setReadDeadline(t time.Time) error {
	c.have = rdlOther
	return c.nc.SetReadDeadline(t)
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
		s.wentIdle()
		// The deadlines below are put on the socket by armRead, and only if a read reaches it.
		c.phase = rdlIdle
		if err := c.awaitRequest(); err != nil {
			return
		}
		c.headAt.Store(0)
		if !c.state.CompareAndSwap(stateIdle, stateHead) {
			return // Shutdown closed it
		}
		c.phase = rdlHead
		reserveStack(false)
		perr := c.readRequest()
		if c.have == rdlHead {
			// That deadline was this head's: the next head's read needs one of its own, and
			// armRead, seeing rdlHead, would keep this one (passed by then) instead.
			c.have = rdlOther
		}
		if s.headRead != nil {
			s.headRead(c)
		}
		if !c.state.CompareAndSwap(stateHead, stateActive) {
			// Stopped to make room, or by Shutdown, while its head stalled (stopHead).
			if !s.keepHead(c, perr) {
				return
			}
			c.have = rdlOther // the stop's past deadline is on the socket: armRead replaces it
		}
		if perr != nil {
			c.reject(perr)
			return
		}
		c.phase = rdlNone
		if !c.body.eof && !c.body.cont && !c.body.buffered() {
			c.body.startTimer()
		}
		if !c.handle() {
			c.wmu.Lock()
			ended := c.gone || c.aborted
			c.wmu.Unlock()
			if !ended && c.res.err == nil {
				// The body's rest may be unread (body.drain), or the client sent more after
				// its request (an empty line after a POST body, a pipelined request): closed
				// with input unread, the socket would reset the connection under the answer.
				c.linger()
			}
			return
		}
	}
}

// awaitRequest waits, idle, for the first byte of the next request, skipping up to
// maxEmptyLines empty lines before it (RFC 9112 §2.2; clients of the HTTP/1.0 era end a POST body
// with one): a connection that has sent one is still waiting for a request, under IdleTimeout
// rather than ReadHeaderTimeout, and a Shutdown closes it as idle. c.skipped counts them for
// readHead, which refuses a request after more.
func (c *conn) awaitRequest() error {
	br := c.bufs.br
	for c.skipped = 0; c.skipped < maxEmptyLines; c.skipped++ {
		b, err := br.Peek(1)
		if err != nil {
			return err
		}
		n := 1
		switch b[0] {
		case '\n':
		case '\r':
			if b, err = br.Peek(2); err != nil {
				return err
			}
			if b[1] != '\n' {
				return nil
			}
			n = 2
		default:
			return nil
		}
		_, _ = br.Discard(n)
	}
	_, err := br.Peek(1)
	return err
}

// handle runs the handler for req, finishes the answer, and reports whether the connection
// can carry another request.
func (c *conn) handle() (keep bool) {
	ctx := &c.slot.ctx
	c.wmu.Lock()
	c.ctx = ctx
	c.wmu.Unlock()
	c.setRequest(ctx)
	req := &c.req
	w := &c.res
	w.reset(req)
	defer func() {
		if p := recover(); p != nil {
			c.s.panicked(p, req)
			c.slot.body.end()
			c.body.done = true
			c.unwatch()
			ctx.cancel()
			w.abandon()
			keep = false
		}
	}()
	if c.body.n == 0 && !c.body.chunked {
		c.armWatch()
	}
	c.s.Handler.ServeHTTP(w, req)
	c.slot.body.end()
	c.body.done = true
	c.unwatch()
	ctx.cancel()
	keep = w.finish()
	keep = c.body.drain() && keep
	c.wmu.Lock()
	gone := c.gone || c.aborted
	c.ctx = nil
	c.wmu.Unlock()
	return keep && !gone && !req.Close && !c.s.inShutdown.Load()
}

// setRequest makes the connection's request the one read, with ctx. Copied into c.req,
// WithContext's new Request stays on the stack; in a frame of its own, not handle's, which
// stays on the stack under the whole handler: 250 bytes more there pushed a streaming
// request's goroutine stack past 8 KB, and 1,000 open streams took 8 MB more.
//
//go:noinline
func (c *conn) setRequest(ctx *reqCtx) { c.req = *c.base.WithContext(ctx) }

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
	if c.wstate != watchArmed {
		c.wmu.Unlock()
		return
	}
	if buf, _ := c.bufs.br.Peek(c.bufs.br.Buffered()); len(buf) >= len(c.peek) || !emptyLines(buf) {
		// A pipelined request waits: nothing to read, but the request is still a long one
		// whose writes the sweeper must keep looking at. unwatch clears it. Empty lines
		// (after a POST body) are no request: the watch reads past them.
		c.watched.Store(true)
		c.wmu.Unlock()
		return
	}
	// An idle deadline armRead left on the socket would end the watch (as if the client had
	// stayed) IdleTimeout after the request began; unwatch clears what this sets. Cleared
	// under wmu, before the watch is marked as reading: cleared after, it could undo the past
	// deadline unwatch puts on the socket to stop the read, which would then wait for the
	// client while unwatch (and the answer) waits for it.
	_ = c.nc.SetReadDeadline(time.Time{})
	c.watched.Store(true)
	c.wstate = watchReading
	done := make(chan struct{})
	c.wdone = done
	c.wmu.Unlock()
	if c.s.watching != nil {
		c.s.watching()
	}
	// Byte by byte, past empty lines: the first other byte starts the next request. Only this
	// goroutine touches peek until unwatch has seen done closed.
	var err error
	for c.peekTo < len(c.peek) {
		var n int
		n, err = c.nc.Read(c.peek[c.peekTo : c.peekTo+1])
		c.peekTo += n
		if err != nil || n == 1 && !emptyLines(c.peek[c.peekTo-1:c.peekTo]) {
			break
		}
	}

	c.wmu.Lock()
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.gone = true
		if c.ctx != nil {
			c.ctx.cancel()
		}
	}
	close(done)
	c.wmu.Unlock()
}

// emptyLines reports whether b holds nothing but the CRs and LFs of empty lines.
func emptyLines(b []byte) bool {
	for _, x := range b {
		if x != '\r' && x != '\n' {
			return false
		}
	}
	return true
}

// unwatch disarms the watch and, when the watcher is reading, stops its read and waits for it.
func (c *conn) unwatch() {
	c.armedAt.Store(0)
	c.wmu.Lock()
	st, done := c.wstate, c.wdone
	c.wstate, c.wdone = watchIdle, nil
	c.watched.Store(false)
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
	c.have = rdlNone
}

// abort closes the connection for Close, cancelling the request under way. The socket is closed
// before the request's context is cancelled: a handler the cancel wakes returns at once, and its
// answer's end (a stream's last chunk) went out on the socket still open before the close, so a
// stream cut by a stop past its grace could reach the client as if whole
// (TestStopPastGraceEndsStalledStreams failed so once, under load).
func (c *conn) abort() {
	c.wmu.Lock()
	c.aborted = true
	_ = c.nc.Close()
	if c.ctx != nil {
		c.ctx.cancel()
	}
	c.wmu.Unlock()
}

// stall closes the connection for the sweeper, whose write to the client has made no progress
// for SendTimeout: as if the client had left, the request's context is cancelled, and closing
// the socket ends the blocked write with an error.
func (c *conn) stall() {
	c.wmu.Lock()
	c.gone = true
	if c.ctx != nil {
		c.ctx.cancel()
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
	c.linger()
}

// linger ends a connection after its last answer, whose input may not all have been read (a
// request it could not parse, an answer sent before a body too large to drain, bytes the client
// sent after a request on a connection that closes): closing a socket with unread input resets the
// connection, and a reset can destroy the answer before the client reads it, so it half-closes,
// then reads what is left for a moment; serve closes it after.
func (c *conn) linger() {
	if c.lingered {
		return // a panic's 500 (reject) lingered already
	}
	c.lingered = true
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
		_ = c.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, maxDrain))
	}
}

// stackReserve is what reserveStack's frame asks of the goroutine's stack: with the few frames
// below it, enough that the runtime gives a connection's goroutine 16 KB, the depth a request
// reaches (the handler, the attempt, the upstream client and, for a new upstream connection,
// the dialer).
const stackReserve = 10 << 10

// reserveStack grows the goroutine's stack, when it is smaller than a request needs, while the
// stack is shallow. A goroutine starts with 2 KB, and a connection's first request grew it three
// times on its way down (2 → 4 → 8 → 16 KB), each time copying the deeper stack, its frames
// walked one by one to adjust their pointers: about 30 µs of CPU for each new connection
// (perf: 2.6% of the gateway's CPU over 1,000 streams opened at once, almost all of it while
// they opened). The garbage collector halves the stack of a connection idle at the time, so
// the next request on it grew it again the same way. Here it is one copy of a few frames. The
// frame's array is in a branch never taken: the prologue's check of the frame's size against
// the stack is what grows it, and nothing is zeroed.
//
//go:noinline
func reserveStack(touch bool) byte {
	if touch {
		var b [stackReserve]byte
		return keepByte(b[:])
	}
	return 0
}

//go:noinline
func keepByte(b []byte) byte { return b[len(b)-1] }
