package h1

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"
)

// body is the request body of a connection's current request. It is reused request after
// request; handlers hold a bodyHandle, which stops working when its request is over.
type body struct {
	c       *conn
	n       int64 // bytes left of a Content-Length body
	chunked bool
	cr      io.Reader // the chunked decoder, while chunked
	cont    bool      // 100 Continue is owed before the first read
	eof     bool
	done    bool // the handler returned
	err     error
	timed   bool // a ReadBodyTimeout deadline is on the connection (see startTimer)
}

func (b *body) reset(n int64, chunked, cont bool) {
	*b = body{c: b.c, n: max(n, 0), chunked: chunked, cont: cont, eof: n == 0 && !chunked}
}

// errBodyCut is a body that ended before its declared length or final chunk. It matches
// io.ErrUnexpectedEOF, as net/http's cut body is, so that a handler can tell a client that went
// away mid-body from a body it sent whole and wrong (TestClientGoneMidBody).
var errBodyCut = fmt.Errorf("h1: the client closed the connection before the request body ended: %w", io.ErrUnexpectedEOF)

func (b *body) read(p []byte) (int, error) {
	if b.done {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.c.res.wrote || b.c.res.committed {
		return b.readRaw(p) // an answer begun is a request under way
	}
	b.c.inBody = true // a Shutdown may close the connection while this waits (stateBody)
	n, err := b.readRaw(p)
	b.c.inBody = false
	return n, err
}

func (b *body) readRaw(p []byte) (int, error) {
	switch {
	case b.eof:
		return 0, io.EOF
	case b.err != nil:
		return 0, b.err
	case len(p) == 0:
		return 0, nil
	}
	// Once the answer's head is out, a 100 Continue would be read as part of its body; a
	// client waiting for one sends the body after its own wait (RFC 9110 §10.1.1) or never,
	// and the body's time starts now, as after a 100 Continue.
	if b.cont && b.c.res.committed {
		b.cont = false
		b.startTimer()
	}
	if b.cont {
		b.cont = false
		// The client sends the body only now: its time starts now too.
		b.startTimer()
		bw := b.c.bufs.bw
		_, _ = bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if err := bw.Flush(); err != nil {
			b.err = err
			return 0, err
		}
	}
	if b.chunked {
		if b.cr == nil {
			b.cr = httputil.NewChunkedReader(b.c.bufs.br)
		}
		n, err := b.cr.Read(p)
		switch {
		case errors.Is(err, io.EOF):
			if terr := b.c.readTrailer(); terr != nil {
				b.err = terr
				return n, terr
			}
			b.hitEOF()
			return n, io.EOF
		case err != nil:
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = errBodyCut
			}
			b.err = err
		}
		return n, err
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.c.bufs.br.Read(p)
	b.n -= int64(n)
	if b.n == 0 {
		b.hitEOF()
		return n, io.EOF
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errBodyCut
		}
		b.err = err
	}
	return n, err
}

// startTimer puts the server's ReadBodyTimeout on the connection: the body must have arrived by
// then. hitEOF takes it off.
func (b *body) startTimer() {
	if t := b.c.s.ReadBodyTimeout; t > 0 && !b.eof {
		_ = b.c.setReadDeadline(time.Now().Add(t))
		b.c.phase = rdlOther
		b.timed = true
	}
}

// buffered reports whether the rest of a body of known length is in the connection's read
// buffer already: reading it cannot wait, and needs no deadline.
func (b *body) buffered() bool {
	return !b.chunked && b.n <= int64(b.c.bufs.br.Buffered())
}

func (b *body) hitEOF() {
	b.eof = true
	b.cr = nil
	if b.timed {
		b.timed = false
		b.c.phase = rdlNone // armRead takes the timer's deadline off before another read
	}
	if !b.done {
		b.c.armWatch()
	}
}

// drain reads what the handler left of the body, so that the connection can carry the next
// request, and reports whether it can. A rest larger than maxDrain, a body that broke, and a
// body the client was told nothing about yet (100 Continue never sent) close it instead, and so
// does a Shutdown.
func (b *body) drain() bool {
	if b.eof {
		return true
	}
	if b.err != nil || b.cont || !b.chunked && b.n > maxDrain {
		return false
	}
	// The answer is out; a client that stops sending the rest would otherwise hold this
	// goroutine (and a Shutdown) for as long as it keeps the connection open.
	c := b.c
	_ = c.setReadDeadline(time.Now().Add(c.s.drainWait()))
	c.phase = rdlOther
	defer func() { c.phase = rdlNone }() // armRead takes it off before another read
	// Under Shutdown the connection closes after this answer, so the rest is not waited for:
	// serve ends it with a lingering close. A Shutdown that begins during the wait ends it
	// (closeIdle: stateDrain), after the deadline above, which it passes; and one that began
	// before the state was set is seen here (TestShutdownEndsDrainAfterAnswer).
	if !c.state.CompareAndSwap(stateActive, stateDrain) {
		return false
	}
	defer c.state.CompareAndSwap(stateDrain, stateActive) // not when Shutdown moved it
	if c.s.inShutdown.Load() {
		return false
	}
	var buf [512]byte
	left := maxDrain
	for left > 0 {
		n, err := b.readRaw(buf[:min(len(buf), left)])
		left -= n
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

// bodyHandle is what a handler gets as http.Request.Body. It lives in its request's slot and
// is ended when the handler returns, before the connection touches the body again (drain, the
// next request): a goroutine the handler left reading it then reads http.ErrBodyReadAfterClose,
// and, as in net/http, a read under way when the handler returns is waited for.
type bodyHandle struct {
	mu    sync.Mutex // held by a read and by end
	ended bool
	b     *body
}

func (h *bodyHandle) Read(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return 0, http.ErrBodyReadAfterClose
	}
	return h.b.read(p)
}

// InPlace reads the rest of the body at once, where it already is: when all of it is in the
// connection's read buffer (a body of stated length, not chunked), it returns those bytes, not
// copied, and the body is at its end; otherwise nil and false, with nothing read. The bytes are
// the connection's: they hold the body until the handler returns, and the next request is read
// over them after, so a handler keeps nothing of them past its return, and writes to them only
// within the body (what it does with a buffer it read into). A small request's head and body
// come in one read, and its body is then copied nowhere. A client that asked for a 100 Continue
// and sent its body without waiting for one gets none: the body came (RFC 9110 §10.1.1 lets a
// server that has it omit the 100).
func (h *bodyHandle) InPlace() ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.b
	if h.ended || b.done || b.eof || b.err != nil || b.chunked || !b.buffered() {
		return nil, false
	}
	br := b.c.bufs.br
	p, err := br.Peek(int(b.n))
	if err != nil {
		return nil, false
	}
	_, _ = br.Discard(len(p))
	b.n, b.cont = 0, false
	b.hitEOF()
	return p, true
}

// end is called by the connection when the handler has returned.
func (h *bodyHandle) end() {
	h.mu.Lock()
	h.ended = true
	h.mu.Unlock()
}

// Close does nothing the server would not do: what is left is drained after the handler.
func (h *bodyHandle) Close() error { return nil }
