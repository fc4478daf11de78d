package h1

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"testing"
)

// A whole answer is put together in the server's scratch buffer (made by the first whole
// answer), which is back in its place once the answer is written, holding it; while
// another answer has it, the answer is put together in the connection's write buffer instead,
// and the client reads the same bytes.
func TestWholeAnswerBuiltInTheScratch(t *testing.T) {
	written := make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := w.(wholeWriter)
		body := []byte("whole " + r.URL.Path)
		f.SetContentLength(int64(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = f.WriteWhole(body)
		written <- struct{}{}
	}))
	c, br := dialRaw(t, addr)
	var got []string
	exchange := func(path string) {
		t.Helper()
		_, _ = io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: h\r\n\r\n")
		got = append(got, readAnswer(t, br).Body)
		<-written
	}
	exchange("/first")
	exchange("/second")
	sp := s.scratch.Take() // back, and now held: another answer's, for the next
	if sp == nil {
		t.Fatal("no scratch buffer after two whole answers")
	}
	if !bytes.HasPrefix(sp[:], []byte("HTTP/1.1 200 OK\r\n")) || !bytes.Contains(sp[:], []byte("whole /second")) {
		t.Errorf("the scratch buffer holds %q, want the second answer", sp[:80])
	}
	exchange("/third")
	if s.scratch.Take() != nil {
		t.Error("an answer that found the scratch taken put one back")
	}
	s.scratch.Give(sp)
	if want := []string{"whole /first", "whole /second", "whole /third"}; !slices.Equal(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
}

// Keep-alive exchanges answered with WriteWhole allocate nothing in the server, one after
// another, the scratch buffer included. The client is a raw connection reading into a buffer of
// its own: nothing of its side allocates either.
func TestWholeAnswersAllocateNothing(t *testing.T) {
	if raceOn {
		t.Skip("the race detector changes allocation counts")
	}
	body := []byte(`{"id":"x","choices":[{"message":{"content":"hello"}}]}`)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := w.(wholeWriter)
		f.SetContentLength(int64(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = f.WriteWhole(body)
	}))
	c, br := dialRaw(t, addr)
	req := []byte("GET /v1/models HTTP/1.1\r\nHost: h\r\n\r\n")
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	if first := readAnswer(t, br); first.Body != string(body) {
		t.Fatalf("answer %+v", first)
	}
	ans := make([]byte, 0, 4096) // the head's lines, then the body
	exchange := func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		ans = ans[:0]
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				t.Fatal(err)
			}
			ans = append(ans, line...)
			if len(line) == 2 {
				break
			}
		}
		got := ans[len(ans) : len(ans)+len(body)]
		if _, err := io.ReadFull(br, got); err != nil {
			t.Fatal(err)
		}
		if string(got) != string(body) {
			t.Fatalf("body %q", got)
		}
	}
	for range 10 {
		exchange() // pools filled
	}
	if got := testing.AllocsPerRun(200, exchange); got >= 1 {
		t.Errorf("%.2f allocations an exchange, want none", got)
	}
}
