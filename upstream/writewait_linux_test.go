package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// readCalls is the process's read(2)-like system calls so far, failed ones included
// (/proc/self/io's syscr); false where the kernel does not tell.
func readCalls(t *testing.T) (int, bool) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("syscr: ")); ok {
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			return n, err == nil
		}
	}
	return 0, false
}

// TestWholeRequestWaitsBeforeItsRead: a POST written whole on a TCP connection waits for its
// answer before the answer's first read (writeWhole), where a read right after the request
// finds nothing yet and fails with EAGAIN before the wait: counted in the process's read calls,
// the same exchanges through the write buffer (a connection whose type is hidden, so the
// request goes as before) make about one more a request. Both ways read the same answers.
func TestWholeRequestWaitsBeforeItsRead(t *testing.T) {
	if _, ok := readCalls(t); !ok {
		t.Skip("/proc/self/io does not count read calls here")
	}
	// Each answer comes a little after its request has been read, so that nothing of it is
	// there when the client reads right after the request.
	u := newWireUpstream(t, func(_, _ int64, _ *http.Request, _ string) (string, bool) {
		time.Sleep(time.Millisecond)
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", true
	})
	base := u.url() + "/v1"
	dials := postDials()
	tg := &core.Target{APIKey: core.Secret("sk-test")}
	const n = 200
	reads := map[string]int{}
	for _, name := range []string{"tcp", "buffered"} {
		tr := &h1Transport{fallback: &http.Transport{}, idle: map[string]*idleList{}, dial: dials[name], maxIdle: 1}
		t.Cleanup(tr.CloseIdleConnections)
		exchange := func() {
			body := payload{[]byte(`{"model":`), []byte(`"m"`), []byte(`}`)}
			resp, sent, err := tr.post(context.Background(), base, "/chat/completions", tg, &body, "application/json", "")
			if !sent || err != nil {
				t.Fatalf("%s: sent=%v err=%v", name, sent, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(got) != "{}" {
				t.Fatalf("%s: answer %q, %v", name, got, err)
			}
		}
		exchange() // the connection's dial and first use are not counted
		before, _ := readCalls(t)
		for range n {
			exchange()
		}
		after, _ := readCalls(t)
		reads[name] = after - before
	}
	if saved := reads["buffered"] - reads["tcp"]; saved < n/2 {
		t.Errorf("read calls for %d exchanges: %d written whole, %d through the write buffer; want about %d fewer written whole",
			n, reads["tcp"], reads["buffered"], n)
	}
	if c := u.conns.Load(); c != 2 {
		t.Errorf("%d connections for the two ways' exchanges, want one each (kept alive)", c)
	}
}
