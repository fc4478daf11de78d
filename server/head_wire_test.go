package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHeadWire: on one kept-alive connection, a HEAD is answered with the head GET gets (the same
// status and fields, Content-Length included: before, a handler that wrote its body without
// declaring its length sent HEAD's head without one) and no body, so that the GET sent after it on the
// same connection reads its own answer. For every kind of endpoint: a listing, a model, a 404 of
// a model, /healthz, /metrics, a stored response's 404, a POST-only endpoint's 405, an unknown
// URL's 404.
func TestHeadWire(t *testing.T) {
	g, _ := keyed(t)
	addr := strings.TrimPrefix(g.ts.URL, "http://")
	auth := "Authorization: Bearer " + laptopKey + "\r\n"
	fields := func(h http.Header) map[string]string {
		m := map[string]string{}
		for k, vs := range h {
			if k != "Date" && k != "X-Request-Id" && k != "Content-Length" { // compared below
				m[k] = strings.Join(vs, ",")
			}
		}
		return m
	}
	for _, path := range []string{"/v1/models", "/v1/models/saif", "/v1/models/nope", "/healthz", "/metrics",
		"/v1/responses/resp_nope", "/v1/chat/completions", "/v1/embeddings", "/nope"} {
		for _, pipelined := range []bool{false, true} {
			name := path
			if pipelined {
				name += " pipelined"
			}
			t.Run(name, func(t *testing.T) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				head := "HEAD " + path + " HTTP/1.1\r\nHost: localhost\r\n" + auth + "\r\n"
				get := "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n" + auth + "\r\n"
				if pipelined {
					_, _ = io.WriteString(c, head+get)
				} else {
					_, _ = io.WriteString(c, head)
				}
				hr, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead})
				if err != nil {
					t.Fatalf("HEAD: %v", err)
				}
				if !pipelined {
					_, _ = io.WriteString(c, get)
				}
				gr, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
				if err != nil {
					t.Fatalf("GET after HEAD: %v (the HEAD answer's framing is wrong)", err)
				}
				body, err := io.ReadAll(gr.Body)
				if err != nil {
					t.Fatalf("GET body: %v", err)
				}
				if hr.StatusCode != gr.StatusCode {
					t.Errorf("HEAD %d, GET %d", hr.StatusCode, gr.StatusCode)
				}
				if diff := cmp.Diff(fields(gr.Header), fields(hr.Header)); diff != "" {
					t.Errorf("fields (-GET's +HEAD's):\n%s", diff)
				}
				if hr.Header.Get("Content-Length") == "" && gr.Header.Get("Transfer-Encoding") == "" {
					t.Errorf("HEAD has no Content-Length; GET's body is %d bytes", len(body))
				}
				want := int64(len(body))
				if strings.Contains(string(body), "GET "+path) || strings.Contains(string(body), "GET is not allowed") {
					want++ // a 404 or 405 message names the method, and HEAD is a letter longer
				}
				if gr.ContentLength >= 0 && hr.ContentLength != want {
					t.Errorf("HEAD Content-Length %d, want %d (GET's body %q)", hr.ContentLength, want, body)
				}
				// Nothing more on the wire: the HEAD answer had no body.
				_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				if n, _ := br.Read(make([]byte, 1)); n != 0 || br.Buffered() != 0 {
					t.Errorf("bytes after the GET answer")
				}
			})
		}
	}
}
