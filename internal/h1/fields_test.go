package h1

import (
	"errors"
	"io"
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
	type answer struct {
		Fields map[string]string
		Length int64
		Body   string
	}
	read := func() answer {
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
	got := []answer{read(), read(), read()}
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
