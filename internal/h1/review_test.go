package h1

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
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
