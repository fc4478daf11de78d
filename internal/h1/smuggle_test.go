package h1

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Ambiguous or malformed framing must never let a second, pipelined request through: the
// server answers the first with an error and closes, so that it cannot read the bytes after
// it as a request a front proxy saw differently.
func TestAmbiguousFramingNeverPipelines(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "served "+r.URL.Path)
	}))
	const next = "GET /second HTTP/1.1\r\nHost: h\r\n\r\n"
	head := "POST /first HTTP/1.1\r\nHost: h\r\n"
	te := head + "Transfer-Encoding: chunked\r\n"
	for _, tt := range []struct{ name, raw string }{
		{"cl and te", head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"te and cl", te + "Content-Length: 5\r\n\r\n0\r\n\r\n"},
		{"two cl differ", head + "Content-Length: 5\r\nContent-Length: 0\r\n\r\nabcde"},
		{"cl list", head + "Content-Length: 1,1\r\n\r\na"},
		{"cl plus", head + "Content-Length: +1\r\n\r\na"},
		{"cl hex", head + "Content-Length: 0x1\r\n\r\na"},
		{"cl empty", head + "Content-Length: \r\n\r\n"},
		{"cl huge", head + "Content-Length: 99999999999999999999\r\n\r\n"},
		{"te twice", head + "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"},
		{"te two lines", te + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"te gzip", head + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"},
		{"te 1.0", "POST /first HTTP/1.0\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"te space name", head + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n"},
		{"te fold", head + "X: y\r\n Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"size 0x", te + "\r\n0x1\r\na\r\n0\r\n\r\n"},
		{"size huge", te + "\r\n10000000000000000\r\na\r\n0\r\n\r\n"},
		{"size empty", te + "\r\n\r\na\r\n0\r\n\r\n"},
		{"quoted crlf ext", te + "\r\n1;a=\"x\r\ny\"\r\nz\r\n0\r\n\r\n"},
		{"no crlf after data", te + "\r\n1\r\nzz\r\n0\r\n\r\n"},
		{"bare lf size", te + "\r\n1\nz\r\n0\r\n\r\n"},
		{"bare lf after data", te + "\r\n1\r\nz\n0\r\n\r\n"},
		{"bare lf last", te + "\r\n1\r\nz\r\n0\n\r\n"},
		{"bare lf trailer end", te + "\r\n1\r\nz\r\n0\r\n\n"},
		{"bare lf trailer line", te + "\r\n1\r\nz\r\n0\r\nX: y\n\r\n"},
		{"trailer no colon", te + "\r\n1\r\nz\r\n0\r\nGET /x HTTP/1.1\r\n\r\n"},
		{"trailer bare cr", te + "\r\n1\r\nz\r\n0\r\nX: a\rb\r\n\r\n"},
		{"trailer fold", te + "\r\n1\r\nz\r\n0\r\nX: a\r\n b\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := exchange(t, addr, tt.raw+next)
			if strings.Contains(got, "served /second") {
				t.Fatalf("a second request was read after ambiguous framing: %q", got)
			}
			if !strings.HasPrefix(got, "HTTP/1.1 400 ") && !strings.HasPrefix(got, "HTTP/1.1 501 ") {
				t.Errorf("answer %.80q, want 400 or 501", got)
			}
		})
	}
}

// Framing a front proxy agrees on is read as it is: a second request after it is served.
func TestPlainFramingStillPipelines(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "served "+r.URL.Path+" "+string(b)+";")
	}))
	const next = "GET /second HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
	head := "POST /first HTTP/1.1\r\nHost: h\r\n"
	te := head + "Transfer-Encoding: chunked\r\n"
	for _, tt := range []struct{ name, raw string }{
		{"two cl equal", head + "Content-Length: 1\r\nContent-Length: 1\r\n\r\nz"},
		{"te case", head + "Transfer-Encoding: Chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n"},
		{"te trailing space", head + "Transfer-Encoding: chunked \r\n\r\n1\r\nz\r\n0\r\n\r\n"},
		{"size zeros", te + "\r\n0001\r\nz\r\n000\r\n\r\n"},
		{"ext", te + "\r\n1;a=\"b c\"\r\nz\r\n0\r\n\r\n"},
		{"trailer", te + "\r\n1\r\nz\r\n0\r\nContent-Length: 9\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := exchange(t, addr, tt.raw+next)
			if !strings.Contains(got, "served /first z;") || !strings.Contains(got, "served /second") {
				t.Errorf("got %q, want both requests served", got)
			}
		})
	}
}
