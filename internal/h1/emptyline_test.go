package h1

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An empty line before a request line is skipped (RFC 9112 §2.2), and clients of the HTTP/1.0
// era end a POST body with one. It is skipped as part of the wait for the next request: the
// connection stays idle, under IdleTimeout, and a Shutdown closes it as idle. It was read as the
// start of a request: ReadHeaderTimeout cut the kept-alive connection after 10 s in the gateway,
// and a Shutdown waited for a request that would never come until that deadline or its own.
func TestEmptyLineAfterBodyLeavesConnectionIdle(t *testing.T) {
	s, addr := start(t, http.HandlerFunc(echo), func(s *Server) { s.ReadHeaderTimeout = time.Minute })
	c, br := dialRaw(t, addr)
	if _, err := io.WriteString(c, "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(b) != "POST /a ? host=h x= len=2 body=hi" {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // far below ReadHeaderTimeout
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v: the connection was not idle", err)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("after Shutdown the client read %v, want EOF", err)
	}
}

// The empty lines skipped while idle still count against the four a request may begin with, and
// a request after them is served.
func TestEmptyLinesBeforeRequest(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(echo))
	for _, tc := range []struct {
		name, raw string
		status    int
	}{
		{"after a body", "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi\r\nGET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 200},
		{"bare LFs", "\n\n\nGET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 200},
		{"four", "\r\n\r\n\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 200},
		{"five", "\r\n\r\n\r\n\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 400},
		{"a lone CR", "\r\r\nGET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, br := dialRaw(t, addr)
			if _, err := io.WriteString(c, tc.raw); err != nil {
				t.Fatal(err)
			}
			status, body := 0, ""
			for {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					break
				}
				b, _ := io.ReadAll(resp.Body)
				status, body = resp.StatusCode, string(b)
				if resp.Close {
					break
				}
			}
			if status != tc.status || status == 200 && !strings.HasPrefix(body, "GET /b ") {
				t.Fatalf("last answer %d %q, want %d", status, body, tc.status)
			}
		})
	}
}
