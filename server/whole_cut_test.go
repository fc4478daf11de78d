package server_test

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/server"
)

// TestWholeAnswerCutAfterHead: a whole (non-streamed) answer whose head reached the client, which
// then left during the body (a 16 MB answer, a client that read the head and reset the
// connection), is logged and counted with the status it was sent, 200, as a stream its client
// leaves after its head is, and its request line says cut=client_left, as a stream's says
// stream=client_left. It was logged and counted 499, "client closed request", which nginx and
// the gateway's own docs keep for a client that got no head. Each way a whole answer goes out:
// one target at the first try (writeWhole), a chain that moved on (the header map's way), and
// the Responses bridge. TestClientGoneStatus holds the 499 of an answer nothing of which went out.
func TestWholeAnswerCutAfterHead(t *testing.T) {
	t.Parallel()
	big := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"` + strings.Repeat("x", 16<<20) + `"},"finish_reason":"stop"}]}`
	up, down := newFake(t, "up"), newFake(t, "down")
	up.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, big)
	})
	down.set(errHandler(503, "overloaded", "busy"))
	var logs syncBuffer
	g := newGateway(t, target("up", up.url(), "private")+target("down", down.url(), "private")+
		"[routes.big]\ntargets = [\"up\"]\n[routes.fall]\ntargets = [\"down\", \"up\"]\n", nil,
		func(o *server.Options) { o.Logger = slog.New(logfmt.NewText(&logs, nil)) })
	for _, c := range []struct{ id, path, body string }{
		{"cut-whole", "/v1/chat/completions", `{"model":"big","messages":[{"role":"user","content":"hi"}]}`},
		{"cut-chain", "/v1/chat/completions", `{"model":"fall","messages":[{"role":"user","content":"hi"}]}`},
		{"cut-responses", "/v1/responses", `{"model":"big","input":"hi"}`},
	} {
		t.Run(c.id, func(t *testing.T) {
			conn := dialRawGateway(t, g)
			_, err := io.WriteString(conn, "POST "+c.path+" HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
				"X-Request-Id: "+c.id+"\r\nContent-Length: "+strconv.Itoa(len(c.body))+"\r\n\r\n"+c.body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || resp.ContentLength < 16<<20 {
				t.Fatalf("head %d, length %d", resp.StatusCode, resp.ContentLength)
			}
			_ = conn.SetLinger(0) // a reset: the gateway's write fails rather than fill the buffers
			conn.Close()
			lines := logLines(&logs, 1, func(l string) bool {
				return strings.Contains(l, "msg=request ") && strings.Contains(l, "request_id="+c.id)
			})
			if len(lines) != 1 || !strings.Contains(lines[0], " status=200 ") || !strings.Contains(lines[0], " cut=client_left ") ||
				strings.Contains(lines[0], " stream=") {
				t.Errorf("request line %q, want status=200 and cut=client_left, no stream=", lines)
			}
		})
	}
	_, lines := scrape(t, g)
	for _, w := range []string{
		`hayula_requests_total{endpoint="chat",route="big",code="200"} 1`,
		`hayula_requests_total{endpoint="chat",route="fall",code="200"} 1`,
		`hayula_requests_total{endpoint="responses",route="big",code="200"} 1`,
	} {
		if !lines[w] {
			t.Errorf("no line %q", w)
		}
	}
	for l := range lines {
		if strings.HasPrefix(l, "hayula_requests_total{") && strings.Contains(l, `code="499"`) {
			t.Errorf("an answer whose head went out counted 499: %q", l)
		}
		if strings.HasPrefix(l, "hayula_stream_ends_total{") {
			t.Errorf("a whole answer counted as a stream: %q", l)
		}
	}
}
