package server

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// TestPooledBodyCapped: the buffer a request's body was read into stays with its reqState for
// the next request only up to maxPooledBody (64 KiB): one large request (up to max_body_bytes)
// would otherwise leave a buffer of its size in the pool for as long as the pool keeps the state.
// A small body's buffer is kept, so that the common request allocates none. The body is read
// and its state released as serveOp does (admit's readBody into st.body, then release).
func TestPooledBodyCapped(t *testing.T) {
	t.Parallel()
	s := &Server{}
	for _, tc := range []struct {
		name string
		size int
		kept bool
	}{
		{"a small body", 2 << 10, true},
		{"half the cap", maxPooledBody / 2, true},
		{"at the cap", maxPooledBody, false},
		{"a large body", 4 << 20, false},
	} {
		for _, stated := range []bool{true, false} {
			r, err := http.NewRequest(http.MethodPost, "http://localhost/v1/chat/completions", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Body = io.NopCloser(bytes.NewReader(bytes.Repeat([]byte("x"), tc.size)))
			r.ContentLength = -1
			if stated {
				r.ContentLength = int64(tc.size)
			}
			st := new(reqState)
			body, e := readBody(r, 10<<20, st.body)
			if e != nil || len(body) != tc.size {
				t.Fatalf("%s: %d bytes read, %v", tc.name, len(body), e)
			}
			st.body = body[:0]
			grown := cap(st.body)
			s.release(st)
			if kept := st.body != nil; kept != tc.kept {
				t.Errorf("%s (Content-Length stated %v): a buffer of %d bytes kept %v, want %v (cap %d)",
					tc.name, stated, grown, kept, tc.kept, maxPooledBody)
			}
		}
	}
}
