package h1

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recycledHead is the head a connection of TestHeadersStayTheirConnections sends for token tok
// with n fields of its own (besides Host and X-Token), and the header map its handler must see.
// Every third repeats a name (the map is then filled again, values gathered); the names' case
// changes with the token, so that a connection taking a past one's remembered names finds some
// the same on their line and some not.
func recycledHead(tok string, n int) (head string, want http.Header) {
	var b strings.Builder
	fmt.Fprintf(&b, "GET /t/%s/%d HTTP/1.1\r\nHost: h\r\nX-Token: %s\r\n", tok, n, tok)
	want = http.Header{"X-Token": {tok}}
	lower := len(tok)%2 == 0
	for i := range n {
		name := "X-F" + strconv.Itoa(i)
		if lower {
			name = strings.ToLower(name)
		}
		v := tok + "-" + strconv.Itoa(i)
		fmt.Fprintf(&b, "%s: %s\r\n", name, v)
		want["X-F"+strconv.Itoa(i)] = []string{v}
	}
	if n%3 == 0 {
		b.WriteString("X-Dup: " + tok + "-a\r\nx-dup: " + tok + "-b\r\n")
		want["X-Dup"] = []string{tok + "-a", tok + "-b"}
	}
	b.WriteString("\r\n")
	return b.String(), want
}

// TestHeadersStayTheirConnections: many connections at once, each new one taking a past one's
// buffers with the header map, value arrays and remembered names kept in them (keptHead), each
// request with its own values and its own number of fields (some past maxKeptFields, some with a
// name repeated). Every handler sees its request's header map as it came, at its start, after
// yielding, and after its answer's first bytes went out (the connection then waits on the
// client); and every client reads its own answer. Buffers handed to a connection while another
// still used them would show another's values here, and under -race as a race.
func TestHeadersStayTheirConnections(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(r.URL.Path, "/") // "", "t", tok, n
		if len(parts) != 4 {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
		tok := parts[2]
		n, _ := strconv.Atoi(parts[3])
		_, want := recycledHead(tok, n)
		check := func(when string) bool {
			if d := cmp.Diff(want, r.Header); d != "" {
				http.Error(w, when+" (-want +got):\n"+d, http.StatusInternalServerError)
				return false
			}
			return true
		}
		if !check("at the start") {
			return
		}
		for range 3 {
			runtime.Gosched()
		}
		if !check("after yielding") {
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, tok)
		w.(http.Flusher).Flush()
		runtime.Gosched()
		if d := cmp.Diff(want, r.Header); d != "" {
			_, _ = io.WriteString(w, " after the first write (-want +got):\n"+d)
		}
	}))

	const workers, conns = 8, 40
	var wg sync.WaitGroup
	for wk := range workers {
		wg.Go(func() {
			for ci := range conns {
				if err := recycledConn(addr, wk, ci); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// recycledConn opens a connection, sends it one to three requests one after the other, and
// checks that each answer is its own.
func recycledConn(addr string, wk, ci int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for ri := range 1 + (wk+ci)%3 {
		tok := fmt.Sprintf("w%dc%dr%d%s", wk, ci, ri, strings.Repeat("x", (wk*ci+ri)%5))
		head, _ := recycledHead(tok, (wk*7+ci*13+ri*29)%(maxKeptFields+26))
		if _, err := io.WriteString(c, head); err != nil {
			return fmt.Errorf("%s: %v", tok, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return fmt.Errorf("%s: %v", tok, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || string(b) != tok {
			return fmt.Errorf("%s: status %d, answer %q, %v", tok, resp.StatusCode, b, err)
		}
	}
	return nil
}
