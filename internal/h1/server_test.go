package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start serves h on a loopback port until the test ends.
func start(t *testing.T, h http.Handler, opts ...func(*Server)) (*Server, string) {
	t.Helper()
	s := &Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second}
	for _, o := range opts {
		o(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
		waitConns(t, s)
	})
	return s, ln.Addr().String()
}

// waitConns waits until every connection goroutine has ended, so goleak sees none.
func waitConns(t *testing.T, s *Server) {
	t.Helper()
	for i := 0; ; i++ {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			return
		}
		if i > 5000 {
			t.Fatalf("%d connections still open", n)
		}
		time.Sleep(time.Millisecond)
	}
}

func client(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// echo answers with the method, path, query, host, a header and the body it read.
func echo(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%s %s ?%s host=%s x=%s len=%d body=%s", r.Method, r.URL.Path, r.URL.RawQuery, r.Host,
		r.Header.Get("X-Test"), r.ContentLength, b)
}

func TestKeepAliveWithNetHTTPClient(t *testing.T) {
	var mu sync.Mutex
	remotes := map[string]bool{}
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr] = true
		mu.Unlock()
		echo(w, r)
	}))
	c := client(t)
	for i := 0; i < 20; i++ {
		body := strings.Repeat("b", i*700) // past the pending buffer from i = 6 on: chunked answers
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/x?q=1", strings.NewReader(body))
		req.Header.Set("X-Test", fmt.Sprint(i))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := fmt.Sprintf("POST /v1/x ?q=1 host=%s x=%d len=%d body=%s", addr, i, len(body), body)
		if string(got) != want {
			t.Fatalf("request %d: got %.80q, want %.80q", i, got, want)
		}
		if resp.Header.Get("Date") == "" {
			t.Errorf("request %d: no Date header", i)
		}
	}
	if len(remotes) != 1 {
		t.Errorf("20 sequential requests came over %d connections, want 1 (keep-alive)", len(remotes))
	}
}

// exchange writes raw to a new connection and returns everything the server sends until it
// closes the connection.
func exchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the answer: %v (got %q)", err, b)
	}
	return string(b)
}

// dialRaw opens a connection to addr for a test to speak HTTP on by hand: closed when the test
// ends, and no read or write on it waits more than 10 s.
func dialRaw(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func TestMalformedRequestsAnsweredAndClosed(t *testing.T) {
	reject := func(status int, code, msg string) (string, []byte) {
		return "application/json", fmt.Appendf(nil, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":%q}}`, msg, code)
	}
	_, addr := start(t, http.HandlerFunc(echo), func(s *Server) { s.Reject = reject; s.MaxHeaderBytes = 1024 })
	tests := []struct {
		name, raw string
		status    int
		code      string
	}{
		{"garbage", "HELLO\r\n\r\n", 400, "malformed_http_request"},
		{"no version", "GET /\r\nHost: a\r\n\r\n", 400, "malformed_http_request"},
		{"bad version", "GET / HTTQ/1.1\r\nHost: a\r\n\r\n", 400, "malformed_http_request"},
		{"http/2", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505, "http_version_not_supported"},
		{"space in target", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400, "malformed_http_request"},
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400, "malformed_http_request"},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "malformed_http_request"},
		{"space before colon", "GET / HTTP/1.1\r\nHost: a\r\nX-A : 1\r\n\r\n", 400, "malformed_http_request"},
		{"folded header", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n 2\r\n\r\n", 400, "malformed_http_request"},
		{"no colon", "GET / HTTP/1.1\r\nHost: a\r\nX-A\r\n\r\n", 400, "malformed_http_request"},
		{"nul in value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\x002\r\n\r\n", 400, "malformed_http_request"},
		{"bare cr in value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r2\r\n\r\n", 400, "malformed_http_request"},
		{"cl and te", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "malformed_http_request"},
		{"two lengths", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400, "malformed_http_request"},
		{"length list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc", 400, "malformed_http_request"},
		{"negative length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -3\r\n\r\nabc", 400, "malformed_http_request"},
		{"gzip te", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, "unsupported_transfer_encoding"},
		{"te in 1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "malformed_http_request"},
		{"bad expect", "POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\na", 417, "expectation_failed"},
		{"long line", "GET /" + strings.Repeat("a", 2000) + " HTTP/1.1\r\nHost: a\r\n\r\n", 414, "uri_too_long"},
		{"big headers", "GET / HTTP/1.1\r\nHost: a\r\nX-A: " + strings.Repeat("a", 2000) + "\r\n\r\n", 431, "header_too_large"},
		{"bad target", "GET http://[::1 HTTP/1.1\r\nHost: a\r\n\r\n", 400, "malformed_http_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := exchange(t, addr, tt.raw)
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
			if err != nil {
				t.Fatalf("not an HTTP answer: %v: %q", err, got)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !resp.Close || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("got %d close=%v %q, want %d, Connection: close, JSON", resp.StatusCode, resp.Close,
					resp.Header.Get("Content-Type"), tt.status)
			}
			if !bytes.Contains(b, []byte(`"code":"`+tt.code+`"`)) {
				t.Errorf("body %s does not carry code %s", b, tt.code)
			}
		})
	}
}

func TestWireDetails(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/inject":
			w.Header().Set("X-Evil", "a\r\nSet-Cookie: x=1")
			w.Header()["Bad Name"] = []string{"1"}
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
			return
		}
		echo(w, r)
	}))
	tests := []struct {
		name, raw string
		want      []string // substrings of the whole exchange, in order
		not       []string
	}{
		{"http/1.0 closes", "GET /a HTTP/1.0\r\n\r\n",
			[]string{"HTTP/1.1 200 OK\r\n", "Connection: close\r\n", "GET /a ? host= x= len=0 body="}, nil},
		{"http/1.0 keep-alive then close", "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n",
			[]string{"Connection: keep-alive\r\n", "GET /a ?", "Connection: close\r\n", "GET /b ?"}, nil},
		{"pipelined and lf only", "GET /1 HTTP/1.1\nHost: h\n\nPOST /2 HTTP/1.1\r\nhost: h\r\nx-test: 7\r\ncontent-length: 3\r\n\r\nabcGET /3 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
			[]string{"GET /1 ? host=h", "POST /2 ? host=h x=7 len=3 body=abc", "Connection: close", "GET /3 ?"}, nil},
		{"leading empty lines", "\r\n\r\nGET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
			[]string{"GET /x ? host=h"}, nil},
		{"chunked body with trailer, then another request",
			"POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n" +
				"GET /d HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
			[]string{"POST /c ? host=h x= len=-1 body=abcde", "GET /d ?"}, nil},
		{"escaped path and query", "GET /a%20b?x=%41 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
			[]string{"GET /a b ?x=%41"}, nil},
		{"absolute form", "GET http://other:9/p?q HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
			[]string{"GET /p ?q host=other:9"}, nil},
		{"head", "HEAD /h HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
			[]string{"HTTP/1.1 200 OK\r\n"}, []string{"HEAD /h"}},
		{"no content", "GET /nocontent HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
			[]string{"HTTP/1.1 204 No Content\r\n"}, []string{"Content-Length", "chunked"}},
		{"header injection", "GET /inject HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
			[]string{"X-Evil: a  Set-Cookie: x=1\r\n"}, []string{"\r\nSet-Cookie", "Bad Name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := exchange(t, addr, tt.raw)
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%q not found (in order) in %q", w, got)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("%q found in %q", n, got)
				}
			}
		})
	}
}

func TestAnswersParseWithNetHTTP(t *testing.T) {
	// Each answer shape, read back by net/http's parser over one kept-alive connection.
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/length":
			w.Header().Set("Content-Length", "5")
			_, _ = io.WriteString(w, "hello")
		case "/small":
			_, _ = io.WriteString(w, "small")
		case "/big":
			_, _ = w.Write(bytes.Repeat([]byte("x"), 10000))
		case "/flushed":
			_, _ = io.WriteString(w, "one")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "two")
		case "/status":
			w.WriteHeader(http.StatusTeapot)
			_, _ = io.WriteString(w, "tea")
		case "/empty":
		}
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for _, tt := range []struct {
		path, body string
		status     int
		chunked    bool
	}{
		{"/length", "hello", 200, false},
		{"/small", "small", 200, false},
		{"/big", strings.Repeat("x", 10000), 200, true},
		{"/flushed", "onetwo", 200, true},
		{"/status", "tea", 418, false},
		{"/empty", "", 200, false},
	} {
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: h\r\n\r\n", tt.path)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: body: %v", tt.path, err)
		}
		chunked := len(resp.TransferEncoding) > 0
		if string(b) != tt.body || resp.StatusCode != tt.status || chunked != tt.chunked || resp.Close {
			t.Errorf("%s: got %d chunked=%v close=%v %.40q; want %d chunked=%v %.40q", tt.path, resp.StatusCode,
				chunked, resp.Close, b, tt.status, tt.chunked, tt.body)
		}
	}
}

func TestStreamFlushesEachWrite(t *testing.T) {
	next := make(chan struct{})
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			<-next // the client must have this event before the next is written
		}
	}))
	resp, err := client(t).Get("http://" + addr + "/s")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 3; i++ {
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("data: %d\n", i) {
			t.Fatalf("event %d: %q, %v", i, line, err)
		}
		_, _ = br.ReadString('\n')
		next <- struct{}{}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after the events: %q, %v", rest, err)
	}
}

func TestExpectContinue(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/deny" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		echo(w, r)
	}))
	c, br := dialRaw(t, addr)
	io.WriteString(c, "POST /ok HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
	line, _ := br.ReadString('\n')
	if line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("before the body: %q, want 100 Continue", line)
	}
	_, _ = br.ReadString('\n')
	io.WriteString(c, "abc")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "body=abc") {
		t.Errorf("got %q", b)
	}
	// A handler that answers without reading gets no 100, and the connection closes.
	io.WriteString(c, "POST /deny HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 401 || !resp.Close {
		t.Errorf("deny: %d close=%v, want 401 and close", resp.StatusCode, resp.Close)
	}
}

func TestUnreadBody(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	c, br := dialRaw(t, addr)
	// A small unread body is drained and the connection carries the next request.
	small := strings.Repeat("s", 1000)
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n%sGET / HTTP/1.1\r\nHost: h\r\n\r\n", len(small), small)
	for i := 0; i < 2; i++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		_, _ = io.ReadAll(resp.Body)
		if resp.Close {
			t.Fatalf("answer %d closes the connection", i)
		}
	}
	// A large one closes it.
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", 10<<20)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	if _, err := br.ReadByte(); err == nil {
		t.Error("the connection stayed open after a 10 MB body the handler did not read")
	}
}

// A client that leaves once its request's body is read cancels the request: read through the
// body, and taken in place (InPlace), which begins the watch for it as a read to the end does.
func TestClientLeavingCancelsRequest(t *testing.T) {
	t.Run("read", func(t *testing.T) { testClientLeavingCancelsRequest(t, false) })
	t.Run("in place", func(t *testing.T) { testClientLeavingCancelsRequest(t, true) })
}

func testClientLeavingCancelsRequest(t *testing.T, inPlace bool) {
	cancelled := make(chan error, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if inPlace {
			if p, ok := r.Body.(interface{ InPlace() ([]byte, bool) }).InPlace(); !ok || string(p) != "hi" {
				t.Errorf("InPlace = %q, %v", p, ok)
			}
		} else {
			_, _ = io.ReadAll(r.Body)
		}
		select {
		case <-r.Context().Done():
			cancelled <- r.Context().Err()
		case <-time.After(20 * time.Second):
			cancelled <- errors.New("the request was not cancelled within 20s of the client leaving")
		}
	}), func(s *Server) { s.WatchAfter = time.Millisecond })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi")
	c.Close()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestPipelinedByteSeenByWatcherIsKept(t *testing.T) {
	reading := make(chan struct{}, 4)
	release := make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
			if r.Context().Err() != nil {
				t.Error("a pipelined request cancelled the one before it")
			}
		}
		echo(w, r)
	}), func(s *Server) { s.WatchAfter = time.Nanosecond })
	s.watching = func() { reading <- struct{}{} }
	c, _ := dialRaw(t, addr)
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
	<-reading // the watcher is reading the connection now
	io.WriteString(c, "GET /next HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	close(release)
	b, _ := io.ReadAll(c)
	if !strings.Contains(string(b), "GET /slow ?") || !strings.Contains(string(b), "GET /next ?") {
		t.Errorf("got %q, want both answers", b)
	}
}

func TestPanics(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/abort":
			_, _ = io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		default:
			panic("boom")
		}
	}), func(s *Server) {
		s.Log = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil))
	})
	got := exchange(t, addr, "GET /boom HTTP/1.1\r\nHost: h\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 500 Internal Server Error\r\n") || !strings.Contains(got, "Connection: close") {
		t.Errorf("a panic before any write: %q, want a 500 and close", got)
	}
	got = exchange(t, addr, "GET /abort HTTP/1.1\r\nHost: h\r\n\r\n")
	if !strings.Contains(got, "partial") || strings.Contains(got, "0\r\n\r\n") {
		t.Errorf("an aborted stream: %q, want the partial answer cut off without its last chunk", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logs.String(), "panic serving request"); n != 1 || !strings.Contains(logs.String(), "boom") {
		t.Errorf("log: %q, want one panic line with its value (none for ErrAbortHandler)", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestShutdownDrains(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		_, _ = io.WriteString(w, "done")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	addr := ln.Addr().String()

	idle, err := net.Dial("tcp", addr) // a kept-alive connection, idle after one answer
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	ibr := bufio.NewReader(idle)
	if resp, err := http.ReadResponse(ibr, nil); err != nil {
		t.Fatal(err)
	} else {
		_, _ = io.ReadAll(resp.Body)
	}

	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
	<-started

	// A shutdown with no time left reports it and leaves the request running.
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(expired); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown with a done context: %v", err)
	}
	if _, err := ibr.ReadByte(); err == nil {
		t.Error("the idle connection is still open after Shutdown")
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "done" || !resp.Close {
		t.Errorf("the request under way: %q close=%v, want it answered with Connection: close", b, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the listener still accepts after Shutdown")
	}
}

func TestCloseCancelsRequests(t *testing.T) {
	started := make(chan struct{})
	got := make(chan error, 1)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		got <- r.Context().Err()
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	<-started
	_ = s.Close()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("the request's context: %v", err)
	}
	<-served
	waitConns(t, s)
}

func TestRequestFieldsMatchNetHTTP(t *testing.T) {
	raws := []string{
		"POST /v1/chat/completions HTTP/1.1\r\nhost: gw:8080\r\ncontent-type: application/json\r\nauthorization: Bearer k\r\nx-stainless-lang: python\r\nX-Custom-Thing: a\r\nx-custom-thing: b\r\ncontent-length: 2\r\n\r\n{}",
		"GET /v1/models?x=1 HTTP/1.0\r\nUser-Agent: curl\r\nAccept: */*\r\n\r\n",
		"GET /a%2Fb HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
	}
	// A head that is in the read buffer whole is parsed in one pass (headInBuffer); one that
	// comes a byte at a time, line by line.
	var inParts []string
	for _, raw := range raws {
		inParts = append(inParts, "\r\n"+raw) // an empty line first: line by line too
	}
	for i, raw := range append(raws, append(raws, inParts...)...) {
		want, err := http.ReadRequest(bufio.NewReader(strings.NewReader(strings.TrimPrefix(raw, "\r\n"))))
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = strings.NewReader(raw)
		if i >= len(raws) && i < 2*len(raws) {
			r = iotest.OneByteReader(r)
		}
		c := readerConn(r)
		if err := c.readRequest(); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		got := &c.base
		type fields struct {
			Method, Proto, Host, RequestURI, Path, RawPath, RawQuery string
			Header                                                   http.Header
			ContentLength                                            int64
			Close                                                    bool
		}
		f := func(r *http.Request) fields {
			return fields{r.Method, r.Proto, r.Host, r.RequestURI, r.URL.Path, r.URL.RawPath, r.URL.RawQuery,
				r.Header, r.ContentLength, r.Close}
		}
		if d := cmp.Diff(f(want), f(got)); d != "" {
			t.Errorf("%q: (-net/http +h1):\n%s", raw, d)
		}
	}
}

// readerConn is a connection that reads its requests from r and writes its answers nowhere,
// for calling readRequest directly.
func readerConn(r io.Reader) *conn {
	c := &conn{s: &Server{}, remote: "r"}
	c.body.c = c
	c.bufs = &connBufs{br: bufio.NewReader(r), bw: bufio.NewWriter(io.Discard)}
	return c
}
