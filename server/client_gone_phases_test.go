package server_test

import (
	"bufio"
	"context"
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

// goneGateway is a gateway with route r over the upstream up (an openai target), a key "k"
// (token "tok") capped at max_concurrent = 1, and its log lines in logs.
func goneGateway(t *testing.T, up *fake, logs *syncBuffer) *gateway {
	t.Helper()
	return newGateway(t, keyBlock("k", "tok", "max_concurrent = 1")+target("t", up.url(), "private")+
		"[routes.r]\ntargets = [\"t\"]\n", nil, func(o *server.Options) { o.Logger = slog.New(logfmt.NewText(logs, nil)) })
}

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

// rawChatHead is the head of a chat request of key k whose body is framed by framing (a
// Content-Length or Transfer-Encoding field).
func rawChatHead(framing string) string {
	return "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer tok\r\n" +
		"Content-Type: application/json\r\n" + framing + "\r\n\r\n"
}

// requestLine is the request line of the one request of g's log whose path is a chat's.
func requestLine(t *testing.T, logs *syncBuffer) string {
	t.Helper()
	lines := logLines(logs, 1, func(l string) bool {
		return strings.Contains(l, "msg=request ") && strings.Contains(l, "path=/v1/chat/completions")
	})
	if len(lines) != 1 {
		t.Fatalf("request lines %q, want one", lines)
	}
	return lines[0]
}

// slotFree checks that the key's one slot was given back: a request of the key is served.
func slotFree(t *testing.T, g *gateway) {
	t.Helper()
	var rep reply
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		rep = g.post(t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"hi"}]}`,
			"Authorization", "Bearer tok")
		if rep.status != http.StatusTooManyRequests || time.Now().After(deadline) {
			break
		}
	}
	if rep.status != http.StatusOK {
		t.Errorf("the next request of the key: %d %s, want 200 (its slot given back)", rep.status, rep.body)
	}
}

// TestClientGoneMidBody: a client that goes away while its request's body is still being sent
// (the connection closed or reset before the body's declared length or last chunk) is counted
// and logged as a client that left, 499, not as a request the gateway refused (400
// invalid_body, which it was before); nothing reaches the target, the key's concurrency slot is
// given back, and nothing of the request is left running.
func TestClientGoneMidBody(t *testing.T) {
	for _, tc := range []struct {
		name, framing, sent string
		reset               bool
	}{
		{"content-length", "Content-Length: 500", `{"model":"r","mess`, false},
		{"chunked", "Transfer-Encoding: chunked", "12\r\n{\"model\":\"r\",\"mess\r\n", false},
		{"chunked mid-chunk", "Transfer-Encoding: chunked", "40\r\n{\"model\":\"r\",\"mess", false},
		{"reset", "Content-Length: 500", `{"model":"r","mess`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			var logs syncBuffer
			up := newFake(t, "t")
			g := goneGateway(t, up, &logs)
			c := dialRawGateway(t, g)
			if _, err := io.WriteString(c, rawChatHead(tc.framing)+tc.sent); err != nil {
				t.Fatal(err)
			}
			if tc.reset {
				_ = c.SetLinger(0) // the close sends a reset
			}
			c.Close()
			line := requestLine(t, &logs)
			if !strings.Contains(line, " status=499 ") {
				t.Errorf("request line %q, want status=499", line)
			}
			_, metrics := scrape(t, g, "Authorization", "Bearer tok")
			if want := `hayula_requests_total{endpoint="chat",route="",code="499"} 1`; !metrics[want] {
				t.Errorf("no line %q", want)
			}
			for l := range metrics {
				if strings.HasPrefix(l, `hayula_requests_total{endpoint="chat",route="",code="400"}`) {
					t.Errorf("a client gone mid-body counted as refused: %q", l)
				}
			}
			if n := up.hits.Load(); n != 0 {
				t.Errorf("the target got %d requests, want none", n)
			}
			slotFree(t, g)
		})
	}
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

// TestHalfClosedStreamNotEndedAsWhole: a stream whose client half-closes its side is cancelled
// once the server takes the client for gone, after the head and first event went out; the client
// still reads, and its stream must not end as if whole. It did: the relay stopped and the HTTP
// server ended the chunked body cleanly, with neither [DONE] nor an error event, which an SDK
// reads as a whole answer of what had come. It now ends with an error event saying
// client_closed_request (on the Responses bridge, response.failed), as a stream the upstream
// broke off ends with one; the request line keeps its 200 with stream=client_left, and the
// target's request is cancelled.
func TestHalfClosedStreamNotEndedAsWhole(t *testing.T) {
	for _, tc := range []struct{ name, path, body, want string }{
		{"chat", "/v1/chat/completions", `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`, `data: {"error":`},
		{"responses", "/v1/responses", `{"model":"r","stream":true,"input":"hi"}`, "event: response.failed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			var logs syncBuffer
			up := newFake(t, "t")
			gone := make(chan struct{})
			up.set(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`+"\n\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done() // a model still thinking of its next token
				close(gone)
			})
			g := newGateway(t, target("t", up.url(), "private")+"[routes.r]\ntargets = [\"t\"]\n", nil,
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
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d %q, want the stream's 200", resp.StatusCode, b)
			}
			if err == nil && (!strings.Contains(string(b), tc.want) || !strings.Contains(string(b), `"client_closed_request"`)) {
				t.Errorf("the stream ended cleanly without %q and client_closed_request: %q", tc.want, b)
			}
			if strings.Contains(string(b), "[DONE]") {
				t.Errorf("a cut stream ended with [DONE]: %q", b)
			}
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				t.Error("the target's request was not cancelled")
			}
			lines := logLines(&logs, 1, func(l string) bool { return strings.Contains(l, "msg=request ") })
			if len(lines) != 1 || !strings.Contains(lines[0], " status=200 ") || !strings.Contains(lines[0], " stream=client_left ") {
				t.Errorf("request lines %q, want one with status=200 and stream=client_left", lines)
			}
		})
	}
}

// TestClientGoneDuringFallback: a client that goes away while the chain is between targets (its
// first target failed with a retryable status and the same-target retry's backoff is under way)
// ends the request there: the second target is never asked. One that goes away while the second,
// slow, target is being asked has that target's request cancelled. Either way the request is
// counted and logged 499, the key's slot is given back, and nothing is left running; through the
// gateway's own HTTP/1.1 client and through net/http's.
func TestClientGoneDuringFallback(t *testing.T) {
	for _, via := range []string{"h1", "net/http"} {
		for _, during := range []string{"backoff", "second target"} {
			t.Run(via+"/"+during, func(t *testing.T) {
				ignore := goleak.IgnoreCurrent()
				t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
				var logs syncBuffer
				first, second := newFake(t, "first"), newFake(t, "second")
				first.set(errHandler(http.StatusServiceUnavailable, "busy", "busy"))
				asked, gone := make(chan struct{}, 1), make(chan struct{}, 1)
				second.set(func(w http.ResponseWriter, r *http.Request) {
					asked <- struct{}{}
					<-r.Context().Done()
					gone <- struct{}{}
				})
				waiting := make(chan struct{}, 1)
				g := newGateway(t, keyBlock("k", "tok", "max_concurrent = 1")+
					target("first", first.url(), "private", "max_retries = 1")+target("second", second.url(), "private")+
					"[routes.r]\ntargets = [\"first\", \"second\"]\n", nil, viaNetHTTP(t, via == "net/http"),
					func(o *server.Options) {
						o.Logger = slog.New(logfmt.NewText(&logs, nil))
						o.Sleep = func(ctx context.Context, d time.Duration) error {
							if during != "backoff" {
								return nil
							}
							waiting <- struct{}{}
							<-ctx.Done() // the backoff outlasts the client
							return ctx.Err()
						}
					})
				c := dialRawGateway(t, g)
				body := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
				if _, err := io.WriteString(c, rawChatHead(fmt.Sprintf("Content-Length: %d", len(body)))+body); err != nil {
					t.Fatal(err)
				}
				at := waiting
				if during != "backoff" {
					at = asked
				}
				select {
				case <-at:
				case <-time.After(10 * time.Second):
					t.Fatalf("the chain never reached its %s", during)
				}
				c.Close()
				if during != "backoff" {
					select {
					case <-gone:
					case <-time.After(10 * time.Second):
						t.Error("the second target's request was not cancelled")
					}
				}
				line := requestLine(t, &logs)
				if !strings.Contains(line, " status=499 ") {
					t.Errorf("request line %q, want status=499", line)
				}
				if during == "backoff" && second.hits.Load() != 0 {
					t.Errorf("the second target was asked %d times after its client left", second.hits.Load())
				}
				first.set(okHandler("first"))
				slotFree(t, g)
			})
		}
	}
}
