package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A handler's prebuilt lines (AddFields) and length (SetContentLength) go into that answer's
// head and no other: the next answer on the connection starts without them; lines added once
// the head is out are dropped; a write past the length fails as past a Content-Length entry.
func TestPrebuiltFields(t *testing.T) {
	type fielder interface {
		AddFields([]byte)
		SetContentLength(int64)
	}
	var lateErr error
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := w.(fielder)
		switch r.URL.Path {
		case "/prebuilt":
			w.Header().Set("X-From-Map", "m")
			f.AddFields([]byte("X-One: 1\r\n"))
			f.AddFields([]byte("X-Two: 2\r\nX-Three: 3\r\n"))
			f.SetContentLength(5)
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("hello"))
			_, lateErr = w.Write([]byte("!"))
		case "/late":
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("streamed"))
			w.(http.Flusher).Flush()
			f.AddFields([]byte("X-Late: 1\r\n"))
			f.SetContentLength(1)
		default:
			_, _ = w.Write([]byte("plain"))
		}
	}))
	c, br := dialRaw(t, addr)
	_, _ = io.WriteString(c, "GET /prebuilt HTTP/1.1\r\nHost: h\r\n\r\n"+
		"GET /plain HTTP/1.1\r\nHost: h\r\n\r\n"+
		"GET /late HTTP/1.1\r\nHost: h\r\n\r\n")
	got := []answer{readAnswer(t, br), readAnswer(t, br), readAnswer(t, br)}
	want := []answer{
		{Fields: map[string]string{"X-From-Map": "m", "X-One": "1", "X-Two": "2", "X-Three": "3"}, Length: 5, Body: "hello"},
		{Fields: map[string]string{}, Length: 5, Body: "plain"},
		{Fields: map[string]string{}, Length: -1, Body: "streamed"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if !errors.Is(lateErr, http.ErrContentLength) {
		t.Errorf("a write past SetContentLength: %v, want http.ErrContentLength", lateErr)
	}
}

// answer is what a test reads of an answer: its X- fields, length and body.
type answer struct {
	Fields map[string]string
	Length int64
	Body   string
}

func readAnswer(t *testing.T, br *bufio.Reader) answer {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{Fields: map[string]string{}, Length: resp.ContentLength, Body: string(b)}
	for k, vs := range resp.Header {
		if strings.HasPrefix(k, "X-") {
			a.Fields[k] = strings.Join(vs, ",")
		}
	}
	return a
}

// wholeWriter is the part of the server's ResponseWriter that sends a whole answer at once.
type wholeWriter interface {
	AddFields([]byte)
	SetContentLength(int64)
	WriteWhole([]byte) (int, error)
}

// WriteWhole sends the head and the body together without copying the body into the
// held-back body, and keeps nothing of it (a body that fits in the write buffer goes in one
// write with the head, a larger one in one writev from where the caller keeps it); where it cannot (a HEAD, a body the length
// set does not fit, a body written before), it is Write and Flush, with their answers and errors.
func TestWriteWhole(t *testing.T) {
	type result struct {
		N       int
		Err     string
		Pending string // what the held-back body's buffer holds after the call
	}
	results := make(chan result, 8)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := w.(wholeWriter)
		pend := w.(*response).c.bufs.pending
		clear(pend[:cap(pend)])
		body := []byte("hello")
		switch r.URL.Path {
		case "/whole":
			f.AddFields([]byte("X-One: 1\r\n"))
			f.SetContentLength(int64(len(body)))
		case "/large": // larger than the 4 KB write buffer
			body = bytes.Repeat([]byte("large"), 1000)
			f.SetContentLength(int64(len(body)))
		case "/map-length":
			w.Header().Set("Content-Length", "3")
		case "/written":
			_, _ = w.Write([]byte("ab"))
		}
		w.WriteHeader(http.StatusOK)
		n, err := f.WriteWhole(body)
		copy(body, "XXXXX") // the caller's to reuse once WriteWhole returns
		res := result{N: n, Pending: strings.TrimRight(string(pend[:cap(pend)]), "\x00")}
		if err != nil {
			res.Err = err.Error()
		}
		results <- res
	}))
	c, br := dialRaw(t, addr)
	_, _ = io.WriteString(c, "GET /whole HTTP/1.1\r\nHost: h\r\n\r\n"+
		"HEAD /whole HTTP/1.1\r\nHost: h\r\n\r\n"+
		"GET /written HTTP/1.1\r\nHost: h\r\n\r\n"+
		"GET /large HTTP/1.1\r\nHost: h\r\n\r\n")
	got := []answer{readAnswer(t, br)}
	headResp, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead})
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, answer{Fields: map[string]string{}, Length: headResp.ContentLength})
	got = append(got, readAnswer(t, br), readAnswer(t, br))
	want := []answer{
		{Fields: map[string]string{"X-One": "1"}, Length: 5, Body: "hello"},
		{Fields: map[string]string{}, Length: 5},
		{Fields: map[string]string{}, Length: -1, Body: "abhello"},
		{Fields: map[string]string{}, Length: 5000, Body: strings.Repeat("large", 1000)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	wantRes := []result{
		{N: 5},                     // not copied into the held-back body
		{N: 5},                     // HEAD: Write's answer, no body
		{N: 5, Pending: "abhello"}, // written through the held-back body, then chunked
		{N: 5000},
	}
	gotRes := []result{<-results, <-results, <-results, <-results}

	// A length the body does not fit fails as Write fails, and the connection ends.
	c2, br2 := dialRaw(t, addr)
	_, _ = io.WriteString(c2, "GET /map-length HTTP/1.1\r\nHost: h\r\n\r\n")
	resp, err := http.ReadResponse(br2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Errorf("/map-length: the body read whole, want it cut short of its 3 bytes")
	}
	wantRes = append(wantRes, result{Err: http.ErrContentLength.Error()})
	gotRes = append(gotRes, <-results)
	if diff := cmp.Diff(wantRes, gotRes); diff != "" {
		t.Errorf("WriteWhole's results (-want +got):\n%s", diff)
	}
}

// A client that leaves while WriteWhole's writev is under way: the error comes back with the
// part of the body that went out before it, more than nothing and less than the whole.
func TestWriteWholeCutShort(t *testing.T) {
	type result struct {
		n   int
		err error
	}
	body := make([]byte, 64<<20)
	results := make(chan result, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := w.(wholeWriter)
		f.SetContentLength(int64(len(body)))
		w.WriteHeader(http.StatusOK)
		n, err := f.WriteWhole(body)
		results <- result{n, err}
	}))
	c, br := dialRaw(t, addr)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	if _, err := http.ReadResponse(br, nil); err != nil {
		t.Fatal(err)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // a reset, so that the writer fails rather than filling the buffers
	}
	c.Close()
	res := <-results
	if res.err == nil || res.n <= 0 || res.n >= len(body) {
		t.Errorf("WriteWhole = %d, %v; want an error after part of the %d bytes", res.n, res.err, len(body))
	}
}
