package h1

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hayula/gateway/internal/httpwire"
)

// response is the http.ResponseWriter of a connection's current request. The body is held
// back (up to the pending buffer's size) until the handler flushes or returns, so that an
// answer of known size goes out with Content-Length and in one write; a longer or flushed
// answer of unknown size is chunked (HTTP/1.1) or ends with the connection (HTTP/1.0). A
// chunked body's writes are gathered in the same buffer until the next flush: one chunk per
// flush (or per buffer full), not one per write.
type response struct {
	c         *conn
	req       *http.Request
	header    http.Header
	status    int
	wrote     bool // the status is set
	committed bool // the head is in the write buffer
	chunked   bool
	noBody    bool  // HEAD, 1xx, 204 and 304
	length    int64 // from the handler's Content-Length; -1 when none
	written   int64
	closeConn bool
	err       error // a write failed: the client is gone
	finished  bool
}

var (
	_ http.ResponseWriter = (*response)(nil)
	_ http.Flusher        = (*response)(nil)
)

func (w *response) reset(req *http.Request) {
	h := w.c.bufs.rh
	clear(h)
	w.c.bufs.pending = w.c.bufs.pending[:0]
	w.c.bufs.fields = w.c.bufs.fields[:0]
	*w = response{c: w.c, req: req, header: h, length: -1}
}

func (w *response) Header() http.Header { return w.header }

// AddFields adds header lines the handler built once and keeps ("Name: value\r\n" each, with a
// token name, a valid value and no framing field: h1 writes them as they are), to go in the head
// after the header map's fields. Setting a map entry costs a map assignment, and writing it a
// walk of the map with a check of each name and value, on every answer. Lines added after the
// head went out are dropped. The server's handler reaches this through its own interface.
func (w *response) AddFields(lines []byte) {
	if !w.committed && !w.finished {
		w.c.bufs.fields = append(w.c.bufs.fields, lines...)
	}
}

// SetContentLength is a Content-Length header set without the header map: the body's length,
// written in the head and held to as a Content-Length entry is. It must come before
// WriteHeader, and an entry in the map, if any, wins.
func (w *response) SetContentLength(n int64) {
	if !w.wrote && n >= 0 {
		w.length = n
	}
}

// WriteHeader sets the status. An informational status (1xx but 101) is written at once and
// the handler may still set another.
func (w *response) WriteHeader(code int) {
	if w.wrote || w.finished {
		return
	}
	if code < 100 || code > 999 {
		panic("h1: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.wrote, w.status = true, code
	// Indexed, not Get: Get canonicalises its key on every answer, and this one is canonical.
	if cl := w.header["Content-Length"]; len(cl) > 0 && cl[0] != "" {
		if n, err := parseLength(cl[0]); err == nil {
			w.length = n
		} else {
			w.header.Del("Content-Length")
		}
	}
	w.noBody = w.req.Method == http.MethodHead || code == http.StatusNoContent ||
		code == http.StatusNotModified || code < 200
}

func (w *response) writeInformational(code int) {
	if w.req.ProtoMinor == 0 {
		return // an HTTP/1.0 client does not expect one (RFC 9110 §15.2)
	}
	if code == http.StatusContinue && w.c.body.cont {
		// The handler sent it: the first read must not send another, and the body's time
		// starts now, as after the 100 Continue that read would have sent.
		w.c.body.cont = false
		w.c.body.startTimer()
	}
	bw := w.c.bufs.bw
	b := statusLine(bw.AvailableBuffer(), code)
	_, _ = bw.Write(append(w.appendFields(b), '\r', '\n'))
	if err := bw.Flush(); err != nil && w.err == nil {
		w.err = err
	}
}

func (w *response) Write(p []byte) (int, error) {
	if w.finished {
		return 0, errors.New("h1: write after the handler returned")
	}
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.noBody {
		if w.req.Method == http.MethodHead {
			return w.countHead(p)
		}
		return 0, http.ErrBodyNotAllowed
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.committed || w.chunked {
		pend := w.c.bufs.pending
		if len(pend)+len(p) <= cap(pend) {
			w.c.bufs.pending = append(pend, p...)
			return len(p), nil
		}
		if !w.committed {
			w.commit(false)
		} else {
			w.endChunk()
		}
	}
	return w.writeBody(p)
}

// countHead counts, without keeping, a HEAD answer's body, so that its head carries the
// Content-Length GET's would (RFC 9110 9.3.2): the length written when the handler returns, if
// it was no more than GET holds back (the pending buffer) and not flushed; else, where GET's
// head would go out chunked, none.
func (w *response) countHead(p []byte) (int, error) {
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.committed && w.written > int64(cap(w.c.bufs.pending)) {
		w.commit(false)
	}
	return len(p), nil
}

// endChunk writes what the handler wrote since the last flush as one chunk. A chunked body's
// writes are gathered in the pending buffer (as net/http gathers them in its own), so that an
// event written in three pieces (a stream's "data: ", payload and blank line) travels as one
// chunk, not three.
func (w *response) endChunk() {
	if pend := w.c.bufs.pending; len(pend) > 0 {
		w.c.bufs.pending = pend[:0]
		_, _ = w.writeBody(pend)
	}
}

// WriteString lets io.WriteString skip a copy.
func (w *response) WriteString(s string) (int, error) {
	if !w.committed && w.wrote && !w.noBody && w.err == nil && !w.finished &&
		len(w.c.bufs.pending)+len(s) <= cap(w.c.bufs.pending) &&
		(w.length < 0 || w.written+int64(len(s)) <= w.length) {
		w.c.bufs.pending = append(w.c.bufs.pending, s...)
		w.written += int64(len(s))
		return len(s), nil
	}
	return w.Write([]byte(s))
}

func (w *response) writeBody(p []byte) (int, error) {
	bw := w.c.bufs.bw
	if w.chunked {
		if len(p) == 0 {
			return 0, nil
		}
		// Appending to AvailableBuffer writes in place; a local array would escape to the heap.
		h := strconv.AppendInt(bw.AvailableBuffer(), int64(len(p)), 16)
		h = append(h, '\r', '\n')
		_, _ = bw.Write(h)
	}
	n, err := bw.Write(p)
	if w.chunked && err == nil {
		_, err = bw.WriteString("\r\n")
	}
	if err != nil {
		w.err = err
	}
	return n, err
}

// Flush sends the head and what has been written, and then each write as it comes.
func (w *response) Flush() {
	if w.finished {
		return
	}
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false)
	}
	if w.err != nil {
		return
	}
	w.endChunk()
	if err := w.c.bufs.bw.Flush(); err != nil {
		w.err = err
	}
}

// FlushError is what http.ResponseController.Flush calls: Flush reporting a failed write.
func (w *response) FlushError() error {
	w.Flush()
	return w.err
}

// SetReadDeadline and SetWriteDeadline serve http.ResponseController.
func (w *response) SetReadDeadline(t time.Time) error {
	w.c.phase = rdlOther // kept until the next request
	return w.c.setReadDeadline(t)
}
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.nc.SetWriteDeadline(t) }

// commit writes the head to the write buffer, and what is pending after it. final means the
// handler has returned, so the body's length is what was written.
func (w *response) commit(final bool) {
	bw := w.c.bufs.bw
	// Appended to the buffer's free space, the head is written in place.
	_, _ = bw.Write(w.appendHead(bw.AvailableBuffer(), final))
	if pend := w.c.bufs.pending; len(pend) > 0 {
		w.c.bufs.pending = pend[:0]
		_, _ = w.writeBody(pend)
	}
}

// appendHead marks the answer committed and appends its head to b: the status line, the
// framing the body needs, the date, the handler's fields and the blank line.
func (w *response) appendHead(b []byte, final bool) []byte {
	w.committed = true
	b = statusLine(b, w.status)
	switch {
	case w.noBody:
		if w.req.Method == http.MethodHead {
			if w.length < 0 && final {
				w.length = w.written // what GET's body would have been (countHead)
			}
			if w.length >= 0 {
				b = appendLength(b, w.length)
			}
		}
	case w.length >= 0:
		b = appendLength(b, w.length)
	case final:
		w.length = w.written
		b = appendLength(b, w.written)
	case w.req.ProtoMinor >= 1:
		w.chunked = true
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	default:
		w.closeConn = true // HTTP/1.0 without a length: the close ends the body
	}
	if bd := &w.c.body; !bd.eof && (bd.cont || bd.err != nil || !bd.chunked && bd.n > maxDrain) {
		w.closeConn = true // the rest of the body will not be read (see body.drain)
	}
	if w.req.Close || w.c.s.inShutdown.Load() || connectionClose(w.header) {
		w.closeConn = true
	}
	if w.closeConn {
		b = append(b, "Connection: close\r\n"...)
	} else if w.req.ProtoMinor == 0 {
		b = append(b, "Connection: keep-alive\r\n"...)
	}
	if _, ok := w.header["Date"]; !ok {
		b = append(b, w.c.s.date.get(time.Now())...)
	}
	b = w.appendFields(b)
	b = append(b, w.c.bufs.fields...)
	return append(b, '\r', '\n')
}

// WriteWhole writes p as the whole body, after WriteHeader, and sends the answer at once: what
// Write(p) and Flush do. When nothing else has been written and the length set (SetContentLength,
// or the header map's) is p's, the head and p go out on a TCP connection in one system call:
// a write(2) with p copied after the head when both fit in the server's scratch buffer (or the
// connection's write buffer, when another answer has it), else a writev(2) with p not copied.
// Write would copy it into the held-back body and commit then into the write buffer, two copies
// of every whole answer.
func (w *response) WriteWhole(p []byte) (int, error) {
	tc, ok := w.c.nc.(*net.TCPConn)
	bw := w.c.bufs.bw
	if !ok || !w.wrote || w.committed || w.finished || w.err != nil || w.noBody ||
		w.length != int64(len(p)) || w.written != 0 || len(p) == 0 ||
		len(w.c.bufs.pending) > 0 || bw.Buffered() > 0 {
		n, err := w.Write(p)
		w.Flush()
		if err == nil {
			err = w.err
		}
		return n, err
	}
	w.written = int64(len(p))
	sp := w.c.s.scratch.Take()
	if sp == nil {
		return w.writeWhole(tc, p, bw.AvailableBuffer())
	}
	n, err := w.writeWhole(tc, p, sp[:0])
	w.c.s.scratch.Give(sp)
	return n, err
}

// writeWhole is WriteWhole's write of the head, built in buf, and p on tc.
func (w *response) writeWhole(tc *net.TCPConn, p, buf []byte) (int, error) {
	bufs := w.c.bufs
	head := w.appendHead(buf, false)
	if len(head)+len(p) <= cap(head) {
		// The whole answer fits in the buffer (most chat answers): a copy
		// of p and one write(2) cost less than a writev's vector.
		w.c.beginWrite()
		n, err := tc.Write(append(head, p...))
		w.c.wseq.Add(1)
		if err != nil {
			w.err = err
			return max(n-len(head), 0), err // what of p went out before the failure
		}
		return len(p), nil
	}
	// In pieces of at most maxWritePiece of p, each counted as connWriter counts a write: a
	// slow reader's progress is seen at the end of each (see Server.SendTimeout). A whole
	// answer is usually one piece, and one writev.
	sent := 0 // of p
	for first := true; first || sent < len(p); first = false {
		end := min(sent+maxWritePiece, len(p))
		if first {
			bufs.vec[0], bufs.vec[1] = head, p[:end]
			bufs.out = bufs.vec[:]
		} else {
			bufs.vec[0], bufs.vec[1] = p[sent:end], nil
			bufs.out = bufs.vec[:1]
		}
		w.c.beginWrite()
		n, err := bufs.out.WriteTo(tc)
		w.c.wseq.Add(1)
		if first {
			n -= int64(len(head))
		}
		sent += int(max(n, 0))
		if err != nil {
			bufs.vec[0], bufs.vec[1] = nil, nil
			w.err = err
			return sent, err // what of p went out before the failure
		}
	}
	bufs.vec[0], bufs.vec[1] = nil, nil // the caller's p is not kept
	return len(p), nil
}

func appendLength(b []byte, n int64) []byte {
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

// appendFields appends the handler's header fields, but for the framing ones the server writes
// itself (and a 1xx answer carries none). A line break in a value becomes a space, and a field
// with an invalid name is dropped, so that nothing a handler copies from elsewhere can split
// the head.
func (w *response) appendFields(b []byte) []byte {
	for k, vs := range w.header {
		if framing(k) || !httpwire.IsToken(k) {
			continue
		}
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			if httpwire.ValidValue(v) {
				b = append(b, v...)
			} else {
				b = append(b, sanitize(v)...)
			}
			b = append(b, '\r', '\n')
		}
	}
	return b
}

// framing reports whether k names a field the server writes itself, in any case: a handler
// that fills the map directly ("content-length") must not add a second length to the head.
func framing(k string) bool {
	switch len(k) {
	case len("Connection"):
		return strings.EqualFold(k, "Connection")
	case len("Content-Length"):
		return strings.EqualFold(k, "Content-Length")
	case len("Transfer-Encoding"):
		return strings.EqualFold(k, "Transfer-Encoding")
	}
	return false
}

func sanitize(v string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' && r != '\t' || r == 0x7f {
			return ' '
		}
		return r
	}, v)
}

func connectionClose(h http.Header) bool {
	for _, v := range h["Connection"] {
		if strings.EqualFold(strings.TrimSpace(v), "close") {
			return true
		}
	}
	return false
}

// finish completes the answer after the handler returns and reports whether the connection
// can carry another request.
func (w *response) finish() bool {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true)
	}
	w.finished = true
	bw := w.c.bufs.bw
	if w.chunked && w.err == nil {
		w.endChunk()
		_, _ = bw.WriteString("0\r\n\r\n")
	}
	if w.err == nil {
		if err := bw.Flush(); err != nil {
			w.err = err
		}
	}
	short := !w.noBody && w.length >= 0 && w.written < w.length
	return w.err == nil && !w.closeConn && !short
}

// abandon ends an answer that a panic cut off: a 500 when nothing has gone out yet, otherwise
// nothing (the connection closes, which the client sees as a cut answer).
func (w *response) abandon() {
	w.finished = true
	if w.committed || w.err != nil {
		if w.chunked && w.err == nil {
			w.endChunk() // what the handler wrote before it panicked goes out, as before
		}
		_ = w.c.bufs.bw.Flush()
		return
	}
	w.c.bufs.pending = w.c.bufs.pending[:0]
	w.c.reject(&parseError{http.StatusInternalServerError, "internal_error",
		"the server hit an internal error"})
}

// statusLine appends "HTTP/1.1 code text\r\n" to b.
func statusLine(b []byte, code int) []byte {
	if code == http.StatusOK {
		return append(b, "HTTP/1.1 200 OK\r\n"...)
	}
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(code)...)
	return append(b, '\r', '\n')
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }
