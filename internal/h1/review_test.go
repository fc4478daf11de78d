package h1

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Tests from the adversarial review: each names what went wrong before its fix.

// A handler that sends its head before reading a body the client sent with Expect:
// 100-continue must not get "100 Continue" written into its answer by the first read.
func TestNoContinueAfterTheHead(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		switch r.URL.Path {
		case "/flush":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 5000))) // past the pending buffer: committed
		}
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "body="+string(b))
	}))
	for _, path := range []string{"/flush", "/big"} {
		t.Run(path, func(t *testing.T) {
			got := exchange(t, addr, "POST "+path+" HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc")
			if strings.Contains(got, "100 Continue") {
				t.Fatalf("100 Continue after the answer's head: %.300q", got)
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			if err != nil || !strings.HasSuffix(string(b), "body=abc") || !resp.Close {
				t.Errorf("got %.60q, %v, close=%v; want the body echoed and Connection: close", b, err, resp.Close)
			}
		})
	}
}

// A client that stops sending a body the handler did not read must not hold the connection's
// goroutine once the answer is out: the drain is bounded in time.
func TestDrainOfStalledBodyEnds(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), func(s *Server) { s.ReadHeaderTimeout = 100 * time.Millisecond })
	for _, tt := range []struct{ name, raw string }{
		{"length", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n0123456789"},
		{"chunked", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n"},
		{"closing", "POST / HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 100\r\n\r\n0123456789"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, br := dialRaw(t, addr)
			_, _ = io.WriteString(c, tt.raw)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.ReadAll(resp.Body)
			// The client sends nothing more; the server must give up on the rest and close.
			if _, err := br.ReadByte(); err != io.EOF {
				t.Fatalf("after the answer: %v, want the server to close the connection (EOF)", err)
			}
		})
	}
}

// Framing fields the handler put in its header map under a name not in canonical form must
// not reach the wire next to the ones the server writes.
func TestFramingFieldsInAnyCase(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["content-length"] = []string{"100"}
		h["transfer-encoding"] = []string{"chunked"}
		h["CONNECTION"] = []string{"keep-alive"}
		_, _ = io.WriteString(w, "ok")
	}))
	got := exchange(t, addr, "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	for _, bad := range []string{"content-length:", "transfer-encoding:", "CONNECTION:"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q written: %q", bad, got)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if err != nil {
		t.Fatalf("%v: %q", err, got)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" || resp.ContentLength != 2 {
		t.Errorf("got %q length %d, want \"ok\" length 2", b, resp.ContentLength)
	}
}

// An informational answer carries no framing fields, none goes to an HTTP/1.0 client (RFC
// 9110 §15.2), and a 100 the handler sent is not sent again by its first read.
func TestInformationalAnswers(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/continue" {
			w.WriteHeader(http.StatusContinue)
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write(b)
			return
		}
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.Header().Set("Content-Length", "2")
		w.WriteHeader(http.StatusEarlyHints)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Run("http/1.1", func(t *testing.T) {
		got := exchange(t, addr, "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
		hints, final, ok := strings.Cut(got, "\r\n\r\n")
		if !ok || !strings.HasPrefix(hints, "HTTP/1.1 103 Early Hints\r\n") || !strings.Contains(hints, "Link: ") {
			t.Fatalf("no 103 with its Link first: %q", got)
		}
		if strings.Contains(hints, "Content-Length") {
			t.Errorf("103 carries Content-Length: %q", hints)
		}
		if !strings.HasPrefix(final, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(final, "\r\n\r\nok") {
			t.Errorf("final answer: %q", final)
		}
	})
	t.Run("100 sent by the handler", func(t *testing.T) {
		got := exchange(t, addr, "POST /continue HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi")
		if n := strings.Count(got, "100 Continue"); n != 1 || !strings.HasSuffix(got, "\r\n\r\nhi") {
			t.Errorf("got %q, want one 100 Continue, then the body", got)
		}
	})
	t.Run("http/1.0", func(t *testing.T) {
		got := exchange(t, addr, "GET / HTTP/1.0\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n") {
			t.Errorf("an HTTP/1.0 client got %q, want the 200 alone", got)
		}
	})
}

// A client that sends a head slowly, or nothing at all, is cut off by ReadHeaderTimeout and
// IdleTimeout, with no answer (coverage for the review; these held before it).
func TestSlowHeadAndIdleAreCut(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(echo), func(s *Server) {
		s.ReadHeaderTimeout = 100 * time.Millisecond
		s.IdleTimeout = 100 * time.Millisecond
	})
	for _, tt := range []struct{ name, raw string }{
		{"idle", ""},
		{"half a head", "GET / HTTP/1.1\r\nHost: h\r\n"},
		{"a request line only", "GET / HTTP/1.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := exchange(t, addr, tt.raw); got != "" {
				t.Errorf("got %q, want the connection closed without an answer", got)
			}
		})
	}
}

// An answer sent before a large body was read (a 413, a 404, an early error) is followed by a
// half-close and a short drain, as for a request the server could not parse, not by a close with
// the body's rest unread: that close resets the connection, and a reset can destroy the answer
// before the client has read it (at once over a real network, where the answer may still be in
// flight). On loopback the answer arrives, but what follows it shows which: the end of the
// stream (a FIN) or ECONNRESET.
func TestEarlyAnswerEndsWithoutReset(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		_, _ = io.WriteString(w, "too large")
	}))
	for _, tt := range []struct{ name, head string }{
		{"length", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100000000\r\n\r\n"},
		{"chunked", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, br := dialRaw(t, addr)
			_, _ = io.WriteString(c, tt.head)
			// More than the server drains, in one chunk when chunked: its rest stays unread.
			chunk := strings.Repeat("x", maxDrain+64<<10)
			if strings.Contains(tt.head, "chunked") {
				chunk = strconv.FormatInt(int64(len(chunk)), 16) + "\r\n" + chunk
			}
			if _, err := io.WriteString(c, chunk); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			// A chunked body may yet end within what is drained: its head does not promise a close.
			if err != nil || string(b) != "too large" || resp.StatusCode != 413 || !resp.Close && tt.name == "length" {
				t.Fatalf("%d %q %v close=%v", resp.StatusCode, b, err, resp.Close)
			}
			if n, err := br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
				t.Fatalf("after the answer: %d bytes, %v; want the end of the stream (a half-close, not a reset)", n, err)
			}
		})
	}
}
