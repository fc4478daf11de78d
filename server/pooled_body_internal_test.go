package server

import (
	"bytes"
	"io"
	"net/http"
	"strings"
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
			body, _, e := readBody(r, 10<<20, st.body)
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

// inPlaceBody is a body the server holds whole already, as internal/h1's is when it came with
// its head.
type inPlaceBody struct {
	p     []byte
	taken bool
}

func (b *inPlaceBody) InPlace() ([]byte, bool) {
	if b.taken {
		return nil, false
	}
	b.taken = true
	return b.p, true
}

func (b *inPlaceBody) Read(p []byte) (int, error) {
	if b.taken {
		return 0, io.EOF
	}
	n := copy(p, b.p)
	b.p = b.p[n:]
	return n, nil
}

func (b *inPlaceBody) Close() error { return nil }

// A body the server holds in place is used where it is, and its bytes, the connection's, are not
// kept in the state as the buffer for the next request's body; a body read into the state's
// buffer is, and the buffer it was read into stays with the state through an in-place one.
func TestInPlaceBodyNotKept(t *testing.T) {
	t.Parallel()
	req := func(body io.ReadCloser, n int) *http.Request {
		r, err := http.NewRequest(http.MethodPost, "http://localhost/v1/chat/completions", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Body, r.ContentLength = body, int64(n)
		return r
	}
	st := new(reqState)
	conn := []byte(`{"model":"m"}` + "POST /next HTTP/1.1\r\n") // a connection's buffer: a body, then what follows it
	b, e := st.readBody(req(&inPlaceBody{p: conn[:13:13]}, 13), 1<<20)
	if e != nil || string(b) != `{"model":"m"}` || &b[0] != &conn[0] {
		t.Fatalf("in place: %q, %v (not the connection's bytes)", b, e)
	}
	if st.body != nil {
		t.Fatalf("the state keeps the connection's bytes as its buffer (cap %d)", cap(st.body))
	}
	b, e = st.readBody(req(io.NopCloser(strings.NewReader(`{"model":"copied"}`)), 18), 1<<20)
	if e != nil || string(b) != `{"model":"copied"}` || cap(st.body) == 0 {
		t.Fatalf("read: %q, %v, a buffer of %d kept", b, e, cap(st.body))
	}
	kept := &st.body[:1][0]
	if _, e := st.readBody(req(&inPlaceBody{p: []byte(`{"model":"x"}`)}, 13), 1<<20); e != nil || &st.body[:1][0] != kept {
		t.Errorf("after an in-place body the state's buffer is not the one it had: %v", e)
	}
	// A byte order mark is refused in place as when read.
	if _, e := st.readBody(req(&inPlaceBody{p: []byte("\xef\xbb\xbf{}")}, 5), 1<<20); e == nil || e.Status != http.StatusBadRequest {
		t.Errorf("a body in place with a byte order mark: %+v", e)
	}
}
