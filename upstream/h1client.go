package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hayula/gateway/internal/httpwire"
)

// h1Transport is a synchronous HTTP/1.1 client for plain http:// targets: the request is written
// and the answer read on the caller's own goroutine, over pooled keep-alive connections.
// net/http's Transport runs a reader and a writer goroutine per connection and hands every
// request and answer between them and the caller; on a loaded machine each hand-off is a
// thread wake-up of tens of µs, which was most of what an upstream attempt cost (see
// PERFORMANCE.md). Anything else (https://, another scheme) goes to the net/http Transport it
// wraps. It serves one target: its idle pool is keyed by address only so that a managed
// process that moved to another port does not get its old connections.
//
// The caller's context, the response-header timeout and the body's idle timeout are enforced by
// a sweeper goroutine (h1sweep.go): a cancellation is noticed at most one round late, and a
// timeout ends between its limit and two rounds after it; a round is one 10 ms tick while up to
// 64 exchanges are in flight, ten ticks beyond that.
//
// A response body must be read and closed by one goroutine at a time, as the adapters do.
type h1Transport struct {
	fallback *http.Transport
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	target   string        // the target's name, for the errors the body's reads return
	timeout  time.Duration // response headers; 0 means none
	// bodyIdle bounds each wait for the next bytes of an answer's body (the target's
	// idle_timeout); 0 means none.
	bodyIdle time.Duration
	// idleTimeout is how long a pooled connection may wait for its next exchange.
	idleTimeout time.Duration
	maxIdle     int
	// peekAfter: a pooled connection idle this long is peeked at before reuse (see get).
	peekAfter time.Duration
	// closesSilently counts down the peeks left before reuses within peekAfter are no longer
	// peeked; above 0, every reuse is. It is set to silentRun when a reused connection ended
	// without a byte of answer to a request that went out whole, which is not sent again (see
	// exchange): most likely its server closes connections after its answers without saying
	// Connection: close, and peeking every reuse makes that cost one request, not one in every
	// reuse before peekAfter (TestH1SilentCloserCostsOneRequest). Set again (a full run) when
	// such a peek finds its connection closed; each peek that finds it open counts one down, so
	// a single close that crossed a request (a keep-alive timeout racing the reuse) stops
	// costing a system call on every reuse after silentRun of them
	// (TestH1SilentCloseDecays), while a server that keeps closing never gets there
	// (TestH1SilentCloserStaysPeeked).
	closesSilently atomic.Int32
	// silentRun is closesSilently's run: silentRunDefault, a test sets less.
	silentRun int32
	// epoch makes time.Since(epoch) a read of the monotonic clock alone (idleAt, in put and
	// get: the only clock reads of an exchange); time.Now reads the wall clock too.
	epoch time.Time
	// ticker starts the sweeper's clock and returns its stop; nil means a time.Ticker every
	// sweepEvery. Tests drive the sweeper with ticks of their own.
	ticker func() (<-chan time.Time, func())
	// tickTime is the time the sweeper takes a tick at; nil means the clock's reading when it
	// takes it. A time.Ticker's value is when the tick was made, and one made while the process
	// was starved of CPU waits in its channel: read as now, it would stamp an exchange that
	// began since with that older time, and its limit would run out early. Tests that send ticks
	// of their own take their value.
	tickTime func(tick time.Time) time.Time
	// now is the time a new connection's connect starts at, in the sweeper's time (tickTime's),
	// from which its exchange's timeout counts (see do); nil means time.Now. Tests that send
	// ticks of their own give the time of their first.
	now func() time.Time

	dests destCache // see post

	mu    sync.Mutex
	idle  map[string]*idleList // by address; an empty list is kept until reapLocked
	nIdle int
	// reapedAt is when (since epoch) reapLocked last closed the connections idle past
	// idleTimeout under every address.
	reapedAt time.Duration
	// closeIdle: CloseIdleConnections was called and no exchange has begun since, so that an
	// exchange in flight then closes its connection as it ends rather than pooling it where
	// nothing would take or expire it (the server owning the transport is closing:
	// TestNoConnectionPooledAfterClose). net/http's Transport does the same.
	closeIdle bool
	// The sweeper's: the connections whose exchange is in flight (each knows its slot), where
	// its next tick's visits begin (see sweepLocked), whether a sweeper goroutine runs, and what
	// CloseIdleConnections closes to end it.
	live     []*h1Conn
	cursor   int
	sweeping bool
	quit     chan struct{}

	// answers are h1Answers that Response.Release gave back, each with its body's buffer: a
	// whole answer's memory was two allocations on every request (about 1 KB), which the
	// garbage collector then paid for.
	answers sync.Pool
	// bufs are connBufs of connections closed, for the next new ones (see retire).
	bufs sync.Pool
	// bodies are buffers for the request bodies the translating adapters write (lentBody).
	bodies sync.Pool
	// scratch is where a POST that goes out in one write is put together (see outgoing.send).
	scratch httpwire.Scratch
}

var _ http.RoundTripper = (*h1Transport)(nil)

func newH1Transport(fallback *http.Transport, target string, timeout, bodyIdle time.Duration) *h1Transport {
	return &h1Transport{fallback: fallback, dial: fallback.DialContext, target: target, timeout: timeout,
		bodyIdle: bodyIdle, idleTimeout: fallback.IdleConnTimeout, maxIdle: maxIdlePerTarget, epoch: time.Now(), idle: map[string]*idleList{},
		peekAfter: peekAfter, silentRun: silentRunDefault}
}

// h1Conn is one upstream connection with its buffers.
type h1Conn struct {
	net.Conn
	addr  string
	br    *bufio.Reader
	bw    *bufio.Writer
	heads *heads // the arena the answers' heads are copied into
	bufs  *connBufs
	nread int64 // bytes read over the connection's life: an answer that never started reads none
	// reads counts entries into and returns from Conn.Read, so it is odd while a read waits on
	// the upstream. The sweeper compares it between ticks to tell a body that sends nothing
	// (odd and unchanged) from one that progresses or a caller busy elsewhere (see sweepLocked).
	reads  atomic.Uint64
	reused bool
	list   *idleList // the pool's list for addr it was last in, under h1Transport.mu (see release)
	// early is set by the sweeper when a refusal came while the request was being written, and
	// the write was stopped for it (see answeredEarly). The connection is not pooled after
	// (release): the write deadline the sweeper set may outlast a write that ended meanwhile.
	early atomic.Bool
	vec   [1 + len(payload{})][]byte // a POST's head and body, for writev (see outgoing.send)
	out   net.Buffers                // what of vec is left to write
	// raw is the socket's RawConn and writeWait its method writeThenWait, made once for the
	// connection's whole requests (see writeWhole), with pending, what is left of the one being
	// written. headSet is whether writeThenWait moved the exchange to its head's phase, which
	// exchange then does not.
	raw       syscall.RawConn
	writeWait func(fd uintptr) bool
	pending   []byte
	headSet   bool
	// hdr is the header map the adapters' answers on this connection fill in turn (see post):
	// an answer's map is free again once its body has ended.
	hdr    http.Header
	idleAt time.Duration // since h1Transport.epoch, when it went back to the pool

	// The exchange in flight, while it is live (see h1sweep.go): its caller's context, its place
	// in h1Transport.live (1 + index; 0 when not live) and its phase. seen, seenAt and seenReads
	// are the sweeper's own: the timed phase it last saw, the tick it first saw it on (in the
	// body phase: the tick that first saw the read now waiting), and reads at its last tick.
	ctx       context.Context
	slot      int
	phase     atomic.Int32
	seen      int32
	seenAt    time.Time
	seenReads uint64
	// headAt is the tick that first saw a 2xx answer's head come while the request was being
	// written (answeredEarly); zero when none came. idleCut is set when the sweeper ended that
	// write because the body's idle timeout ran out from headAt. Both are the sweeper's, read by
	// the exchange once it is no longer live.
	headAt  time.Time
	idleCut bool
}

func (c *h1Conn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	n, err := c.Conn.Read(p)
	c.reads.Add(1)
	c.nread += int64(n)
	return n, err
}

// RoundTrip sends req and reads the response headers. A connection taken from the pool that
// turns out to be closed by the server is replaced by a new one once, but only when the request
// cannot have been run by the server: writing it failed, so the server never had all of it. An
// inference request is not idempotent: once it went out whole, a server that closes the
// connection without a byte of answer may have read it (and be running it), as may one that
// answers with bytes that are no status line, so neither is sent again (as net/http does not
// send again a POST it wrote; TestH1WrittenRequestNeverSentTwice). Only a GET, HEAD, OPTIONS or
// TRACE (a health check) is also sent again after such an answer, as net/http does.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return t.fallback.RoundTrip(req)
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	out := outgoing{req: req}
	resp, err := t.do(req.Context(), addr, &out)
	if err != nil {
		closeReqBody(out.req)
		return nil, err
	}
	resp.Request = req
	return resp, nil
}

// outgoing is a request as the synchronous client writes it: an *http.Request (RoundTrip), or
// when req is nil an adapter's POST (post). A struct rather than an interface so that it can
// live on the caller's stack.
type outgoing struct {
	req  *http.Request
	post postRequest
}

func (o *outgoing) method() string {
	if o.req == nil {
		return http.MethodPost
	}
	return o.req.Method
}

// send writes the request on c. A POST goes out on a TCP connection in one system call, its
// head built in t's scratch buffer (the connection's write buffer when another exchange has
// it): with its body after it when the whole fits there (most chat requests: a kilobyte's copy
// costs less than writev's vector; with the server's whole answers written so too, 440 fewer
// instructions a chat request, counted), else in one writev(2) with the body where the caller
// keeps it, not copied. Anything else is written through the write buffer.
func (o *outgoing) send(t *h1Transport, c *h1Conn) error {
	if tc, ok := c.Conn.(*net.TCPConn); ok && o.req == nil && c.bw.Buffered() == 0 {
		sp := t.scratch.Take()
		buf := c.bw.AvailableBuffer()
		if sp != nil {
			buf = sp[:0]
		}
		p := &o.post
		head := p.appendFields(append(buf, p.head...))
		var err error
		if len(head)+p.body.len() <= cap(head) {
			for _, b := range p.body {
				head = append(head, b...)
			}
			err = c.writeWhole(tc, head)
		} else {
			c.vec[0] = head
			copy(c.vec[1:], p.body[:])
			c.out = c.vec[:]
			_, err = c.out.WriteTo(tc)
			clear(c.vec[:]) // the caller's body is not kept
		}
		t.scratch.Give(sp)
		return err
	}
	err := o.write(c.bw)
	if err == nil {
		err = c.bw.Flush()
	}
	return err
}

func (o *outgoing) write(bw *bufio.Writer) error {
	if o.req == nil {
		return o.post.write(bw)
	}
	return writeRequest(bw, o.req)
}

// replayable reports whether the request may be sent again once it went out whole: only a
// method that is idempotent and has no effect (RFC 9110 §9.2.1), as net/http's isReplayable;
// never an adapter's POST.
func (o *outgoing) replayable() bool {
	if o.req == nil {
		return false
	}
	switch o.req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, "":
		return true
	}
	return false
}

// rewind readies the request to be written again, on a new connection; false when its body
// cannot be read again.
func (o *outgoing) rewind() bool {
	r := o.req
	if r == nil || r.Body == nil || r.Body == http.NoBody {
		return true
	}
	if r.GetBody == nil {
		return false
	}
	body, err := r.GetBody()
	if err != nil {
		return false
	}
	r2 := *r
	r2.Body = body
	o.req = &r2
	return true
}

// do sends out over a pooled or new connection to addr and reads the answer's head, replacing
// a stale pooled connection once (see RoundTrip).
func (t *h1Transport) do(ctx context.Context, addr string, out *outgoing) (*http.Response, error) {
	if err := ctx.Err(); err != nil {
		// The sweeper would interrupt the exchange only after the request had gone out.
		return nil, err
	}
	c := t.get(ctx, addr)
	for {
		if c == nil {
			// A new connection's timeout counts from its connect's start: the connect, the
			// request's writing and the wait for the answer's head share it, as on an https://
			// target (headTransport), rather than the head having the whole of it again after a
			// slow connect (TestSlowConnectThenSlowAnswerTimesOut). A reused connection's counts
			// from the sweeper's first visit, with no clock read.
			var start time.Time
			if t.timeout > 0 {
				start = t.clock()
			}
			// The connect itself is bounded by the target's timeout (dialWithin: a connect that
			// does not complete is a timeout, as on an https:// target, not a connection error
			// after the dialer's own bound, TestConnectWithinTimeout).
			nc, err := t.dial(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			c = &h1Conn{Conn: nc, addr: addr}
			t.lend(c)
			t.mu.Lock()
			t.watchLocked(ctx, c, start)
			t.mu.Unlock()
		}
		resp, stale, err := t.exchange(ctx, c, out)
		if err == nil {
			return resp, nil
		}
		t.retire(c)
		if !stale || ctx.Err() != nil || !out.rewind() {
			return nil, err
		}
		c = nil
	}
}

// clock is the time now in the sweeper's time (see h1Transport.now).
func (t *h1Transport) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// errConnectTimeout is a connect that the target's timeout ended.
const errConnectTimeout = targetTimeout("no connection within the target's timeout")

func closeReqBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// exchange writes req on c, which is live, and reads the response headers. stale reports a
// failure on a pooled connection that the request cannot have reached. On failure c is no
// longer live; on success its body unwatches it when it ends.
func (t *h1Transport) exchange(ctx context.Context, c *h1Conn, out *outgoing) (*http.Response, bool, error) {
	before := c.nread
	// werr is a write the server cut short by ending the connection: it may have answered
	// before it read the whole body (a 413 for a body it will not take, a 401 from a proxy that
	// checks the key first), and what it sent is still there to read, as net/http's reader
	// goroutine reads it (TestH1EarlyAnswerToALargeBody).
	// A write the sweeper stopped because an answer had come (early) is the same case, with a
	// server that keeps the connection open and reads nothing more (TestEarlyAnswerStopsTheWrite).
	c.headSet = false
	werr := out.send(t, c)
	early := c.early.Load()
	if werr != nil && (!early && !peerEnded(werr) || !c.phase.CompareAndSwap(phaseWrite, phaseHead)) {
		switch t.unwatch(c) {
		case phaseCanceled:
			return nil, false, ctx.Err()
		case phaseTimedOut:
			if c.idleCut {
				return nil, false, newIdleTimeoutError(t.target, t.bodyIdle)
			}
			return nil, false, werr // the write's deadline error: a timeout, not a stale connection
		}
		return nil, c.reused, werr
	}
	if early && werr != nil {
		werr = errAnsweredEarly // not the write deadline's error, which would read as a timeout
	}
	if werr == nil && !c.headSet && !c.phase.CompareAndSwap(phaseWrite, phaseHead) {
		return nil, false, t.interrupted(ctx, c)
	}
	a, _ := t.answers.Get().(*h1Answer)
	if a == nil {
		a = new(h1Answer)
	}
	shared := out.req == nil
	if shared {
		a.header = c.hdr
	}
	// readResponse reads past informational answers (a bounded number of them) itself.
	if err := readResponse(c.br, out.method(), c.heads, &a.answer); err != nil {
		ph := t.unwatch(c)
		switch {
		case ph == phaseCanceled:
			return nil, false, ctx.Err()
		case ph == phaseTimedOut:
			return nil, false, err // the read's deadline error: a timeout
		}
		// An EOF before the status line is io.ErrUnexpectedEOF, as in http.ReadResponse. On a
		// reused connection, one without a byte of answer is most likely a server that closed it
		// idle just as the request went out, and a status line that is none most likely what the
		// previous answer left there (a body's tail past its Content-Length, stray line ends):
		// the connection is stale. But the request went out whole, and the server may have read
		// it: only a request that can be run twice is sent again (see RoundTrip).
		bad, isBad := errors.AsType[*badAnswerError](err)
		if werr != nil && !isBad {
			// No answer came before the write failed: the server never had all of the
			// request, unless it answered part of one. One that came and is no HTTP answer
			// (the early peek stops the write for bytes that are no status line) is that
			// answer's failure, as after a whole request (TestEarlyGarbageIsAProtocolError).
			return nil, c.reused && c.nread == before, werr
		}
		closed := c.reused && c.nread == before && errors.Is(err, io.ErrUnexpectedEOF)
		if closed && t.closesSilently.Load() != t.silentRun {
			t.closesSilently.Store(t.silentRun)
		}
		stale := c.reused && out.replayable() && (closed || isBad && bad.beforeStatus())
		return nil, stale, err
	}
	if werr != nil || early {
		// The rest of the request never went, or the sweeper put a write deadline on the
		// connection as the write ended: it carries nothing more.
		a.resp.Close = true
	}
	if !c.phase.CompareAndSwap(phaseHead, phaseBody) {
		// The head came as the sweeper gave up on it.
		return nil, false, t.interrupted(ctx, c)
	}
	resp, b := &a.resp, &a.h1
	*b = h1Body{t: t, c: c, body: resp.Body, ctx: ctx, keep: !resp.Close, out: &a.out, ans: a}
	if shared {
		c.hdr = resp.Header
	} else if resp.Body == http.NoBody {
		// Nothing to read: the connection can go back to the pool at once. With a shared
		// header map it waits for the body's Close instead, so that the next answer does
		// not refill the map while the caller reads this one's.
		b.finish(true)
	}
	resp.Body = b
	return resp, false, nil
}

// errAnsweredEarly is the write the sweeper stopped because the server had refused the request,
// or ended the connection, before it had read all of it (see answeredEarly).
var errAnsweredEarly = errors.New("upstream: the server answered, or ended the connection, before it read the whole request")

// h1Answer is an exchange's answer with its body as the caller reads it and the adapter's
// Response built from it, in one allocation. Whoever holds the body (a stream until its Close,
// which comes after the connection went back to the pool) or the Response may hold it for as
// long as they like; it is reused only once its Response's Release gave it back, which the
// adapter allows only for a whole answer read to its end (see ownerOf).
type h1Answer struct {
	answer
	h1  h1Body
	out streamResponse
	// buf is the buffer a whole body is read into (bodyBuf), kept across reuses.
	buf []byte
	// xlate is the buffer a whole answer translated from the body is written into (xlateBuf),
	// kept across reuses, and usage its token counts, which out's Usage points to.
	xlate []byte
	usage Usage
}

// maxKeptBody bounds the body buffer an answer keeps for its next use.
const maxKeptBody = 64 << 10

// release gives a back to its transport's pool, its body's buffer with it. Everything else it
// held is dropped, the Response in it included: a second Release of that Response finds no
// owner.
func (a *h1Answer) release() {
	t, buf, xlate := a.h1.t, a.buf, a.xlate
	*a = h1Answer{buf: buf[:0], xlate: xlate[:0]}
	if t != nil {
		t.answers.Put(a)
	}
}

// bodyBuf is n bytes to read a whole answer's body of length n into: the buffer the synchronous
// client's answer keeps when it is large enough, else a new one, which the answer then keeps.
func bodyBuf(resp *http.Response, n int64) []byte {
	b, ok := resp.Body.(*h1Body)
	if !ok || b.ans == nil {
		return make([]byte, n)
	}
	if a := b.ans; int64(cap(a.buf)) >= n {
		return a.buf[:n]
	}
	buf := make([]byte, n)
	if n <= maxKeptBody {
		b.ans.buf = buf
	}
	return buf
}

// xlateBuf is an empty buffer of capacity n for a whole answer an adapter translates from resp's
// body (the ollama and saif adapters' chat.completion): the one the synchronous client's answer
// keeps for it when large enough, else a new one, which the answer then keeps. It is the
// answer's as long as its Response is (translatedResponse).
func xlateBuf(resp *http.Response, n int) []byte {
	b, ok := resp.Body.(*h1Body)
	if !ok || b.ans == nil {
		return make([]byte, 0, n)
	}
	a := b.ans
	if cap(a.xlate) < n {
		buf := make([]byte, 0, n)
		if n > maxKeptBody {
			return buf
		}
		a.xlate = buf
	}
	return a.xlate[:0]
}

// translatedResponse is the Response of a whole answer an adapter translated from resp's body
// into body (best in xlateBuf's buffer), with its usage counts: in the synchronous client's
// answer's allocation, given back with its buffers by Release once it is written, which allows
// the next request through the connection's answer to take no new memory for its own; or new,
// for an answer of net/http's.
func translatedResponse(resp *http.Response, body []byte, usage Usage, upstreamID string) *Response {
	r := &responseFor(resp).Response
	r.Body, r.UpstreamID = body, upstreamID
	if a := ownerOf(resp, r); a != nil {
		a.usage, r.Usage, r.owner = usage, &a.usage, a
		if c := cap(body); c > cap(a.xlate) && c <= maxKeptBody {
			a.xlate = body[:0] // appended past xlateBuf's: the larger one is kept
		}
		return r
	}
	r.Usage = new(Usage) // not &usage, which would move every call's to the heap
	*r.Usage = usage
	return r
}

// ownerOf is the memory r lives in when the synchronous client's answer resp holds r and its
// body, to be given back by r.Release; nil otherwise.
func ownerOf(resp *http.Response, r *Response) *h1Answer {
	if b, ok := resp.Body.(*h1Body); ok && b.ans != nil && r == &b.ans.out.Response {
		return b.ans
	}
	return nil
}

// responseFor is where the adapter's Response for resp goes: in the synchronous client's
// answer's allocation, or a new one for an answer of net/http's.
func responseFor(resp *http.Response) *streamResponse {
	if b, ok := resp.Body.(*h1Body); ok && b.out != nil {
		out := b.out
		b.out = nil // a second Response for the same answer gets one of its own
		return out
	}
	return new(streamResponse)
}

// interrupted unwatches c, which the sweeper interrupted, and returns what the caller gets for
// it: its context's error, or the error of a read that ran out of time.
func (t *h1Transport) interrupted(ctx context.Context, c *h1Conn) error {
	if t.unwatch(c) == phaseCanceled {
		return ctx.Err()
	}
	if c.idleCut {
		return newIdleTimeoutError(t.target, t.bodyIdle)
	}
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
}

// h1Body is a response body on a pooled connection. The connection goes back to the pool when
// the body was read to its clean end and nothing follows it; closed earlier, or broken, the
// connection is closed, since what remains of the answer would otherwise be read as the next
// one's.
type h1Body struct {
	t    *h1Transport
	c    *h1Conn
	body io.ReadCloser // readResponse's body over c.br
	ctx  context.Context
	out  *streamResponse // the room for the adapter's Response (see responseFor)
	ans  *h1Answer       // the answer this body is part of
	keep bool            // the server did not say Connection: close
	done bool            // the connection was released or closed
	eof  bool
	// draining is set by drainTail: a timeout from then on is drainWait's, not the idle
	// timeout's.
	draining bool
}

var _ tailDrainer = (*h1Body)(nil)

func (b *h1Body) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.done {
		return 0, errStreamClosed
	}
	n, err := b.body.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		b.eof = true
		b.finish(true)
	default:
		switch b.finish(false) {
		case phaseCanceled:
			err = b.ctx.Err()
		case phaseTimedOut:
			if !b.draining {
				err = newIdleTimeoutError(b.t.target, b.t.bodyIdle)
			}
		}
	}
	return n, err
}

// finish releases the connection to the pool when the answer ended cleanly and the connection
// can carry another, and closes it otherwise. It returns the exchange's last phase.
func (b *h1Body) finish(clean bool) int32 {
	if b.done {
		return phaseBody
	}
	b.done = true
	ph, pooled := b.t.release(b.c, clean && b.keep && b.c.br.Buffered() == 0)
	if !pooled {
		b.t.retire(b.c)
	}
	return ph
}

// Close closes the connection unless the body was read to its end. The underlying body's own
// Close is not called: it would read the rest of the answer, however long.
func (b *h1Body) Close() error {
	// An answer without a body has nothing left to read: it ends cleanly.
	b.finish(b.body == http.NoBody)
	return nil
}

// drainTail reads what is left of the body, within maxDrain bytes and drainWait (which the
// sweeper enforces), so that the connection can be reused; the caller closes afterwards.
func (b *h1Body) drainTail() {
	if b.done {
		return
	}
	// A failed swap means the sweeper has interrupted the connection: the read fails at once.
	b.draining = true
	b.c.phase.CompareAndSwap(phaseBody, phaseDrain)
	// A stream's events taken off the connection's buffer (sseReader.chunkEvent) leave the last
	// chunk there, often with nothing after it: an empty read takes it and ends the body, without
	// the allocation of CopyN's LimitedReader.
	if _, err := b.Read(nil); err != nil || b.done {
		return
	}
	_, _ = io.CopyN(io.Discard, b, maxDrain)
}

// connBufs are a connection's buffers, its answers' arena and its shared header map. When the
// connection is closed by the goroutine its exchange belongs to (retire), or while it was idle,
// they go back to the transport's pool for the next new connection: a new upstream connection
// cost the gateway 55,000 instructions and 1,600 instruction-cache misses (bench --count), most
// of them allocating and then collecting these 8 KB and their structures, every time a burst of
// streams needs more connections than the pool holds, or a server closes each connection after
// its answer.
type connBufs struct {
	br    *bufio.Reader
	bw    *bufio.Writer
	heads heads
	hdr   http.Header
}

// lend gives the new connection c buffers from the pool.
func (t *h1Transport) lend(c *h1Conn) {
	b, _ := t.bufs.Get().(*connBufs)
	if b == nil {
		b = &connBufs{br: bufio.NewReaderSize(nil, 4<<10), bw: bufio.NewWriterSize(nil, 4<<10)}
	}
	b.br.Reset(c)
	b.bw.Reset(c.Conn)
	c.bufs, c.br, c.bw, c.heads, c.hdr = b, b.br, b.bw, &b.heads, b.hdr
}

// retire closes c and gives its buffers back to the pool. Only the goroutine that owns c's
// exchange may call it, once nothing of the exchange will read c's buffers again (its body
// ended or failed, or it never began), or anyone while c is idle; the sweeper, which closes
// a connection under another goroutine's read, closes it and nothing more. An answer's
// strings stay as they were (the arena only ever appends); its header map is free once its
// body has ended, as on a connection kept for the next exchange.
func (t *h1Transport) retire(c *h1Conn) {
	_ = c.Close()
	b := c.bufs
	if b == nil {
		return
	}
	c.bufs, c.br, c.bw, c.heads = nil, nil, nil, nil
	b.br.Reset(nil)
	b.bw.Reset(nil)
	b.heads.b.Trim()
	if c.hdr != nil && len(c.hdr) <= maxKeptAnswerFields {
		clear(c.hdr)
		b.hdr = c.hdr
	} else {
		b.hdr = nil
	}
	c.hdr = nil
	t.bufs.Put(b)
}

// maxKeptAnswerFields bounds the header map a connection's buffers keep for the next.
const maxKeptAnswerFields = 32

// get takes the most recently used idle connection to addr and makes it live for an exchange
// on behalf of ctx; nil when there is none.
func (t *h1Transport) get(ctx context.Context, addr string) *h1Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closeIdle = false        // a connection may be wanted again
	now := time.Since(t.epoch) // one clock read for the reap and each connection's idle time
	t.reapLocked(now)
	var l *idleList
	for {
		if l == nil || l.gone { // a peek below lets go of the lock
			if l = t.idle[addr]; l == nil {
				return nil
			}
		}
		list := l.conns
		if len(list) == 0 {
			return nil
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		l.conns = list[:len(list)-1] // kept when empty: its array takes the next release (reapLocked deletes it)
		t.nIdle--
		c.list = l
		idle := now - c.idleAt
		if t.idleTimeout > 0 && idle > t.idleTimeout {
			t.retire(c) // idle: nothing else holds it
			continue
		}
		if silent := t.closesSilently.Load() > 0; idle >= t.peekAfter || silent {
			// With no reader goroutine, nothing notices what a server sends on an idle
			// connection; bytes there belong to no request (a second answer, a body's tail past
			// its Content-Length) and the next request would read them as its own answer
			// (TestH1UnsolicitedBytesNotReadAsTheNextAnswer). One non-blocking peek, outside the
			// lock.
			t.mu.Unlock()
			bad := unsolicited(c.Conn)
			t.mu.Lock()
			switch {
			case !silent:
			case !bad:
				t.closesSilently.Add(-1) // one more reuse that found its connection open
			case idle < t.peekAfter:
				// Closed soon after its answer, not by a keep-alive timeout: the server does
				// close silently.
				t.closesSilently.Store(t.silentRun)
			}
			if bad {
				t.retire(c)
				continue
			}
		}
		c.reused = true
		t.watchLocked(ctx, c, time.Time{})
		return c
	}
}

// reapLocked closes the pooled connections idle longer than idleTimeout under every address, at
// most once an idleTimeout (so a connection may stay pooled up to twice that; get expires those
// of the address it looks at on the spot). get looks only at its own address, and its most
// recently used connections first: a managed target's process listens on a new port at each
// launch ({port}), and the connections pooled for a port no longer used, like those a burst left
// under the bottom of a list that fewer requests since have reused, stayed open for good (a socket
// each, in CLOSE_WAIT once their upstream had closed them), counted against maxIdle until nothing
// could be pooled any more (TestIdleConnectionsOfAnOldAddressExpire).
func (t *h1Transport) reapLocked(now time.Duration) {
	if t.idleTimeout <= 0 || now-t.reapedAt < t.idleTimeout {
		return
	}
	t.reapedAt = now
	for addr, l := range t.idle {
		list := l.conns
		if len(list) == 0 {
			// An address none of whose connections is pooled now: a port no longer used, or one
			// whose connections are all in use (its next release makes it again).
			delete(t.idle, addr)
			l.gone = true
			continue
		}
		n := 0 // the least recently used first: the list's head
		for n < len(list) && now-list[n].idleAt > t.idleTimeout {
			t.retire(list[n])
			n++
		}
		if n == 0 {
			continue
		}
		t.nIdle -= n
		if n == len(list) {
			delete(t.idle, addr)
			l.gone = true
			continue
		}
		kept := copy(list, list[n:])
		clear(list[kept:])
		l.conns = list[:kept]
	}
}

// peekAfter is how long a connection must have been idle for get to peek at it (the
// transport's peekAfter; a test sets 0). A connection reused sooner is not peeked: a peek is a
// system call and two allocations, and on every reuse it cost 2.3 µs of CPU per request at 64
// at a time (4%), where connections go back to work within microseconds; with 1 ms a quarter of
// the reuses there still peeked. Bytes a server sends after its answer come with it or right
// after it: those in the same read are caught when the answer ends (the connection is not
// pooled with bytes buffered); those that come later, before a reuse within peekAfter, are not,
// nor, whatever the wait, those that come after the next request went out (as for net/http).
const peekAfter = 10 * time.Millisecond

// silentRunDefault is how many reuses in a row must find their connection open, once a server
// has closed one silently, before reuses within peekAfter go unpeeked again: a peek on each costs
// about 2.3 µs of CPU (see peekAfter), 0.6 ms over the run, where a wrong guess costs a request
// that fails on a closed connection (and a new run).
const silentRunDefault = 256

// release ends c's exchange and pools c when reuse says it can carry another and the sweeper did
// not interrupt it. It returns the exchange's last phase and whether c was pooled; the caller
// closes it otherwise.
func (t *h1Transport) release(c *h1Conn, reuse bool) (phase int32, pooled bool) {
	if reuse {
		c.idleAt = time.Since(t.epoch)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ph := t.unwatchLocked(c)
	if reuse {
		t.reapLocked(c.idleAt)
	}
	if !reuse || ph >= phaseCanceled || t.nIdle >= t.maxIdle || t.closeIdle || c.early.Load() {
		return ph, false
	}
	l := c.list
	if l == nil || l.gone {
		if l = t.idle[c.addr]; l == nil {
			l = &idleList{}
			t.idle[c.addr] = l
		}
		c.list = l
	}
	l.conns = append(l.conns, c)
	t.nIdle++
	return ph, true
}

// idleList is the pooled connections to one address, most recently used last. A connection
// keeps the list it came from (h1Conn.list), so that its release finds the list without a
// lookup in h1Transport.idle, a map keyed by a string; a list no longer in the map is gone.
type idleList struct {
	conns []*h1Conn
	gone  bool // taken out of h1Transport.idle (reapLocked, CloseIdleConnections)
}

// CloseIdleConnections closes the pooled connections (http.Client.CloseIdleConnections calls it),
// and those of the exchanges in flight as they end, until another begins; and ends the sweeper as
// soon as no exchange is in flight.
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	for _, l := range idle {
		l.gone = true
	}
	t.idle, t.nIdle = map[string]*idleList{}, 0
	t.closeIdle = true
	if t.quit != nil {
		close(t.quit)
		t.quit = nil
	}
	t.mu.Unlock()
	for _, l := range idle {
		for _, c := range l.conns {
			t.retire(c)
		}
	}
	t.fallback.CloseIdleConnections()
}
