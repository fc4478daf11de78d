package h1

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// InPlace gives a body that came whole with its head where it is, and the body is at its end
// after; the handler may write over those bytes (here it upper-cases them) without touching the
// next request's, pipelined after it in the same read. A body not all there yet (the rest sent
// only once the handler has asked), a chunked one and one owed a 100 Continue are not given:
// nothing of them is read, and Read reads them as before. After a read of part of a body,
// InPlace gives the rest; a body sent at once with an Expect: 100-continue is given, and no 100
// Continue goes out.
func TestInPlace(t *testing.T) {
	asked := make(chan struct{}, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := r.Body.(interface{ InPlace() ([]byte, bool) })
		var head []byte
		if r.URL.Path == "/after-a-read" {
			head = make([]byte, 2)
			if _, err := io.ReadFull(r.Body, head); err != nil {
				t.Error(err)
			}
		}
		p, ok := ip.InPlace()
		if r.URL.Path == "/partial" {
			asked <- struct{}{}
		}
		var rest []byte
		var err error
		if ok {
			copy(p, bytes.ToUpper(p))
			var n int
			n, err = r.Body.Read(make([]byte, 8))
			if n != 0 || err != io.EOF {
				t.Errorf("%s: Read after InPlace = %d, %v; want 0, EOF", r.URL.Path, n, err)
			}
		} else {
			rest, err = io.ReadAll(r.Body)
		}
		if err != nil && err != io.EOF {
			t.Errorf("%s: %v", r.URL.Path, err)
		}
		fmt.Fprintf(w, "%v %s%s%s", ok, head, p, rest)
	}))
	post := func(path, body string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: h\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
	}
	c, br := dialRaw(t, addr)
	_, _ = io.WriteString(c, post("/whole", "first body")+post("/whole", "second body")+
		"POST /chunked HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nchunk\r\n0\r\n\r\n"+
		"POST /continue HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 8\r\n\r\n")
	var got []string
	for range 3 {
		got = append(got, readAnswer(t, br).Body)
	}
	// The 100 Continue the handler's read sent, then the body, then the answer.
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("want a 100 Continue, got %q, %v", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "continue")
	got = append(got, readAnswer(t, br).Body)

	_, _ = io.WriteString(c, "POST /partial HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nhalf ")
	<-asked
	_, _ = io.WriteString(c, "later")
	got = append(got, readAnswer(t, br).Body)
	_, _ = io.WriteString(c, post("/after-a-read", "ab and the rest"))
	got = append(got, readAnswer(t, br).Body)
	// Expect: 100-continue with the body sent at once: taken in place, no 100 Continue before
	// the answer (readAnswer would read the 100 as the answer).
	_, _ = io.WriteString(c, "POST /sent-anyway HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 6\r\n\r\nanyway")
	got = append(got, readAnswer(t, br).Body)

	want := []string{"true FIRST BODY", "true SECOND BODY", "false chunk", "false continue", "false half later", "true ab AND THE REST", "true ANYWAY"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("answers\n%q\nwant\n%q", got, want)
	}
}
