package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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
// A response body must be read and closed by one goroutine at a time, as the adapters do.
type h1Transport struct {
	fallback    *http.Transport
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	timeout     time.Duration // response headers; 0 means none
	idleTimeout time.Duration
	maxIdle     int

	dests destCache // see post

	mu    sync.Mutex
	idle  map[string][]*h1Conn // by address, most recently used last
	nIdle int
}

var _ http.RoundTripper = (*h1Transport)(nil)

func newH1Transport(fallback *http.Transport, timeout time.Duration) *h1Transport {
	return &h1Transport{fallback: fallback, dial: fallback.DialContext, timeout: timeout,
		idleTimeout: fallback.IdleConnTimeout, maxIdle: maxIdlePerTarget, idle: map[string][]*h1Conn{}}
}

// h1Conn is one upstream connection with its buffers.
type h1Conn struct {
	net.Conn
	addr   string
	br     *bufio.Reader
	bw     *bufio.Writer
	head   []byte // scratch for answer heads
	nread  int64  // bytes read over the connection's life: an answer that never started reads none
	reused bool
	idleAt time.Time
}

func (c *h1Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.nread += int64(n)
	return n, err
}

// RoundTrip sends req and reads the response headers. A connection taken from the pool that
// turns out to be closed by the server is replaced by a new one once, but only when the request
// cannot have reached the server: writing it failed, or the server closed the connection
// without a byte of answer (it closes idle connections on its own schedule, and one closed
// while the request was on its way never read it). An inference request is not idempotent, so
// no other failure is retried here.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return t.fallback.RoundTrip(req)
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	out := &netRequest{req: req}
	resp, err := t.do(req.Context(), addr, out)
	if err != nil {
		closeReqBody(out.req)
		return nil, err
	}
	resp.Request = req
	return resp, nil
}

// outgoing is a request as the synchronous client writes it.
type outgoing interface {
	method() string
	write(bw *bufio.Writer) error
	// rewind readies the request to be written again, on a new connection; false when its
	// body cannot be read again.
	rewind() bool
}

// do sends out over a pooled or new connection to addr and reads the answer's head, replacing
// a stale pooled connection once (see RoundTrip).
func (t *h1Transport) do(ctx context.Context, addr string, out outgoing) (*http.Response, error) {
	c := t.get(addr)
	for {
		if c == nil {
			nc, err := t.dial(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			c = &h1Conn{Conn: nc, addr: addr}
			c.br = bufio.NewReaderSize(c, 4<<10)
			c.bw = bufio.NewWriterSize(c.Conn, 4<<10)
		}
		resp, stale, err := t.exchange(ctx, c, out)
		if err == nil {
			return resp, nil
		}
		_ = c.Close()
		if !stale || ctx.Err() != nil || !out.rewind() {
			return nil, err
		}
		c = nil
	}
}

// netRequest is an *http.Request to send.
type netRequest struct{ req *http.Request }

func (r *netRequest) method() string               { return r.req.Method }
func (r *netRequest) write(bw *bufio.Writer) error { return writeRequest(bw, r.req) }
func (r *netRequest) rewind() bool {
	if r.req.Body == nil || r.req.Body == http.NoBody {
		return true
	}
	if r.req.GetBody == nil {
		return false
	}
	body, err := r.req.GetBody()
	if err != nil {
		return false
	}
	r2 := *r.req
	r2.Body = body
	r.req = &r2
	return true
}

func closeReqBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// exchange writes req on c and reads the response headers. stale reports a failure on a pooled
// connection that the request cannot have reached.
func (t *h1Transport) exchange(ctx context.Context, c *h1Conn, out outgoing) (resp *http.Response, stale bool, err error) {
	cancel := &canceler{c: c.Conn}
	stop := context.AfterFunc(ctx, cancel.fire)
	fail := func(err error) (*http.Response, bool, error) {
		stop()
		if cancel.fired.Load() {
			// The deadline that interrupted the exchange was the caller giving up.
			return nil, false, ctx.Err()
		}
		return nil, false, err
	}
	if err := out.write(c.bw); err != nil {
		r, _, e := fail(err)
		return r, c.reused && !cancel.fired.Load(), e
	}
	if err := c.bw.Flush(); err != nil {
		r, _, e := fail(err)
		return r, c.reused && !cancel.fired.Load(), e
	}
	if t.timeout > 0 {
		cancel.setReadDeadline(time.Now().Add(t.timeout))
	}
	before := c.nread
	// readResponse reads past informational answers (a bounded number of them) itself.
	resp, err = readResponse(c.br, out.method(), &c.head)
	if err != nil {
		// An EOF before the status line is io.ErrUnexpectedEOF, as in http.ReadResponse.
		if c.reused && c.nread == before && errors.Is(err, io.ErrUnexpectedEOF) && !cancel.fired.Load() {
			stop()
			return nil, true, err
		}
		return fail(err)
	}
	if t.timeout > 0 {
		cancel.setReadDeadline(time.Time{})
	}
	b := &h1Body{t: t, c: c, body: resp.Body, stop: stop, cancel: cancel, ctx: ctx, keep: !resp.Close}
	if resp.Body == http.NoBody {
		b.finish(true)
	}
	resp.Body = b
	return resp, false, nil
}

// canceler interrupts a connection's blocked read or write when the caller gives up, by moving
// its deadline into the past; a deadline set afterwards for another reason must not undo that.
type canceler struct {
	c     net.Conn
	mu    sync.Mutex
	fired atomic.Bool
}

var pastDeadline = time.Unix(1, 0)

func (k *canceler) fire() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fired.Store(true)
	_ = k.c.SetDeadline(pastDeadline)
}

func (k *canceler) setReadDeadline(d time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.fired.Load() {
		_ = k.c.SetReadDeadline(d)
	}
}

// h1Body is a response body on a pooled connection. The connection goes back to the pool when
// the body was read to its clean end and nothing follows it; closed earlier, or broken, the
// connection is closed, since what remains of the answer would otherwise be read as the next
// one's.
type h1Body struct {
	t      *h1Transport
	c      *h1Conn
	body   io.ReadCloser // http.ReadResponse's body over c.br
	stop   func() bool   // unregisters the cancellation
	cancel *canceler
	ctx    context.Context
	keep   bool // the server did not say Connection: close
	done   bool // the connection was released or closed
	eof    bool
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
		fired := b.cancel.fired.Load()
		b.finish(false)
		if fired {
			err = b.ctx.Err()
		}
	}
	return n, err
}

// finish releases the connection to the pool when the answer ended cleanly and the connection
// can carry another, and closes it otherwise.
func (b *h1Body) finish(clean bool) {
	if b.done {
		return
	}
	b.done = true
	// stop reports false when the cancellation already fired: the connection's deadline is in
	// the past and it is no use to anyone.
	if clean && b.stop() && b.keep && b.c.br.Buffered() == 0 && b.c.SetDeadline(time.Time{}) == nil {
		b.t.put(b.c)
		return
	}
	b.stop()
	_ = b.c.Close()
}

// Close closes the connection unless the body was read to its end. The underlying body's own
// Close is not called: it would read the rest of the answer, however long.
func (b *h1Body) Close() error {
	b.finish(false)
	return nil
}

// drainTail reads what is left of the body, within maxDrain bytes and drainWait, so that the
// connection can be reused; the caller closes afterwards.
func (b *h1Body) drainTail() {
	if b.done {
		return
	}
	b.cancel.setReadDeadline(time.Now().Add(drainWait))
	_, _ = io.CopyN(io.Discard, b, maxDrain)
}

func (t *h1Transport) get(addr string) *h1Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		list := t.idle[addr]
		if len(list) == 0 {
			return nil
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[addr] = list[:len(list)-1]
		t.nIdle--
		if t.idleTimeout > 0 && time.Since(c.idleAt) > t.idleTimeout {
			_ = c.Close()
			continue
		}
		c.reused = true
		return c
	}
}

func (t *h1Transport) put(c *h1Conn) {
	c.idleAt = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nIdle >= t.maxIdle {
		_ = c.Close()
		return
	}
	t.idle[c.addr] = append(t.idle[c.addr], c)
	t.nIdle++
}

// CloseIdleConnections closes the pooled connections (http.Client.CloseIdleConnections calls it).
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.nIdle = map[string][]*h1Conn{}, 0
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			_ = c.Close()
		}
	}
	t.fallback.CloseIdleConnections()
}
