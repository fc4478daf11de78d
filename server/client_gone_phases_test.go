package server_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/server"
)

// dialRawGateway opens a raw TCP connection to g, closed when the test ends.
func dialRawGateway(t *testing.T, g *gateway) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(g.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// TestHalfClosedClientNotToldOK: a client that half-closes its side of the connection after its
// request is taken for one that left (CONFIG.md: as net/http and nginx do), and its request is
// cancelled; but it still reads, and what it reads must not be a success. It was: the handler
// wrote nothing for a client gone, and the HTTP server finished the answer as a 200 with an empty
// body, while the log line said 499. Now it reads the 499 the log line says, in OpenAI's shape;
// the target's request is cancelled and nothing is left running. On chat, on the Responses
// bridge, and for model "auto".
func TestHalfClosedClientNotToldOK(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"hi"}]}`},
		{"chat stream", "/v1/chat/completions", `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"responses", "/v1/responses", `{"model":"r","input":"hi"}`},
		{"auto", "/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"Write a short poem about the sea."}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			var logs syncBuffer
			up := newFake(t, "t")
			gone := make(chan struct{})
			up.set(func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done() // a model still reading the prompt
				close(gone)
			})
			g := newGateway(t, target("t", up.url(), "private")+"[routes.r]\ntargets = [\"t\"]\n[routes.saif]\ntargets = [\"t\"]\n[routes.deepseek-r1]\ntargets = [\"t\"]\n"+
				"[routes.averroes-q]\ntargets = [\"t\"]\n[auto]\n", nil,
				func(o *server.Options) { o.Logger = slog.New(logfmt.NewText(&logs, nil)) })
			c := dialRawGateway(t, g)
			raw := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				tc.path, len(tc.body), tc.body)
			if _, err := io.WriteString(c, raw); err != nil {
				t.Fatal(err)
			}
			if err := c.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 499 || !strings.Contains(string(b), `"code":"client_closed_request"`) {
				t.Errorf("answer %d %q, want 499 client_closed_request", resp.StatusCode, b)
			}
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				t.Error("the target's request was not cancelled")
			}
			lines := logLines(&logs, 1, func(l string) bool { return strings.Contains(l, "msg=request ") })
			if len(lines) != 1 || !strings.Contains(lines[0], " status=499 ") {
				t.Errorf("request lines %q, want one with status=499", lines)
			}
		})
	}
}
