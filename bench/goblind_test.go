package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
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
				if err := f.init([]byte(tc.head)); err != nil {
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
		if err := f.init([]byte(head)); err == nil {
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
