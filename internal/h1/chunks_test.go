package h1

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A chunked body's writes between two flushes travel as one chunk: a stream's event, written
// as "data: ", payload and blank line, is one chunk and not three. A write larger than the
// buffer goes as its own chunk, and what is written after the last flush goes out at the end.
func TestOneChunkPerFlush(t *testing.T) {
	big := strings.Repeat("z", 5000)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		for _, ev := range []string{"one", "two"} {
			_, _ = io.WriteString(w, "data: ")
			_, _ = w.Write([]byte(ev))
			_, _ = w.Write([]byte("\n\n"))
			if err := rc.Flush(); err != nil {
				t.Errorf("flush: %v", err)
			}
		}
		_, _ = w.Write([]byte("a"))
		_, _ = w.Write([]byte(big))
		_, _ = w.Write([]byte("b"))
		_, _ = w.Write([]byte("c"))
	}))
	c, br := dialRaw(t, addr)
	fmt.Fprint(c, "GET /s HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	raw, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(raw), "\r\n\r\n")
	if !ok || !strings.Contains(string(raw), "Transfer-Encoding: chunked\r\n") {
		t.Fatalf("not a chunked answer: %q", raw)
	}
	want := "b\r\ndata: one\n\n\r\n" + "b\r\ndata: two\n\n\r\n" +
		"1\r\na\r\n" + "1388\r\n" + big + "\r\n" + "2\r\nbc\r\n" + "0\r\n\r\n"
	if body != want {
		t.Errorf("body on the wire:\n%q\nwant\n%q", body, want)
	}
}
