package upstream

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteRequestReadsBackWithNetHTTP(t *testing.T) {
	body := `{"model":"m","messages":[]}`
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/v1/chat/completions?x=1", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Add("X-Multi", "a")
	req.Header.Add("X-Multi", "b")
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	if err := writeRequest(bw, req); err != nil {
		t.Fatal(err)
	}
	_ = bw.Flush()
	got, err := http.ReadRequest(bufio.NewReader(&out))
	if err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	b, _ := io.ReadAll(got.Body)
	if got.Method != "POST" || got.RequestURI != "/v1/chat/completions?x=1" || got.Host != "127.0.0.1:9" ||
		string(b) != body || got.ContentLength != int64(len(body)) {
		t.Errorf("read back %s %s host %s len %d body %q", got.Method, got.RequestURI, got.Host, got.ContentLength, b)
	}
	want := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer k"},
		"X-Multi": {"a", "b"}, "User-Agent": {"hayula-gateway"}, "Content-Length": {"27"}}
	if d := cmp.Diff(want, got.Header); d != "" {
		t.Errorf("headers (-want +got):\n%s", d)
	}
}

func TestWriteRequestFallsBack(t *testing.T) {
	// A body of unknown length is chunked by net/http's writer.
	req, _ := http.NewRequest(http.MethodPost, "http://h/x", io.NopCloser(strings.NewReader("abc")))
	req.ContentLength = -1
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	if err := writeRequest(bw, req); err != nil {
		t.Fatal(err)
	}
	_ = bw.Flush()
	if !strings.Contains(out.String(), "Transfer-Encoding: chunked") {
		t.Errorf("unknown length: %q", out.String())
	}
	// A header value with a line break goes to net/http's writer, which cannot be made to
	// split the head by it.
	req, _ = http.NewRequest(http.MethodPost, "http://h/x", strings.NewReader("abc"))
	req.Header.Set("X-Bad", "a\r\nX-Injected: 1")
	out.Reset()
	bw.Reset(&out)
	err := writeRequest(bw, req)
	_ = bw.Flush()
	if err != nil || strings.Contains(out.String(), "\r\nX-Injected") {
		t.Errorf("bad header: err %v, wrote %q", err, out.String())
	}
}

func TestReadResponseShapes(t *testing.T) {
	tests := []struct {
		name, method, raw string
		status            int
		body              string
		close             bool
		wantErr           bool
		header            http.Header
	}{
		{name: "content-length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-type: application/json\r\n\r\nhelloNEXT",
			status: 200, body: "hello", header: http.Header{"Content-Length": {"5"}, "Content-Type": {"application/json"}}},
		{name: "chunked with trailer", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: 1\r\n\r\nNEXT",
			status: 200, body: "abcde", header: http.Header{}},
		{name: "to the close", raw: "HTTP/1.0 200 OK\r\nX-A: 1\r\nx-a: 2\r\n\r\nall of it",
			status: 200, body: "all of it", close: true, header: http.Header{"X-A": {"1", "2"}}},
		{name: "connection close", raw: "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
			status: 429, body: "{}", close: true, header: http.Header{"Retry-After": {"3"}, "Connection": {"close"}, "Content-Length": {"2"}}},
		{name: "no content", raw: "HTTP/1.1 204 No Content\r\n\r\nNEXT", status: 204, header: http.Header{}},
		{name: "head", method: "HEAD", raw: "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nNEXT", status: 200,
			header: http.Header{"Content-Length": {"50"}}},
		{name: "status without reason", raw: "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", status: 200,
			header: http.Header{"Content-Length": {"0"}}},
		{name: "not http", raw: "SSH-2.0-OpenSSH\r\n\r\n", wantErr: true},
		{name: "http/2", raw: "HTTP/2 200\r\n\r\n", wantErr: true},
		{name: "gzip framing", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", wantErr: true},
		{name: "conflicting lengths", raw: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", wantErr: true},
		{name: "bad length", raw: "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nab", wantErr: true},
		{name: "bad header", raw: "HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "POST"
			}
			br := bufio.NewReader(strings.NewReader(tt.raw))
			var scratch heads
			resp, err := readResp(br, method, &scratch)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("read %d, want an error", resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || string(b) != tt.body || resp.Close != tt.close {
				t.Errorf("got %d %q close=%v, want %d %q close=%v", resp.StatusCode, b, resp.Close, tt.status, tt.body, tt.close)
			}
			if d := cmp.Diff(tt.header, resp.Header); d != "" {
				t.Errorf("headers (-want +got):\n%s", d)
			}
			if rest, _ := io.ReadAll(br); !tt.close && strings.HasSuffix(tt.raw, "NEXT") && string(rest) != "NEXT" {
				t.Errorf("left on the connection: %q, want only what follows the answer", rest)
			}
		})
	}
	// A connection closed before the status line is io.ErrUnexpectedEOF (a stale pooled one).
	var scratch heads
	if _, err := readResp(bufio.NewReader(strings.NewReader("")), "POST", &scratch); err != io.ErrUnexpectedEOF {
		t.Errorf("empty: %v, want io.ErrUnexpectedEOF", err)
	}
	// A body cut short is an error, not a clean end.
	resp, err := readResp(bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")), "POST", &scratch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != io.ErrUnexpectedEOF {
		t.Errorf("short body: %v, want io.ErrUnexpectedEOF", err)
	}
}

// FuzzReadResponse: never a panic, and an answer both readers accept reads the same and
// leaves the same bytes after its body (what the next answer on the connection starts with);
// read into a header map another answer filled, it has the same header as into a new one.
func FuzzReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"HTTP/1.0 503 Busy\r\nRetry-After: 1\r\n\r\nbody",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=1\r\nok\r\n0\r\nT: 1\r\n\r\nNEXT",
		"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nNEXT",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\nraw",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var scratch heads
		gbr := bufio.NewReader(strings.NewReader(raw))
		got, err := readResp(gbr, "POST", &scratch)
		if err != nil {
			return
		}
		// A map another answer filled, as a connection's next answer gets it, ends the same.
		used := &answer{header: http.Header{"Content-Type": {"old"}, "X-Old": {"1"}, "Content-Length": {"9"}}}
		if err := readResponse(bufio.NewReader(strings.NewReader(raw)), "POST", &scratch, used); err != nil {
			t.Fatalf("into a used map: %v", err)
		}
		if d := cmp.Diff(got.Header, used.resp.Header); d != "" {
			t.Fatalf("header into a used map (-new map +used):\n%s", d)
		}
		gb, gerr := io.ReadAll(got.Body)
		wbr := bufio.NewReader(strings.NewReader(raw))
		want, err := http.ReadResponse(wbr, &http.Request{Method: "POST"})
		if err != nil || want.StatusCode < 200 {
			return // net/http hands 1xx answers to its caller; readResponse reads past them
		}
		wb, werr := io.ReadAll(want.Body)
		if got.StatusCode != want.StatusCode {
			t.Fatalf("status: %d, net/http %d", got.StatusCode, want.StatusCode)
		}
		if gerr == nil && werr == nil && !bytes.Equal(gb, wb) {
			t.Fatalf("body: %q, net/http %q", gb, wb)
		}
		if gerr == nil && werr == nil && !got.Close {
			grest, _ := io.ReadAll(gbr)
			wrest, _ := io.ReadAll(wbr)
			if !bytes.Equal(grest, wrest) {
				t.Fatalf("after the body: %q, net/http %q", grest, wrest)
			}
		}
		for k, vs := range want.Header {
			if k == "Content-Length" || k == "Transfer-Encoding" {
				continue
			}
			if strings.Join(got.Header[k], "\x00") != strings.Join(vs, "\x00") {
				t.Fatalf("header %s: %q, net/http %q", k, got.Header[k], vs)
			}
		}
	})
}

// Answers a hostile or broken upstream can send, from the review: each is either refused or
// read so that the connection is not reused past it.
func TestReadResponseHostile(t *testing.T) {
	tests := []struct {
		name, raw string
		status    int // 0: an error is wanted
		close     bool
		body      string
	}{
		{name: "endless empty lines", raw: strings.Repeat("\r\n", 40000) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
		{name: "a few empty lines", raw: "\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok"},
		{name: "1xx then the answer", raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
			status: 200, body: "ok"},
		{name: "a flood of 1xx", raw: strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 10) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
		{name: "protocol switch", raw: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nraw bytes", status: 101, close: true},
		{name: "signed length", raw: "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok"},
		{name: "negative zero length", raw: "HTTP/1.1 200 OK\r\nContent-Length: -0\r\n\r\n"},
		{name: "length and chunked", raw: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
			status: 200, close: true, body: "ok"},
		{name: "chunked in HTTP/1.0", raw: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
			status: 200, close: true, body: "0\r\n\r\n"},
		{name: "nul in a value", raw: "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 0\r\n\r\n"},
		{name: "bare cr in a value", raw: "HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n"},
		{name: "folded line", raw: "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n"},
		{name: "status not a number", raw: "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n"},
		{name: "bad chunk size", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n", status: 200, body: "!"},
		{name: "huge chunk size", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nok\r\n0\r\n\r\n", status: 200, body: "!"},
		// A 204 may carry no body (RFC 9110 §15.3.5, §8.6; RFC 9112 §6.1), so one announcing
		// one is read without it, as net/http reads it, but the bytes it sends after its head
		// would be the next answer's: the connection is not reused.
		{name: "no content with a length", raw: "HTTP/1.1 204 No Content\r\nContent-Length: 38\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
			status: 204, close: true},
		{name: "no content chunked", raw: "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 204, close: true},
		{name: "no content with length 0", raw: "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", status: 204},
		{name: "chunk without its CRLF", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n0\r\n\r\n", status: 200, body: "!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var scratch heads
			resp, err := readResp(bufio.NewReader(strings.NewReader(tt.raw)), "POST", &scratch)
			if tt.status == 0 {
				if err == nil {
					t.Fatalf("read %d %q, want an error", resp.StatusCode, resp.Header)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, berr := io.ReadAll(resp.Body)
			if tt.body == "!" { // the body must fail
				if berr == nil {
					t.Errorf("body %q read cleanly, want an error", b)
				}
				return
			}
			if berr != nil || resp.StatusCode != tt.status || resp.Close != tt.close || string(b) != tt.body {
				t.Errorf("got %d close=%v %q %v; want %d close=%v %q", resp.StatusCode, resp.Close, b, berr, tt.status, tt.close, tt.body)
			}
		})
	}
}

func TestWriteRequestHostile(t *testing.T) {
	newReq := func(method, url string, body io.Reader, edit func(*http.Request)) *http.Request {
		req, err := http.NewRequest(method, url, body)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(req)
		}
		return req
	}
	tests := []struct {
		name     string
		req      *http.Request
		wantErr  bool
		method   string
		host     string
		body     string
		length   int64
		noHeader string // a header that must not reach the server
	}{
		// net/http's rule: a ContentLength of 0 with a Body means "unknown", not "empty".
		{name: "body of unknown length", req: newReq("POST", "http://h/x", io.MultiReader(strings.NewReader("abc")), nil),
			method: "POST", host: "h", body: "abc", length: -1},
		// req.Write sends a Host it finds invalid as empty (go.dev/issue/61431).
		{name: "host with a line break", req: newReq("GET", "http://h/x", nil, func(r *http.Request) { r.Host = "h\r\nX-Injected: 1" }),
			method: "GET", noHeader: "X-Injected"},
		{name: "method with a space", req: newReq("GET", "http://h/x", nil, func(r *http.Request) { r.Method = "GET /evil HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET" }),
			wantErr: true},
		{name: "empty method", req: newReq("GET", "http://h/x", nil, func(r *http.Request) { r.Method = "" }),
			method: "GET", host: "h"},
		{name: "zone in the host", req: newReq("GET", "http://[fe80::1%25eth0]:8080/x", nil, nil),
			method: "GET", host: "[fe80::1]:8080"},
		{name: "empty PATCH", req: newReq("PATCH", "http://h/x", http.NoBody, nil), method: "PATCH", host: "h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			bw := bufio.NewWriter(&out)
			err := writeRequest(bw, tt.req)
			_ = bw.Flush()
			if tt.wantErr {
				if err == nil {
					t.Fatalf("wrote %q, want an error", out.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := http.ReadRequest(bufio.NewReader(&out))
			if err != nil {
				t.Fatalf("%v in %q", err, out.String())
			}
			b, _ := io.ReadAll(got.Body)
			if got.Method != tt.method || got.Host != tt.host || string(b) != tt.body || got.ContentLength != tt.length {
				t.Errorf("read back %s host %q len %d %q; want %s host %q len %d %q (%q)", got.Method, got.Host,
					got.ContentLength, b, tt.method, tt.host, tt.length, tt.body, out.String())
			}
			if tt.noHeader != "" && got.Header.Get(tt.noHeader) != "" {
				t.Errorf("%s reached the server (%q)", tt.noHeader, out.String())
			}
			if tt.method == "PATCH" && got.Header.Get("Content-Length") != "0" {
				t.Errorf("an empty PATCH without Content-Length: 0 (%q)", out.String())
			}
		})
	}
}

// What net/http's Transport is given is never the caller's array: it may read it after the
// request is over, when the server has lent the array to the next request.
func TestPayloadOwnedDoesNotAlias(t *testing.T) {
	buf := []byte(`{"model":"x","messages":[]}`)
	for _, p := range []payload{whole(buf), {buf[:10], []byte(`"y"`), buf[11:]}} {
		got := p.owned()
		want := string(p[0]) + string(p[1]) + string(p[2])
		if string(got) != want {
			t.Fatalf("owned = %q, want %q", got, want)
		}
		got[0] = '!'
		if buf[0] != '{' {
			t.Fatal("owned shares the caller's array")
		}
	}
}

// readResp is readResponse into an answer of its own.
func readResp(br *bufio.Reader, method string, scratch *heads) (*http.Response, error) {
	a := new(answer)
	if err := readResponse(br, method, scratch, a); err != nil {
		return nil, err
	}
	return &a.resp, nil
}

// The strings of an answer's head are slices of the connection's arena of heads: the answers
// read after it on the same connection, whether they fit the arena, fill it mid-head or are
// larger than an arena is kept for, must never write over them.
func TestAnswerHeadStringsStay(t *testing.T) {
	type kept struct{ Status, Seq, Big string }
	var raw strings.Builder
	const n = 300
	codes := []int{200, 201, 400, 429, 500, 503} // each with a body
	for i := range n {
		big := ""
		if i%97 == 50 {
			big = strings.Repeat(strconv.Itoa(i%10), 20<<10) // past maxHeadArena
		}
		fmt.Fprintf(&raw, "HTTP/1.1 %d S%d\r\nX-Seq: %d-%s\r\nX-Big: %s\r\nContent-Length: 1\r\n\r\n%d",
			codes[i%len(codes)], i, i, strings.Repeat("v", i%40), big, i%10)
	}
	for _, size := range []int{16, 4096} { // 16: heads come in fragments, the arena fills mid-head
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(raw.String()), size)
			var hs heads
			var got, want []kept
			for i := range n {
				resp, err := readResp(br, "POST", &hs)
				if err != nil {
					t.Fatalf("answer %d: %v", i, err)
				}
				if _, err := io.ReadAll(resp.Body); err != nil {
					t.Fatalf("answer %d: %v", i, err)
				}
				k := kept{resp.Status, resp.Header.Get("X-Seq"), resp.Header.Get("X-Big")}
				got = append(got, k)
				want = append(want, kept{strings.Clone(k.Status), strings.Clone(k.Seq), strings.Clone(k.Big)})
				if w := fmt.Sprintf("%d S%d", codes[i%len(codes)], i); k.Status != w {
					t.Fatalf("answer %d: status %q, want %q", i, k.Status, w)
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("an earlier answer's strings changed (-as read +now):\n%s", d)
			}
		})
	}
}

// The answers on one connection fill the same header map in turn (see post): each answer's
// map must hold its own fields and nothing of the answer before it, whether the names come
// again, fewer of them, twice in one head, more than an answer keeps room for, or framing
// fields that frame takes out of the map.
func TestAnswerHeaderMapReuse(t *testing.T) {
	tenFields := ""
	tenWant := http.Header{"Content-Length": {"1"}}
	for i := range 10 {
		tenFields += fmt.Sprintf("X-N%d: %d\r\n", i, i)
		tenWant[fmt.Sprintf("X-N%d", i)] = []string{strconv.Itoa(i)}
	}
	steps := []struct {
		name, raw string
		want      http.Header
	}{
		{"first", "HTTP/1.1 200 OK\r\nContent-Type: a\r\nDate: d1\r\nContent-Length: 1\r\n\r\nx",
			http.Header{"Content-Type": {"a"}, "Date": {"d1"}, "Content-Length": {"1"}}},
		{"same names", "HTTP/1.1 200 OK\r\ncontent-type: b\r\nDate: d2\r\nContent-Length: 1\r\n\r\nx",
			http.Header{"Content-Type": {"b"}, "Date": {"d2"}, "Content-Length": {"1"}}},
		{"same names in another order", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nDate: d3\r\nContent-Type: c\r\n\r\nx",
			http.Header{"Content-Type": {"c"}, "Date": {"d3"}, "Content-Length": {"1"}}},
		{"fewer names", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", http.Header{"Content-Length": {"1"}}},
		// Two fields of one name and a name the last answer had, as many as the head's fields.
		{"a name twice", "HTTP/1.1 204 No Content\r\nX-A: 1\r\nX-A: 2\r\n\r\n", http.Header{"X-A": {"1", "2"}}},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: t1\r\n\r\n1\r\nx\r\n0\r\n\r\n",
			http.Header{"Content-Type": {"t1"}}},
		{"chunked again", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: t2\r\n\r\n1\r\nx\r\n0\r\n\r\n",
			http.Header{"Content-Type": {"t2"}}},
		{"length after chunked", "HTTP/1.1 200 OK\r\nContent-Type: t3\r\nContent-Length: 1\r\n\r\nx",
			http.Header{"Content-Type": {"t3"}, "Content-Length": {"1"}}},
		{"more fields than kept room", "HTTP/1.1 200 OK\r\n" + tenFields + "Content-Length: 1\r\n\r\nx", tenWant},
		{"more fields again", "HTTP/1.1 200 OK\r\n" + tenFields + "Content-Length: 1\r\n\r\nx", tenWant},
		{"few after many", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nRetry-After: 3\r\n\r\nx",
			http.Header{"Content-Length": {"1"}, "Retry-After": {"3"}}},
		{"a name twice among the same names", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
			http.Header{"Content-Length": {"1", "1"}}},
		{"same names once each", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nRetry-After: 4\r\n\r\nx",
			http.Header{"Content-Length": {"1"}, "Retry-After": {"4"}}},
	}
	var raw strings.Builder
	for _, st := range steps {
		raw.WriteString(st.raw)
	}
	br := bufio.NewReader(strings.NewReader(raw.String()))
	var hs heads
	var h http.Header
	for _, st := range steps {
		a := &answer{header: h}
		if err := readResponse(br, "POST", &hs, a); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if _, err := io.ReadAll(a.resp.Body); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if d := cmp.Diff(st.want, a.resp.Header); d != "" {
			t.Errorf("%s: header (-want +got):\n%s", st.name, d)
		}
		if h != nil && fmt.Sprintf("%p", h) != fmt.Sprintf("%p", a.resp.Header) {
			t.Errorf("%s: the connection's map was not the one filled", st.name)
		}
		h = a.resp.Header
	}
}

// A field name the same as the one on its line in the connection's last answer is taken as
// checked and canonical (heads.names): a different name, or a bad one, on that line must be
// checked and canonicalized as if it were the first.
func TestFieldNamesPerAnswer(t *testing.T) {
	steps := []struct {
		name, raw string
		want      http.Header // nil: the head is refused
	}{
		{"empty name first", "HTTP/1.1 200 OK\r\n: v\r\nContent-Length: 0\r\n\r\n", nil},
		{"first", "HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-type: t\r\nContent-Length: 0\r\n\r\n",
			http.Header{"X-A": {"1"}, "Content-Type": {"t"}, "Content-Length": {"0"}}},
		{"same names", "HTTP/1.1 200 OK\r\nx-a: 2\r\ncontent-type: u\r\nContent-Length: 0\r\n\r\n",
			http.Header{"X-A": {"2"}, "Content-Type": {"u"}, "Content-Length": {"0"}}},
		{"another name on a line", "HTTP/1.1 200 OK\r\nx-b: 3\r\ncontent-type: u\r\nContent-Length: 0\r\n\r\n",
			http.Header{"X-B": {"3"}, "Content-Type": {"u"}, "Content-Length": {"0"}}},
		{"the same name in other case", "HTTP/1.1 200 OK\r\nX-b: 4\r\nCONTENT-TYPE: v\r\nContent-Length: 0\r\n\r\n",
			http.Header{"X-B": {"4"}, "Content-Type": {"v"}, "Content-Length": {"0"}}},
		{"a bad name where a good one was", "HTTP/1.1 200 OK\r\nX b: 5\r\nCONTENT-TYPE: v\r\nContent-Length: 0\r\n\r\n", nil},
		{"an empty name where a good one was", "HTTP/1.1 200 OK\r\n: 5\r\nCONTENT-TYPE: v\r\nContent-Length: 0\r\n\r\n", nil},
		{"names moved a line", "HTTP/1.1 200 OK\r\nDate: d\r\nX-b: 6\r\nCONTENT-TYPE: w\r\nContent-Length: 0\r\n\r\n",
			http.Header{"Date": {"d"}, "X-B": {"6"}, "Content-Type": {"w"}, "Content-Length": {"0"}}},
		{"back again", "HTTP/1.1 200 OK\r\nx-a: 7\r\ncontent-type: t\r\nContent-Length: 0\r\n\r\n",
			http.Header{"X-A": {"7"}, "Content-Type": {"t"}, "Content-Length": {"0"}}},
	}
	var hs heads
	var h http.Header
	for _, st := range steps {
		a := &answer{header: h}
		err := readResponse(bufio.NewReader(strings.NewReader(st.raw)), "POST", &hs, a)
		if st.want == nil {
			if err == nil {
				t.Errorf("%s: read %q, want an error", st.name, a.resp.Header)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if d := cmp.Diff(st.want, a.resp.Header); d != "" {
			t.Errorf("%s: header (-want +got):\n%s", st.name, d)
		}
		h = a.resp.Header
	}
}
