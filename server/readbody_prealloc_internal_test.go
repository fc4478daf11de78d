package server

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"testing"
)

// stalledBody is a request body of which only the first bytes come: then the read deadline.
type stalledBody struct{ r io.Reader }

func (b *stalledBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, os.ErrDeadlineExceeded
	}
	return n, err
}

func (*stalledBody) Close() error { return nil }

// TestReadBodyAllocatesAsBytesCome: readBody made its buffer as large as the Content-Length the
// client stated, up to max_body_bytes, before a byte of the body had come, so a client sending a
// head that states 10 MiB and then a few bytes (it has 60 s to send the rest) had the gateway
// hold 10 MiB for each such request. A stated length above 1 MiB is now allocated as its bytes
// come, as an upstream's answer is (CONFIG.md, "[targets.NAME]"). The test counts the bytes
// readBody allocates for such a request, and checks a whole body still reads.
func TestReadBodyAllocatesAsBytesCome(t *testing.T) {
	const limit = 10 << 20
	r, err := http.NewRequest(http.MethodPost, "http://localhost/v1/chat/completions", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.ContentLength = limit
	var e *apiError
	alloc := allocBytes(func() {
		r.Body = &stalledBody{r: bytes.NewReader([]byte(`{"model":"m",`))}
		_, _, e = readBody(r, limit, nil)
	})
	if e == nil || e.Code != "request_timeout" {
		t.Fatalf("readBody: %v, want the request_timeout", e)
	}
	t.Logf("a head stating %d bytes, 13 sent: %d bytes allocated", limit, alloc)
	if alloc > 2<<20 {
		t.Errorf("a head stating %d bytes, 13 sent: %d bytes allocated (more than 2 MiB)", limit, alloc)
	}
	for _, n := range []int{0, 100, 1 << 20, 1<<20 + 1, 3<<20 + 5, limit} {
		body := bytes.Repeat([]byte("x"), n)
		for _, stated := range []int64{int64(n), -1} {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), stated
			got, _, e := readBody(r, limit, nil)
			if e != nil || !bytes.Equal(got, body) {
				t.Fatalf("%d bytes (stated %d): %d read, %v", n, stated, len(got), e)
			}
		}
	}
}
