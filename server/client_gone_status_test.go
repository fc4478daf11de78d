package server_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hayula/gateway/internal/logfmt"
)

// goneWriter is the writer of a client that is gone: every write and flush fails, as a write to
// a connection the peer reset does.
type goneWriter struct {
	h      http.Header
	status int
}

var errGone = errors.New("write: broken pipe")

func (w *goneWriter) Header() http.Header         { return w.h }
func (w *goneWriter) WriteHeader(code int)        { w.status = code }
func (w *goneWriter) Write(p []byte) (int, error) { return 0, errGone }
func (w *goneWriter) FlushError() error           { return errGone }

// TestClientGoneStatus: hayula_requests_total's code and the request line's status are the status
// the client was sent, and 499 for a client gone before its answer's head reached it: a whole
// answer whose write failed, a stream whose head and first event could not be written (both were
// counted 200 before). A stream its client leaves after its first event keeps its 200, as nginx
// keeps the status of an answer it had begun to send; the request line's stream=client_left and
// hayula_stream_ends_total{end="client_left"} say how it ended.
func TestClientGoneStatus(t *testing.T) {
	var logs syncBuffer
	g := logReviewGateway(t, &logs, func(w io.Writer) slog.Handler { return logfmt.NewText(w, nil) })
	serveGone := func(path, body string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Host = "localhost"
		req.RemoteAddr = "127.0.0.1:1234"
		req.Header.Set("Content-Type", "application/json")
		g.srv.Handler().ServeHTTP(&goneWriter{h: http.Header{}}, req)
	}
	const chat, responses = "/v1/chat/completions", "/v1/responses"
	serveGone(chat, `{"model":"fall","messages":[{"role":"user","content":"hi"}]}`)                 // req-a
	serveGone(chat, `{"model":"hold","stream":true,"messages":[{"role":"user","content":"hi"}]}`)   // req-b
	serveGone(responses, `{"model":"fall","input":"hi"}`)                                           // req-c
	g.openStream(t, `{"model":"hold","stream":true,"messages":[{"role":"user","content":"hi"}]}`)() // req-d

	for _, c := range []struct{ id, want string }{
		{"req-a", " status=499 "},
		{"req-b", " status=499 "},
		{"req-c", " status=499 "},
		{"req-d", " status=200 "},
	} {
		lines := logLines(&logs, 1, func(l string) bool {
			return strings.Contains(l, "msg=request ") && strings.Contains(l, "request_id="+c.id)
		})
		if len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("%s: request line %q, want one with %q", c.id, lines, c.want)
		}
	}
	if lines := logLines(&logs, 1, func(l string) bool { return strings.Contains(l, "request_id=req-d") }); len(lines) == 0 ||
		!strings.Contains(lines[0], " stream=client_left ") {
		t.Errorf("req-d: request line %q, want stream=client_left", lines)
	}
	settleStreamEnds(t, g, []string{
		`hayula_stream_ends_total{endpoint="chat",route="hold",target="hold",end="client_left"} 2`,
	})
	_, lines := scrape(t, g)
	for _, w := range []string{
		`hayula_requests_total{endpoint="chat",route="fall",code="499"} 1`,
		`hayula_requests_total{endpoint="chat",route="hold",code="499"} 1`,
		`hayula_requests_total{endpoint="chat",route="hold",code="200"} 1`,
		`hayula_requests_total{endpoint="responses",route="fall",code="499"} 1`,
	} {
		if !lines[w] {
			t.Errorf("no line %q", w)
		}
	}
	for l := range lines {
		if strings.HasPrefix(l, `hayula_requests_total{endpoint="chat",route="fall",code="200"}`) ||
			strings.HasPrefix(l, `hayula_requests_total{endpoint="responses",route="fall",code="200"}`) {
			t.Errorf("a whole answer that did not reach its client counted 200: %q", l)
		}
	}
}
