// Package h1 owns the gateway's HTTP/1.1 server: accepting connections, parsing requests,
// framing answers (Content-Length or chunked), keep-alive, timeouts, graceful shutdown, and
// noticing a client that left while its request runs. It serves any http.Handler and knows
// nothing of the gateway.
//
// Why not net/http's server: for every request net/http starts a goroutine that reads the
// connection in the background (to notice a client that leaves), then stops it with a read
// deadline and waits for it. On a loaded machine each of those steps wakes a thread, and the
// bench harness measured them at about 50 µs a request on a keep-alive connection (PERFORMANCE.md).
// Here the connection's own goroutine reads the request, runs the handler and writes the answer,
// and the watching goroutine is started only for a request that is still running after
// Server.WatchAfter: a language model's answer takes seconds, the fast path none of that.
//
// What a handler may keep after it returns: any string of its request (method, path, header
// names and values), which never changes; its request's context, which is cancelled then and
// stays cancelled whatever the connection serves next (a child of it or a context.AfterFunc on
// it works as on any context.WithCancel); and the request's Body, which then reads nothing but
// http.ErrBodyReadAfterClose. The *http.Request itself, its URL and its Header map (and the
// slices in it) are the connection's: the next request on the connection clears and overwrites
// them, and the Header map and its slices, once the connection has ended, a request on another
// connection, so a handler must not use them after it returns, nor let a goroutine of its own
// do so (net/http hands each request new ones; this server does not, to allocate nothing per
// request, nor per connection for them). No string, context or Body of a request is handed to
// another request. The ResponseWriter and its Header map are the connection's too, as in
// net/http.
//
// What it does not do: TLS, HTTP/2, Upgrade and Hijack, and sniffing a Content-Type; the gateway
// listens on plain HTTP/1.1 and sets every Content-Type it writes.
package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hayula/gateway/internal/httpwire"
)

// Server serves HTTP/1.1 on listeners. Set its fields before calling Serve and do not change
// them after.
type Server struct {
	// Handler answers every request.
	Handler http.Handler
	// ReadHeaderTimeout bounds reading a request's line and headers once its first byte has
	// arrived; zero means no limit. It also bounds, up to 5 s, the wait for the rest of a
	// body the handler did not read (see body.drain).
	ReadHeaderTimeout time.Duration
	// ReadBodyTimeout bounds reading a request's body: from the end of its head (or, for a
	// client that asked for a 100 Continue, from the 100 the server or the handler sends, or
	// from the handler's first read when the answer's head went out first and no 100 will) to
	// its last byte. A body that takes longer fails the
	// handler's read with an error matching os.ErrDeadlineExceeded, and the connection closes.
	// Zero means no limit.
	ReadBodyTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive connection; zero means
	// no limit.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's line and headers together; zero means 64 KiB. A request
	// over it is answered 431 (414 when the request line alone is over it).
	MaxHeaderBytes int
	// WatchAfter is how long a request may run, once its body has been read, before a goroutine
	// starts watching its connection, so that a client that leaves cancels the request's
	// context; it is also the sweeper's period (see sweep). Zero means 50 ms.
	WatchAfter time.Duration
	// SendTimeout bounds how long a write to the client may make no progress (nginx's
	// send_timeout): a client that stops reading fills the socket's buffers and blocks the
	// write, and after SendTimeout the connection is closed and the request's context cancelled,
	// as if the client had left; the handler's write fails. Progress is seen at the end of each
	// piece of at most 64 KiB written to the socket, so a client must take in that much (once the
	// socket's buffers are full) within SendTimeout; the sweeper checks it every WatchAfter.
	// Zero means no limit.
	SendTimeout time.Duration
	// Reject renders the body of the answer to a request that could not be parsed; nil
	// answers in text/plain. code is a short machine-readable name ("header_too_large").
	Reject func(status int, code, msg string) (contentType string, body []byte)
	// Log receives recovered panics and accept errors; nil discards.
	Log *slog.Logger
	// Conns caps the connections open at once and counts them (see ConnLimit); nil means no
	// cap.
	Conns *ConnLimit

	watching    func() // a test's hook: the watcher is about to read
	waitingRoom func() // a test's hook: an accept loop holds a connection and waits for room
	// lookedForIdle is a test's hook: an accept loop at the cap has looked for an idle
	// connection to close (s.mu held).
	lookedForIdle func()
	// headRead is a test's hook: the connection has read a head (or failed to), and has not yet
	// moved on from stateHead.
	headRead func(*conn)

	inShutdown atomic.Bool
	epoch      time.Time // for now: a monotonic clock in an int64
	sweepOnce  sync.Once
	sweepKick  chan struct{}
	sweepStop  chan struct{}
	stopOnce   sync.Once
	sweeping   atomic.Bool
	date       dateCache
	bufs       sync.Pool        // *connBufs
	scratch    httpwire.Scratch // where a whole answer is put together (response.WriteWhole)

	mu    sync.Mutex
	lns   map[net.Listener]struct{}
	conns map[*conn]struct{}
	done  chan struct{} // closed by Shutdown and Close; made lazily under mu
	// room is closed when a connection ends, or goes idle, while an accept loop waits for room
	// under Conns' cap (admit); nil when none waits. roomWanted is set while it is not nil, so
	// that a connection going idle takes mu only then.
	room       chan struct{}
	roomWanted atomic.Bool
	making     int // connections closed to make room that have not ended yet
}

const (
	defaultMaxHeader  = 64 << 10
	defaultWatchAfter = 50 * time.Millisecond
	// maxDrain is how much of a request body the handler did not read is read and dropped to
	// keep the connection; a larger rest closes it.
	maxDrain = 256 << 10
	// maxDrainWait bounds the time that drain waits for that rest (ReadHeaderTimeout when it is
	// shorter).
	maxDrainWait = 5 * time.Second
)

// Serve accepts connections on ln and serves each on its own goroutine until Shutdown or Close,
// then returns http.ErrServerClosed. Any other error is the listener's. ln is closed when Serve
// returns, also when Shutdown or Close came first.
func (s *Server) Serve(ln net.Listener) error {
	s.sweepOnce.Do(s.initSweep)
	if !s.track(ln) {
		// Shutdown has closed the listeners it knew: this one, handed over after it began (a
		// gateway told to stop as it starts), would otherwise queue connections nobody accepts.
		_ = ln.Close()
		return http.ErrServerClosed
	}
	defer s.untrack(ln)
	var delay time.Duration
	failed, warned := 0, false // accepts failed in a row; whether that run was logged
	var warnedAt int64         // when (s.now) a run of failed accepts was last logged; 0: never
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.inShutdown.Load() {
				return http.ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors and the like pass; back off as net/http does. Such a
			// run repeats at every pause until a descriptor is free (the waiting connection is
			// still in the kernel's queue), so it is logged once, not at every accept, and once
			// a minute at most for runs that come and go (a process at its fd limit, which
			// gets one as a connection closes and is out again at the next).
			s.Conns.count(countAcceptErr)
			failed++
			if outOfFiles(err) {
				// A descriptor an idle connection holds is better spent on a client that
				// is sending a request (nginx reuses its keep-alive connections the same way).
				s.mu.Lock()
				s.closeOldestIdle()
				s.mu.Unlock()
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			if now := s.now(); failed == 1 && (warnedAt == 0 || now-warnedAt >= int64(time.Minute)) {
				warned, warnedAt = true, max(now, 1)
				s.logger().Warn("accept failed; pausing and retrying until it succeeds (logged once while it lasts)",
					"error", err, "out_of_files", outOfFiles(err))
			}
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.doneChan():
				t.Stop()
				return http.ErrServerClosed
			}
			continue
		}
		if failed > 0 {
			if warned {
				s.logger().Info("accepting connections again", "failed_accepts", failed)
			}
			failed, warned = 0, false
		}
		delay = 0
		c := s.newConn(nc)
		if !s.admit(c) {
			_ = nc.Close()
			return http.ErrServerClosed
		}
		go c.serve()
	}
}

// Shutdown stops accepting, closes idle connections, and waits until every request under way
// has been answered or ctx ends (then it returns ctx's error and leaves the rest to Close). A
// request whose handler is waiting for the rest of its body, and has begun no answer, is not
// under way: its connection is closed as an idle one is, and the handler's read fails. Nor is
// a head whose rest the connection has waited for longer than headGrace (stateHead): it is
// closed as soon as Shutdown sees it there, while Shutdown waits for the others, unless the rest
// has reached it by then (keepHead): that request is under way, and answered.
func (s *Server) Shutdown(ctx context.Context) error {
	s.inShutdown.Store(true)
	s.closeListeners()
	// closeIdle reads the clock Serve starts (s.now, from initSweep): after this, a Serve has
	// started it or never will, and has no connection to read it for (TestShutdownAsServeStarts).
	s.sweepOnce.Do(func() {})
	wait := time.Millisecond
	for {
		if s.closeIdle() {
			s.stopSweeper()
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// Close stops accepting and closes every connection at once, cancelling the requests on them.
func (s *Server) Close() error {
	s.inShutdown.Store(true)
	s.closeListeners()
	s.stopSweeper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.abort()
	}
	return nil
}

// stopSweeper ends the sweeper once no request can need it: after Close, or a Shutdown that
// saw every connection end. Serve has started it, or it never will (inShutdown is set).
func (s *Server) stopSweeper() {
	s.sweepOnce.Do(func() {}) // a Serve that has not started it never will now
	s.stopOnce.Do(func() {
		if s.sweepStop != nil {
			close(s.sweepStop)
		}
	})
}

func (s *Server) logger() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

func (s *Server) doneChan() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
	}
	return s.done
}

func (s *Server) track(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inShutdown.Load() {
		return false
	}
	if s.lns == nil {
		s.lns = map[net.Listener]struct{}{}
	}
	s.lns[ln] = struct{}{}
	return true
}

func (s *Server) untrack(ln net.Listener) {
	s.mu.Lock()
	delete(s.lns, ln)
	s.mu.Unlock()
}

func (s *Server) untrackConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.Conns.setOpen(len(s.conns))
	if c.madeRoom {
		s.making--
	}
	s.roomMade()
	s.mu.Unlock()
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
	}
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	for ln := range s.lns {
		_ = ln.Close()
		delete(s.lns, ln)
	}
}

// closeIdle closes the connections waiting for a request, and those whose handler waits for the
// rest of a body before it has begun an answer (stateBody), ends the drain of those whose answer
// is out (stateDrain), stops those that have waited for the rest of a head past headGrace
// (stateHead), and reports whether none is left. Shutdown calls it until then, so a head that
// stalls once Shutdown has begun is stopped once its grace has passed.
func (s *Server) closeIdle() bool {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.CompareAndSwap(stateIdle, stateClosing) || c.state.CompareAndSwap(stateBody, stateClosing) {
			_ = c.nc.Close()
		} else if c.state.CompareAndSwap(stateDrain, stateClosing) {
			// Its answer is out: the drain's read ends now, and the connection with the
			// lingering close that keeps the answer from being reset (conn.linger).
			_ = c.nc.SetReadDeadline(aLongTimeAgo)
		} else if at := c.headAt.Load(); at != 0 && headLeft(at, now) <= 0 &&
			c.state.CompareAndSwap(stateHead, stateClosing) {
			// No request has begun on it: a client that sent part of a head and then nothing held
			// a stop for the whole ReadHeaderTimeout (TestShutdownClosesStalledHead). One still in
			// its grace is let finish its head, and its request is answered.
			c.stopHead()
		}
	}
	return len(s.conns) == 0
}

// connBufs are a connection's buffers, pooled across connections.
type connBufs struct {
	br      *bufio.Reader
	bw      *bufio.Writer
	heads   httpwire.Arena // the arena of request heads (see readHead)
	ends    []int32        // where each line of the last head ends
	pending []byte         // an answer's body before its header has gone out
	fields  []byte         // header lines the handler prebuilt (see response.AddFields)
	rh      http.Header
	slots   []reqSlot   // the slab's slots not used yet
	vec     [2][]byte   // a whole answer's head and body (see response.WriteWhole)
	out     net.Buffers // what of vec is left to write
	kept    keptHead    // the request head's map and arrays, reused by the next head read
}

// keptHead is what readRequest builds a request's Header in and remembers of its head. It is
// kept with the connection's buffers, which go back to the server's pool when the connection
// ends, so that a new connection starts with the arrays and the map a past one grew, and with
// the canonical forms of the names its client sent (clients send the same names): each of
// these was allocated again, and each name canonicalised again, on every new connection.
// The rule for a handler is the one net/http's Header has here already (see the package's
// doc): the map and its slices are the connection's, overwritten by the next request.
type keptHead struct {
	hdr   http.Header // the request's header map
	vals  []string    // the array of its values
	keys  []string    // the name of each of vals, for a request that repeats a name
	lines []fieldLine // the last head's field names, line by line
}

// fieldLine is a field name as a head's line sent it, its canonical form and its nameBit.
type fieldLine struct {
	name, key string
	bit       uint64
}

func (s *Server) getBufs(c *conn) *connBufs {
	b, _ := s.bufs.Get().(*connBufs)
	if b == nil {
		b = &connBufs{br: bufio.NewReaderSize(nil, 4096), bw: bufio.NewWriterSize(nil, 4096),
			pending: make([]byte, 0, 4096), rh: make(http.Header, 8)}
	}
	b.br.Reset(connReader{c})
	b.bw.Reset(connWriter{c})
	return b
}

func (s *Server) putBufs(b *connBufs) {
	b.br.Reset(nil)
	b.bw.Reset(nil)
	b.heads.Trim()
	clear(b.rh)
	s.bufs.Put(b)
}

// panicked logs a handler's panic the way net/http does: http.ErrAbortHandler silently.
func (s *Server) panicked(p any, r *http.Request) {
	if p == http.ErrAbortHandler {
		return
	}
	s.logger().Error("h1: panic serving request", "method", r.Method, "path", r.URL.Path,
		"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
}

// dateCache holds the Date header's value, formatted once a second.
type dateCache struct {
	v atomic.Pointer[dateValue]
}

type dateValue struct {
	sec int64
	b   []byte // "Date: ...\r\n"
}

func (d *dateCache) get(now time.Time) []byte {
	sec := now.Unix()
	if v := d.v.Load(); v != nil && v.sec == sec {
		return v.b
	}
	b := make([]byte, 0, 40)
	b = append(b, "Date: "...)
	b = now.UTC().AppendFormat(b, http.TimeFormat)
	b = append(b, "\r\n"...)
	d.v.Store(&dateValue{sec: sec, b: b})
	return b
}

func (s *Server) watchAfter() time.Duration {
	if s.WatchAfter <= 0 {
		return defaultWatchAfter
	}
	return max(s.WatchAfter, 100*time.Microsecond)
}

func (s *Server) drainWait() time.Duration {
	if s.ReadHeaderTimeout > 0 {
		return min(s.ReadHeaderTimeout, maxDrainWait)
	}
	return maxDrainWait
}

// now is the time since the server started, from the monotonic clock.
func (s *Server) now() int64 { return int64(time.Since(s.epoch)) }

func (s *Server) initSweep() {
	s.epoch = time.Now()
	s.sweepKick = make(chan struct{}, 1)
	s.sweepStop = make(chan struct{})
	go s.sweep(s.sweepStop)
}

// wakeSweeper starts the sweeper's rounds if it is parked.
func (s *Server) wakeSweeper() {
	if s.sweeping.Load() {
		return
	}
	select {
	case s.sweepKick <- struct{}{}:
	default:
	}
}

// sweep starts a watcher for each request that has run longer than WatchAfter, and closes a
// connection whose write has made no progress for SendTimeout. It looks every WatchAfter while
// any request is armed (or, with a SendTimeout, watched, or writing), and parks after a second
// with none; armWatch wakes it. One goroutine for the server replaces a timer per request (see
// armWatch).
func (s *Server) sweep(done chan struct{}) {
	every := s.watchAfter()
	quietRounds := int(time.Second/every) + 1
	for {
		s.sweeping.Store(false)
		// armWatch stores armedAt before it loads sweeping, so a request armed while this
		// goroutine was deciding to park is either seen here or wakes it.
		if s.startWatchers() == 0 {
			select {
			case <-s.sweepKick:
			case <-done:
				return
			}
		}
		s.sweeping.Store(true)
		t := time.NewTicker(every)
		for quiet := 0; quiet < quietRounds; {
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C:
			}
			if s.startWatchers() == 0 {
				quiet++
			} else {
				quiet = 0
			}
		}
		t.Stop()
	}
}

// startWatchers starts a watcher for every connection whose request has been armed for
// WatchAfter, closes every connection whose write has been under way without progress for
// SendTimeout, and returns how many requests need the sweeper to keep looking: armed and not
// yet watched, and with a SendTimeout, watched (a stream may pause between writes for longer
// than the sweeper's quiet second, then stall) or writing.
func (s *Server) startWatchers() int {
	now, after, send := s.now(), int64(s.watchAfter()), int64(s.SendTimeout)
	busy := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if send > 0 {
			// The same odd count as at the last change is the same write, under way since
			// then: a write that finished and another that began moved it by two.
			seq := c.wseq.Load()
			switch {
			case seq != c.sentSeq:
				c.sentSeq, c.sentAt = seq, now
			case seq&1 == 1 && now-c.sentAt >= send:
				c.stall()
			}
			if seq&1 == 1 || c.watched.Load() {
				busy++
			}
		}
		at := c.armedAt.Load()
		if at == 0 {
			continue
		}
		if now-at < after {
			busy++
			continue
		}
		if c.armedAt.CompareAndSwap(at, 0) {
			if send > 0 {
				busy++ // its watcher will set watched
			}
			go c.watch()
		}
	}
	return busy
}
