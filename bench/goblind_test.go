//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hayula/gateway/internal/conntest"
)

// The framer ends a message exactly where its body ends, whichever way the body is framed and
// however the bytes are split across reads, and leaves what follows for the next message.
func TestFramer(t *testing.T) {
	tests := []struct {
		name, head, body string
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", "hello"},
		{"length zero", "POST / HTTP/1.1\r\ncontent-length: 0\r\n", ""},
		{"no body", "HTTP/1.1 204 No Content\r\n", ""},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n",
			"5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n"},
		{"chunked with trailer", "HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n",
			"3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n"},
		{"chunk data with CRLF and digits", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n",
			"A\r\n0\r\n\r\n0\r\n\r\n\r\n0\r\n\r\n"},
	}
	const next = "NEXT"
	for _, tc := range tests {
		for split := 1; split <= len(tc.body)+len(next); split++ {
			t.Run(fmt.Sprintf("%s/split %d", tc.name, split), func(t *testing.T) {
				var f framer
				if _, err := f.init([]byte(tc.head), false); err != nil {
					t.Fatal(err)
				}
				in := []byte(tc.body + next)
				end := -1
				for off := 0; off <= len(in) && end < 0; off += split {
					piece := in[off:min(off+split, len(in))]
					used, done := f.feed(piece)
					if done {
						end = off + used
					} else if used != len(piece) {
						t.Fatalf("not done, but used %d of %d bytes", used, len(piece))
					}
				}
				if end != len(tc.body) {
					t.Errorf("message ended at %d, want %d", end, len(tc.body))
				}
			})
		}
	}
	for _, head := range []string{"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"} {
		var f framer
		if _, err := f.init([]byte(head), false); err == nil {
			t.Errorf("%q framed", head)
		}
	}
}

// Through goblind, a request reaches the upstream byte for byte, whole answers and streams come
// back as sent, keep-alive holds for the next request, and each event of a stream reaches the
// client before the upstream writes the next one (nothing is held back).
func TestGoBlindRelays(t *testing.T) {
	next := make(chan struct{})
	var mu sync.Mutex
	var gotBody []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		gotBody = b
		mu.Unlock()
		if r.URL.Path != "/stream" {
			w.Header().Set("Content-Length", "11")
			_, _ = io.WriteString(w, "hello world")
			return
		}
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			if i < 2 {
				select {
				case <-next:
				case <-time.After(10 * time.Second):
					return
				}
			}
		}
	}))
	defer up.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go blindServe(ln, strings.TrimPrefix(up.URL, "http://"))

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	body := strings.Repeat("x", 20000) // longer than goblind's buffer: the body comes in pieces
	for i := range 2 {
		fmt.Fprintf(c, "POST /whole HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		mu.Lock()
		got := string(gotBody)
		mu.Unlock()
		if string(b) != "hello world" || got != body {
			t.Fatalf("request %d: answer %q, upstream got %d bytes", i, b, len(got))
		}
	}
	fmt.Fprintf(c, "POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	events := bufio.NewReader(resp.Body)
	var got []string
	for i := range 3 {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		_, _ = events.ReadString('\n')
		got = append(got, strings.TrimSpace(line))
		if i < 2 {
			next <- struct{}{} // the upstream writes the next event only once this one arrived
		}
	}
	if rest, _ := io.ReadAll(events); len(rest) != 0 || strings.Join(got, ",") != "data: 0,data: 1,data: 2" {
		t.Errorf("events %q, then %q", got, rest)
	}
	// The connection is still good for another request after the chunked answer.
	fmt.Fprintf(c, "POST /whole HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx")
	if resp, err = http.ReadResponse(br, nil); err != nil || !bytes.Equal(mustRead(t, resp.Body), []byte("hello world")) {
		t.Fatalf("after the stream: %v", err)
	}
}

func mustRead(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The framer ends each message where net/http's parser does, for answers
// written by a real net/http server (Content-Length and flushed SSE, the fake upstream's two
// shapes), whatever the read boundaries.
func TestFramerAgainstNetHTTP(t *testing.T) {
	f := newFakeUpstream(8, 0)
	up := httptest.NewServer(f)
	defer up.Close()
	raw := func(body string) []byte {
		c, err := net.Dial("tcp", strings.TrimPrefix(up.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		b, _ := io.ReadAll(c)
		return b
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, body := range []string{`{"stream":false}`, `{"stream":true}`} {
		msg := raw(body)
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(msg)), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		msg = append(msg, "NEXT"...)
		head := bytes.Index(msg, []byte("\r\n\r\n"))
		for range 500 {
			var fr framer
			if _, err := fr.init(msg[:head+2], false); err != nil {
				t.Fatal(err)
			}
			off, end := head+4, -1
			for off < len(msg) && end < 0 {
				n := min(1+rng.IntN(40), len(msg)-off)
				used, done := fr.feed(msg[off : off+n])
				if done {
					end = off + used
				}
				off += n
			}
			if end != len(msg)-4 {
				t.Fatalf("%s: ended at %d, want %d", body, end, len(msg)-4)
			}
		}
	}
}

// dialBlind starts goblind in front of the upstream at upURL and returns a connection to it;
// both are closed when the test ends.
func dialBlind(t *testing.T, upURL string) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go blindServe(ln, strings.TrimPrefix(upURL, "http://"))
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// An answer to HEAD has no body whatever its Content-Length says: goblind must not wait for one,
// and the connection carries the next request.
func TestGoBlindHeadAnswer(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		if r.Method != http.MethodHead {
			_, _ = io.WriteString(w, "hello")
		}
	}))
	defer up.Close()
	c := dialBlind(t, up.URL)
	fmt.Fprintf(c, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(time.Second)) // a bound on a hang, not a wait
	br := bufio.NewReader(c)
	if _, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead}); err != nil {
		t.Fatalf("HEAD answer not relayed: %v", err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the GET after a HEAD got no answer: %v", err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "hello" {
		t.Errorf("the GET after a HEAD got %q", b)
	}
}

// An interim answer (100 Continue) is relayed and followed by the final one.
func TestGoBlindInterimAnswer(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "final")
	}))
	defer up.Close()
	c := dialBlind(t, up.URL)
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}")
	_ = c.SetReadDeadline(time.Now().Add(time.Second)) // a bound on a hang, not a wait
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	for err == nil && resp.StatusCode == http.StatusContinue {
		resp, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		t.Fatalf("no final answer after 100 Continue: %v", err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "final" {
		t.Errorf("final answer %q", b)
	}
}

// A goblind column whose every request failed has no p50; the reading line must not print
// the gateway's whole p50 as "what the gateway's own work adds".
func TestGoBlindLineWithoutSamples(t *testing.T) {
	us := micros
	chat := &result{sc: &scenario{name: "chat c=1", conc: 1}, cols: []*column{
		{name: "direct", p50: us(100), p99: us(200), thr: []float64{1000}},
		{name: "gateway", p50: us(150), p99: us(300), thr: []float64{700}},
		{name: "goblind", errors: 500, firstErr: io.EOF}, // every request failed: no rounds
		{name: "nginx", p50: us(180), p99: us(300), thr: []float64{800}},
	}}
	r := &report{opts: options{Rounds: 1, Chunks: 8, LogLevel: "info"}, results: []*result{chat},
		memory: memoryResult{Idle: memory{RSS: 12 << 20}}}
	md := r.markdown()
	for _, bad := range []string{"gateway − goblind (a Go relay that only frames and copies): +150 µs", "goblind − nginx: −180 µs"} {
		if strings.Contains(md, bad) {
			t.Errorf("report prints %q for a column with no samples", bad)
		}
	}
}

// goblind asks for no keepalive probes on either side, as nginx does not and the gateway does
// not on loopback: read on its listener's accepted end and its dialed end, beside an end net made
// with its defaults, which has them (so the reading can tell).
func TestGoBlindHasNoProbes(t *testing.T) {
	keepalive := func(c net.Conn) int {
		t.Helper()
		return conntest.SockOpt(t, c, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
	}
	ln, err := blindListen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	plain, accepted := conntest.Pair(t, ln, (&net.Dialer{}).DialContext)
	dialed, _ := conntest.Pair(t, ln, func(_ context.Context, _, addr string) (net.Conn, error) { return blindDial(addr) })
	if keepalive(plain) == 0 {
		t.Fatal("net's own dialed end reads without SO_KEEPALIVE: the reading cannot tell")
	}
	if got := keepalive(accepted); got != 0 {
		t.Errorf("goblind's accepted end has SO_KEEPALIVE %d, want 0", got)
	}
	if got := keepalive(dialed); got != 0 {
		t.Errorf("goblind's dialed end has SO_KEEPALIVE %d, want 0", got)
	}
}
