package h1

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

const testSendTimeout = 200 * time.Millisecond

// smallBufListener shrinks each accepted connection's send buffer, so that a client that stops
// reading blocks the server's write within a few hundred KiB, and a slow client's reads free
// enough of the buffer to wake the writer (Linux wakes it when a third of the buffer is free:
// a third of a 4 MB autotuned loopback buffer takes a slow client seconds).
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(32 << 10)
	}
	return nc, err
}

// startSend serves h with the given SendTimeout on a listener of small send buffers.
func startSend(t *testing.T, h http.Handler, send time.Duration) string {
	t.Helper()
	s := &Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second,
		SendTimeout: send}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(smallBufListener{ln}) }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
		waitConns(t, s)
	})
	return ln.Addr().String()
}

// dialSmall dials addr with a small receive buffer, and sends a GET.
func dialSmall(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br := dialRaw(t, addr)
	_ = c.(*net.TCPConn).SetReadBuffer(32 << 10)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c, br
}

// writeEnd is how a handler's writing ended: the write's error and its context's then.
type writeEnd struct {
	err, ctxErr error
	after       time.Duration // since the handler began
}

// floodUntilError writes and flushes 64 KiB pieces until a write fails.
func floodUntilError(w http.ResponseWriter, r *http.Request, began time.Time) writeEnd {
	piece := make([]byte, 64<<10)
	rc := http.NewResponseController(w)
	for {
		_, err := w.Write(piece)
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return writeEnd{err: err, ctxErr: r.Context().Err(), after: time.Since(began)}
		}
	}
}

// writeHang bounds waitEnd. Nothing but SendTimeout or the client's leaving ends a stalled
// write in these tests, so the bound only ends a test that would otherwise hang; a loaded
// 2-core machine under -race gets a minute, not a multiple of SendTimeout.
const writeHang = time.Minute

// waitEnd waits for a handler's writeEnd.
func waitEnd(t *testing.T, ends chan writeEnd) writeEnd {
	t.Helper()
	select {
	case e := <-ends:
		return e
	case <-time.After(writeHang):
		t.Fatalf("the handler's write did not fail within %v of the client's stall", writeHang)
		return writeEnd{}
	}
}

// A client that reads the status line of a stream and then nothing more: the handler's write
// fails, its context is cancelled, and the connection is closed.
func TestSendTimeoutCutsStalledClient(t *testing.T) {
	ends := make(chan writeEnd, 1)
	addr := startSend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ends <- floodUntilError(w, r, time.Now())
	}), testSendTimeout)
	c, br := dialSmall(t, addr)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("status line %q, %v", line, err)
	}
	e := waitEnd(t, ends)
	if e.ctxErr == nil {
		t.Errorf("the write failed (%v) with the request's context not done", e.err)
	}
	// What the socket still holds, then the end: not the client's own read deadline.
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the connection is still open after the stall: %v", err)
	}
}

// A client that reads slowly but steadily (64 KiB every 50 ms, 2 MiB in 1.6 s) is never cut by
// a SendTimeout of 1 s, whether the answer is one large write, a whole answer (WriteWhole) or a
// stream of flushed pieces. A 1 s limit leaves a busy CI machine twenty times the client's pace;
// an answer seen as one write would still be cut, after 1 s of its 1.6.
func TestSendTimeoutSparesSlowReader(t *testing.T) {
	const total = 2 << 20
	const timeout, pace = time.Second, 50 * time.Millisecond
	tests := []struct {
		name  string
		write func(w http.ResponseWriter) error
	}{
		{"one large write", func(w http.ResponseWriter) error {
			_, err := w.Write(make([]byte, total))
			return err
		}},
		{"whole answer", func(w http.ResponseWriter) error {
			// WriteWhole's writev used to be one counted write: a 2 MB body to this reader
			// made no progress the sweeper could see and was cut after SendTimeout.
			f := w.(wholeWriter)
			f.SetContentLength(total)
			w.WriteHeader(http.StatusOK)
			_, err := f.WriteWhole(make([]byte, total))
			return err
		}},
		{"flushed pieces", func(w http.ResponseWriter) error {
			rc := http.NewResponseController(w)
			piece := make([]byte, 16<<10)
			for range total / len(piece) {
				if _, err := w.Write(piece); err != nil {
					return err
				}
				if err := rc.Flush(); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errs := make(chan error, 1)
			addr := startSend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				errs <- tt.write(w)
			}), timeout)
			_, br := dialSmall(t, addr)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			buf := make([]byte, 64<<10)
			got := 0
			for {
				n, err := io.ReadFull(resp.Body, buf)
				got += n
				if err != nil {
					if got != total {
						t.Fatalf("read %d bytes of %d: %v", got, total, err)
					}
					break
				}
				time.Sleep(pace) // the client's pace, not a wait for a timer
			}
			if err := <-errs; err != nil {
				t.Errorf("the handler's write failed: %v", err)
			}
		})
	}
}

// A stream that pauses between events for longer than the sweeper's quiet second (after which
// it used to park, watching nothing) is not cut, and a client that stalls after that second is
// still caught.
func TestSendTimeoutStallAfterQuietSecond(t *testing.T) {
	const events = 14 // 100 ms apart: longer than the sweeper's quiet second
	ends := make(chan writeEnd, 1)
	addr := startSend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		rc := http.NewResponseController(w)
		for i := range events {
			last := "event\n"
			if i == events-1 {
				last = "last\n"
			}
			if _, err := io.WriteString(w, last); err != nil {
				ends <- writeEnd{err: errors.New("cut during the healthy stream: " + err.Error())}
				return
			}
			if err := rc.Flush(); err != nil {
				ends <- writeEnd{err: errors.New("cut during the healthy stream: " + err.Error())}
				return
			}
			time.Sleep(100 * time.Millisecond) // the stream's pace
		}
		ends <- floodUntilError(w, r, began)
	}), testSendTimeout)
	_, br := dialSmall(t, addr)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := bufio.NewReader(resp.Body)
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			t.Fatalf("the healthy stream ended: %v", err)
		}
		if line == "last\n" {
			break
		}
	}
	// The client stops reading.
	e := waitEnd(t, ends)
	if strings.HasPrefix(errString(e.err), "cut during") {
		t.Fatal(e.err)
	}
	if e.ctxErr == nil {
		t.Errorf("the write failed (%v) with the request's context not done", e.err)
	}
	if e.after < time.Second {
		t.Errorf("the stream ended after %v, before its healthy second was over", e.after)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// With no SendTimeout a client that stops reading is not cut: the write waits.
func TestSendTimeoutZeroCutsNothing(t *testing.T) {
	ends := make(chan writeEnd, 1)
	addr := startSend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ends <- floodUntilError(w, r, time.Now())
	}), 0)
	c, br := dialSmall(t, addr)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-ends:
		t.Fatalf("the write failed after %v with no SendTimeout: %v", e.after, e.err)
	case <-time.After(5 * testSendTimeout):
	}
	_ = c.Close() // the client leaves: the write fails and the handler returns
	if e := waitEnd(t, ends); e.err == nil {
		t.Error("the handler ended without a write error")
	}
}

// A handler that answers before its request's body is at its end (here the final chunk, which
// the client has not sent) is never armed for the watcher, and nothing used to wake the parked sweeper
// for its writes: a client that stopped reading held it for ever. Its write is cut too.
func TestSendTimeoutCutsStallWithBodyLeft(t *testing.T) {
	ends := make(chan writeEnd, 1)
	addr := startSend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadFull(r.Body, make([]byte, 5)); err != nil {
			t.Errorf("reading the body: %v", err)
		}
		ends <- floodUntilError(w, r, time.Now())
	}), testSendTimeout)
	c, br := dialRaw(t, addr)
	_ = c.(*net.TCPConn).SetReadBuffer(32 << 10)
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("status line %q, %v", line, err)
	}
	if e := waitEnd(t, ends); e.ctxErr == nil {
		t.Errorf("the write failed (%v) with the request's context not done", e.err)
	}
}
