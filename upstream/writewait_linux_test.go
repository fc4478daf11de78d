package upstream

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
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

// slowAnswers is a loopback server that answers each request on a kept-alive connection with
// {} a little after it has read it, so that nothing of the answer is there when the client
// reads right after its request. It returns the server's address.
func slowAnswers(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					time.Sleep(time.Millisecond)
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
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
	base := "http://" + slowAnswers(t) + "/v1"
	type notTCP struct{ net.Conn }
	var d net.Dialer
	dials := map[string]func(ctx context.Context, network, addr string) (net.Conn, error){
		"whole": d.DialContext,
		"buffered": func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			return notTCP{c}, err
		},
	}
	tg := &core.Target{APIKey: core.Secret("sk-test")}
	const n = 200
	reads := map[string]int{}
	for _, name := range []string{"whole", "buffered"} {
		tr := &h1Transport{fallback: &http.Transport{}, idle: map[string]*idleList{}, dial: dials[name], maxIdle: 1}
		t.Cleanup(tr.CloseIdleConnections)
		exchange := func() {
			body := payload{[]byte(`{"model":`), []byte(`"m"`), []byte(`}`)}
			resp, sent, err := tr.post(context.Background(), base, "/chat/completions", tg, body, "application/json", "")
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
	if saved := reads["buffered"] - reads["whole"]; saved < n/2 {
		t.Errorf("read calls for %d exchanges: %d written whole, %d through the write buffer; want about %d fewer written whole",
			n, reads["whole"], reads["buffered"], n)
	}
}
