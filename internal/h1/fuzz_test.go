package h1

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzReadRequest feeds arbitrary heads to the parser, twice on one connection: it must never
// panic, and a request that both it and net/http accept must come out the same from both (method, target, host,
// headers, body framing), and leave the same bytes after its body: the next request, which a
// disagreement there would smuggle.
func FuzzReadRequest(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nhost: h\r\ncontent-length: 2\r\n\r\n{}",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
		"GET /a%20b?q=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"GET http://x/y HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nX-A: 2\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na",
		"POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nabGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;a=b;c\r\nabc\r\n0\r\nT: 1\r\n\r\nGET /n HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\n0\n\nGET /n HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.0\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nabcGET / HTTP/1.0\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c := readerConn(strings.NewReader(raw))
		if err := c.readRequest(); err != nil {
			return
		}
		// Once more on the same connection: its second head is read with what the first left
		// (the header map, the names it had, the arena).
		c.bufs.br.Reset(strings.NewReader(raw))
		if err := c.readRequest(); err != nil {
			t.Fatalf("the same request, a second time on the connection: %v", err)
		}
		got := &c.base
		for k := range got.Header {
			if c.names&nameBit(k) == 0 || !MayHave(got, k) {
				t.Fatalf("header %s came, and its bit is not in the request's names", k)
			}
		}
		wbr := bufio.NewReader(strings.NewReader(raw))
		want, werr := http.ReadRequest(wbr)
		if werr != nil {
			return // stricter or looser than net/http in places, by design (see parse.go)
		}
		if got.Method != want.Method || got.RequestURI != want.RequestURI || got.Host != want.Host ||
			got.URL.Path != want.URL.Path || got.URL.RawQuery != want.URL.RawQuery {
			t.Fatalf("request line: h1 %s %q host %q path %q; net/http %s %q host %q path %q",
				got.Method, got.RequestURI, got.Host, got.URL.Path, want.Method, want.RequestURI, want.Host, want.URL.Path)
		}
		if got.ContentLength != want.ContentLength {
			t.Fatalf("content length: h1 %d, net/http %d", got.ContentLength, want.ContentLength)
		}
		for k, vs := range want.Header {
			if strings.Join(got.Header[k], "\x00") != strings.Join(vs, "\x00") {
				t.Fatalf("header %s: h1 %q, net/http %q", k, got.Header[k], vs)
			}
		}
		gb, gerr := io.ReadAll(got.Body)
		wb, werr := io.ReadAll(want.Body)
		if gerr == nil && string(gb) != string(wb) {
			t.Fatalf("body: h1 %q, net/http %q", gb, wb)
		}
		if gerr == nil && werr == nil {
			grest, _ := io.ReadAll(c.bufs.br)
			wrest, _ := io.ReadAll(wbr)
			if string(grest) != string(wrest) {
				t.Fatalf("after the body: h1 leaves %q, net/http %q", grest, wrest)
			}
		}
	})
}
