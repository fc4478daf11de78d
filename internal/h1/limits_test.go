package h1

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// Probes of the documented limits beyond framing (the second adversarial review).

// readErrWithin waits for a handler's read outcome, failing the test when none comes within
// 10 s: the body deadline is short, so the read must have failed long before.
func readErrWithin(t *testing.T, got <-chan error) error {
	t.Helper()
	select {
	case err := <-got:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's read of a body the client never sent did not fail within 10s")
		return nil
	}
}

// A body the client was asked to wait for (Expect: 100-continue) is under ReadBodyTimeout
// also when no 100 Continue goes out from the first read: the handler sent it itself, or its
// answer's head went first.
func TestBodyTimeoutWithoutAutomaticContinue(t *testing.T) {
	got := make(chan error, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/handler-continue":
			w.WriteHeader(http.StatusContinue)
		case "/head-first":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		}
		_, err := io.ReadAll(r.Body)
		got <- err
	}), func(s *Server) { s.ReadBodyTimeout = 100 * time.Millisecond })
	for _, path := range []string{"/handler-continue", "/head-first"} {
		t.Run(path[1:], func(t *testing.T) {
			c, _ := dialRaw(t, addr)
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", path)
			// The client never sends the body.
			if err := readErrWithin(t, got); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("handler read: %v, want a deadline error", err)
			}
		})
	}
}

// A body sent a byte at a time, each well within ReadBodyTimeout of the last, still fails once
// ReadBodyTimeout has passed since the head: the limit is counted to the last byte.
func TestBodyTimeoutCountsToLastByte(t *testing.T) {
	got := make(chan error, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		got <- err
	}), func(s *Server) { s.ReadBodyTimeout = 100 * time.Millisecond })
	c, _ := dialRaw(t, addr)
	fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	if err := readErrWithin(t, got); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("handler read: %v, want a deadline error", err)
	}
}

// streamHandler answers /stream with three flushed events and anything else with echo.
func streamHandler(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/stream" {
		echo(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i := range 3 {
		fmt.Fprintf(w, "data: %d\n\n", i)
		w.(http.Flusher).Flush()
		time.Sleep(5 * time.Millisecond)
	}
}

// Connection: close from the client, and HTTP/1.0 without keep-alive, get an answer that says
// close, and the connection closes after it; HTTP/1.0 with keep-alive is kept, but not under an
// answer whose end only the close can mark.
func TestClientCloseAndHTTP10(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(streamHandler), func(s *Server) { s.WatchAfter = time.Millisecond })
	for _, tt := range []struct {
		name, raw string
		close     bool
	}{
		{"1.1 close", "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", true},
		{"1.1 close, stream", "GET /stream HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", true},
		{"1.1 close token list", "GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, CLOSE\r\n\r\n", true},
		{"1.0", "GET / HTTP/1.0\r\n\r\n", true},
		{"1.0 body", "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi", true},
		{"1.0 stream", "GET /stream HTTP/1.0\r\n\r\n", true},
		{"1.0 keep-alive stream", "GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
		{"1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", false},
		{"1.0 keep-alive body", "POST / HTTP/1.0\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nhi", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, br := dialRaw(t, addr)
			io.WriteString(c, tt.raw)
			resp, err := http.ReadResponse(br, &http.Request{Method: "GET", ProtoMajor: 1, ProtoMinor: 1})
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			if err != nil || len(b) == 0 {
				t.Fatalf("body %q, %v", b, err)
			}
			conn := resp.Header.Get("Connection")
			if tt.close {
				if !resp.Close {
					t.Errorf("the answer does not say close (Connection: %q)", conn)
				}
				if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
					t.Errorf("after the answer: %d, %v; want EOF", n, err)
				}
				return
			}
			if resp.Close || !strings.EqualFold(conn, "keep-alive") {
				t.Errorf("Connection: %q close=%v, want keep-alive", conn, resp.Close)
			}
			io.WriteString(c, tt.raw)
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("second request on a kept connection: %v", err)
			}
			_, _ = io.ReadAll(resp.Body)
		})
	}
}

// Requests pipelined behind one whose answer is a stream are answered, in order, after it.
func TestPipelinedBehindStream(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(streamHandler), func(s *Server) {
		s.WatchAfter = time.Millisecond
		s.SendTimeout = time.Second
	})
	c, br := dialRaw(t, addr)
	io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: h\r\n\r\nPOST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhiGET /stream HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	want := []string{"data: 0\n\ndata: 1\n\ndata: 2\n\n", "POST /a ? host=h x= len=2 body=hi", "data: 0\n\ndata: 1\n\ndata: 2\n\n", "GET /b ? host=h x= len=0 body="}
	for i, w := range want {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || string(b) != w {
			t.Fatalf("answer %d: %q, %v; want %q", i, b, err, w)
		}
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after the last answer: %d, %v; want EOF", n, err)
	}
}

// A client that half-closes after its request still gets the answer of a request that ends
// before the connection is watched.
func TestHalfCloseAfterQuickRequest(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(echo), func(s *Server) { s.WatchAfter = time.Minute })
	c, br := dialRaw(t, addr)
	io.WriteString(c, "POST /q HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi")
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil || !strings.Contains(string(b), "body=hi") {
		t.Fatalf("%q, %v", b, err)
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after the answer: %d, %v; want EOF", n, err)
	}
}

// Expect: an expectation other than 100-continue is refused with 417 and the connection
// closed; HTTP/1.0's Expect is ignored; a 100 goes out once, only when the handler reads.
func TestExpectations(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(echo))
	for _, tt := range []struct{ name, raw, want string }{
		{"other", "POST / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\nhi", "HTTP/1.1 417 "},
		{"two", "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi", "HTTP/1.1 417 "},
		{"1.0 ignored", "POST / HTTP/1.0\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\nhi", "HTTP/1.1 200 "},
		{"no body", "GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n", "HTTP/1.1 200 "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := exchange(t, addr, tt.raw)
			if !strings.HasPrefix(got, tt.want) || strings.Contains(got, "100 Continue") {
				t.Errorf("got %q, want %q first and no 100", got, tt.want)
			}
		})
	}
	t.Run("once", func(t *testing.T) {
		c, br := dialRaw(t, addr)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
		line, _ := br.ReadString('\n')
		_, _ = br.ReadString('\n')
		if line != "HTTP/1.1 100 Continue\r\n" {
			t.Fatalf("%q", line)
		}
		io.WriteString(c, "2\r\nhi\r\n")
		io.WriteString(c, "3\r\nyou\r\n0\r\n\r\n")
		rest, _ := io.ReadAll(br)
		if strings.Contains(string(rest), "100 Continue") || !strings.HasSuffix(string(rest), "body=hiyou") {
			t.Errorf("%q", rest)
		}
	})
}

// A connection that closes after its answer (HTTP/1.0 without keep-alive, Connection: close)
// ends with a FIN, not a reset, also when the client sent something more after its request
// that the server never read: the empty line old clients send after a POST body (see
// awaitRequest), come after the body. Closed with it unread, the socket sends a reset, which
// can destroy the answer before the client reads it, and makes a close-delimited HTTP/1.0
// answer look cut.
func TestCloseAfterAnswerWithoutReset(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{}, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		started <- struct{}{}
		<-release
		if r.URL.Path == "/stream" {
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, "answer")
	}), func(s *Server) { s.WatchAfter = time.Minute }) // no watcher reads the extra bytes
	for _, tt := range []struct{ name, raw string }{
		{"1.0", "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi"},
		{"1.0 stream", "POST /stream HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi"},
		{"1.1 close", "POST / HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, br := dialRaw(t, addr)
			io.WriteString(c, tt.raw)
			<-started
			io.WriteString(c, "\r\n") // in the server's socket buffer, unread, as the answer goes
			release <- struct{}{}
			b, err := io.ReadAll(br)
			if err != nil || !strings.HasSuffix(string(b), "answer") {
				t.Fatalf("got %q, %v; want the answer and the end of the stream (a FIN, not a reset)", b, err)
			}
		})
	}
}

// The empty line an old client sends after a POST body (see awaitRequest) is no request: the
// watcher reads past it, so that the client leaving while the request runs still cancels it,
// whether the line came with the body or while the watcher was reading.
func TestEmptyLineAfterBodyKeepsWatch(t *testing.T) {
	for _, tt := range []struct {
		name       string
		with, late string
	}{
		{"with the body", "\r\n", ""},
		{"while watched", "", "\r\n"},
		{"both", "\n", "\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cancelled := make(chan error, 1)
			reading := make(chan struct{}, 1)
			s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				select {
				case <-r.Context().Done():
					cancelled <- r.Context().Err()
				case <-time.After(10 * time.Second):
					cancelled <- errors.New("the request was not cancelled within 10s of the client leaving")
				}
			}), func(s *Server) { s.WatchAfter = time.Millisecond })
			s.watching = func() {
				select {
				case reading <- struct{}{}:
				default:
				}
			}
			c, _ := dialRaw(t, addr)
			io.WriteString(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi"+tt.with)
			if tt.late != "" {
				select {
				case <-reading:
				case <-time.After(10 * time.Second):
					t.Fatal("no watcher read past the empty line within 10s")
				}
				io.WriteString(c, tt.late)
			}
			c.Close()
			if err := <-cancelled; err == nil || err.Error() != "context canceled" {
				t.Fatal(err)
			}
		})
	}
}

// After the watcher read past empty lines, the next request on the connection is read whole.
func TestEmptyLinesSeenByWatcherAreKept(t *testing.T) {
	reading := make(chan struct{}, 4)
	release := make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			_, _ = io.ReadAll(r.Body)
			<-release
		}
		echo(w, r)
	}), func(s *Server) { s.WatchAfter = time.Nanosecond })
	s.watching = func() { reading <- struct{}{} }
	c, _ := dialRaw(t, addr)
	io.WriteString(c, "POST /slow HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi\r\n")
	select {
	case <-reading:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("no watcher read past the empty line within 10s")
	}
	io.WriteString(c, "\r\nGET /next HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	close(release)
	b, _ := io.ReadAll(c)
	if !strings.Contains(string(b), "POST /slow ?") || !strings.Contains(string(b), "GET /next ?") {
		t.Errorf("got %q, want both answers", b)
	}
}
