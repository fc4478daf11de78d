package h1

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// A connection whose first byte cannot begin a request line (a TLS ClientHello on the plain-HTTP
// port, above all) is answered 400 and closed as soon as that byte is read: it used to wait out
// the head timeout for a line that was never coming. The head timeout here is an hour, so that
// the answer cannot come from it; the client writes no newline and keeps its side open.
func TestNonTokenFirstByteRejectedAtOnce(t *testing.T) {
	reject := func(status int, code, msg string) (string, []byte) {
		return "application/json", fmt.Appendf(nil, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":%q}}`, msg, code)
	}
	_, addr := start(t, http.HandlerFunc(echo), func(s *Server) {
		s.Reject = reject
		s.ReadHeaderTimeout, s.IdleTimeout = time.Hour, time.Hour
	})
	clientHello := append([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}, bytes.Repeat([]byte{0xab}, 32)...)
	tests := []struct {
		name string
		raw  []byte
	}{
		{"tls client hello", clientHello},
		{"tls after an empty line", append([]byte("\r\n"), clientHello...)},
		{"sslv2 hello", []byte{0x80, 0x2e, 0x01, 0x00, 0x02}},
		{"json without a request line", []byte(`{"model":"saif"`)},
		{"space", []byte(" GET / HTTP/1.1")},
		{"nul", []byte{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, br := dialRaw(t, addr)
			_ = c.SetDeadline(time.Now().Add(5 * time.Second)) // well before the head timeout
			if _, err := c.Write(tt.raw); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || !resp.Close || resp.Header.Get("Content-Type") != "application/json" ||
				!bytes.Contains(body, []byte(`"code":"malformed_http_request"`)) {
				t.Errorf("got %d close=%v %q %s; want 400, Connection: close, a JSON error", resp.StatusCode, resp.Close,
					resp.Header.Get("Content-Type"), body)
			}
			if n, err := br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
				t.Errorf("after the answer: %d bytes, %v; want EOF", n, err)
			}
		})
	}
}
