package h1

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// A body that stops arriving fails the handler's read with a deadline error once
// ReadBodyTimeout has passed, and the connection closes; a body that arrives in time, in
// pieces, after a 100 Continue, or on a kept-alive connection, is read whole.
func TestReadBodyTimeout(t *testing.T) {
	type outcome struct {
		body string
		err  error
	}
	got := make(chan outcome, 4)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		got <- outcome{string(b), err}
		if err != nil {
			http.Error(w, "slow", http.StatusRequestTimeout)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}), func(s *Server) { s.ReadBodyTimeout = 300 * time.Millisecond })

	t.Run("stalled", func(t *testing.T) {
		c, br := dialRaw(t, addr)
		fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
		var o outcome
		select {
		case o = <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("the handler's read of a stalled body did not fail within 10s")
		}
		if !errors.Is(o.err, os.ErrDeadlineExceeded) {
			t.Fatalf("handler's read: %q, %v; want a deadline error", o.body, o.err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
			t.Errorf("answer %d close=%v, want the handler's 408 and the connection closed", resp.StatusCode, resp.Close)
		}
	})

	t.Run("in time, twice on one connection", func(t *testing.T) {
		c, br := dialRaw(t, addr)
		for i := range 2 {
			fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\n\r\nabc")
			fmt.Fprint(c, "def")
			if o := <-got; o.err != nil || o.body != "abcdef" {
				t.Fatalf("request %d: %q, %v", i, o.body, o.err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || resp.Close {
				t.Fatalf("request %d: %d close=%v", i, resp.StatusCode, resp.Close)
			}
		}
	})

	t.Run("after 100 continue", func(t *testing.T) {
		c, br := dialRaw(t, addr)
		fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n")
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
			t.Fatalf("%q, %v", line, err)
		}
		_, _ = br.ReadString('\n')
		fmt.Fprint(c, "3\r\nxyz\r\n0\r\n\r\n")
		if o := <-got; o.err != nil || o.body != "xyz" {
			t.Fatalf("%q, %v", o.body, o.err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d", resp.StatusCode)
		}
	})
}
