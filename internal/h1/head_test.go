package h1

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHeadLengthAsGet: a HEAD answer whose handler writes its body without declaring a length
// carries the Content-Length GET's answer gets (the length written, when the handler returns
// within the held-back body), and none where GET's goes out chunked (a longer body, or one
// flushed). Before, a HEAD answer had a length only when the handler declared one. Each HEAD is
// followed by a GET on the same connection, which reads its own answer.
func TestHeadLengthAsGet(t *testing.T) {
	long := strings.Repeat("x", 10000)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/short":
			_, _ = io.WriteString(w, "hello")
		case "/long":
			_, _ = io.WriteString(w, long)
		case "/flushed":
			_, _ = io.WriteString(w, "he")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "llo")
		case "/declared":
			w.Header().Set("Content-Length", "5")
			_, _ = io.WriteString(w, "hello")
		}
	}))
	type framing struct {
		Length  int64
		Chunked bool
	}
	c, br := dialRaw(t, addr)
	defer c.Close()
	for _, path := range []string{"/short", "/long", "/flushed", "/declared"} {
		_, _ = io.WriteString(c, "HEAD "+path+" HTTP/1.1\r\nHost: h\r\n\r\nGET "+path+" HTTP/1.1\r\nHost: h\r\n\r\n")
		head, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead})
		if err != nil {
			t.Fatalf("%s HEAD: %v", path, err)
		}
		get, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		if err != nil {
			t.Fatalf("%s GET after HEAD: %v", path, err)
		}
		body, err := io.ReadAll(get.Body)
		if err != nil {
			t.Fatalf("%s GET body: %v", path, err)
		}
		want := framing{get.ContentLength, len(get.TransferEncoding) > 0}
		gotHead := framing{head.ContentLength, len(head.TransferEncoding) > 0}
		if want.Chunked {
			want.Chunked = false // a HEAD answer has no body to chunk: neither length nor chunked
		}
		if diff := cmp.Diff(want, gotHead); diff != "" {
			t.Errorf("%s: HEAD framing (-GET's +HEAD's):\n%s", path, diff)
		}
		if get.ContentLength >= 0 && get.ContentLength != int64(len(body)) {
			t.Errorf("%s: GET length %d, body %d", path, get.ContentLength, len(body))
		}
	}
}
