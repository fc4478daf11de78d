package server_test

// What an operator reads in the log of a request: its one line at info, the cause of each failed
// attempt of its chain, and how a stream that did not end ended.

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/server"
)

// logReviewGateway is a gateway with a chain whose first three targets fail three ways, a chain
// that fails whole, a stream the upstream breaks off and one its client leaves, logging at info
// through newHandler.
func logReviewGateway(t *testing.T, logs *syncBuffer, newHandler func(io.Writer) slog.Handler) *gateway {
	t.Helper()
	e500, slow, ok, brk, hold := newFake(t, "e500"), newFake(t, "slow"), newFake(t, "ok"), newFake(t, "brk"), newFake(t, "hold")
	e500.set(errHandler(500, "boom", "internal trouble"))
	slow.set(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	event := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}` + "\n\n"
	brk.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, event)
		w.(http.Flusher).Flush()
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	})
	hold.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, event)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	cfg := target("down", down, "private") + target("e500", e500.url(), "private") +
		target("slow", slow.url(), "private", `timeout = "50ms"`) + target("ok", ok.url(), "private") +
		target("brk", brk.url(), "private") + target("hold", hold.url(), "private") +
		"[routes.fall]\ntargets = [\"down\", \"e500\", \"slow\", \"ok\"]\n" +
		"[routes.dead]\ntargets = [\"down\", \"e500\"]\n" +
		"[routes.brk]\ntargets = [\"brk\"]\n[routes.hold]\ntargets = [\"hold\"]\n"
	return newGateway(t, cfg, nil, func(o *server.Options) {
		o.Logger = slog.New(newHandler(logs))
		n := 0
		o.NewRequestID = func() string { n++; return "req-" + string(rune('a'+n-1)) }
	})
}

// linesOf are the log's lines about request id.
func linesOf(logs *syncBuffer, id string, n int) []string {
	return logLines(logs, n, func(l string) bool { return strings.Contains(l, "request_id="+id) })
}

// TestRequestLogReview: at info, each request has one line naming its route, its chain (whose
// last target is the one that served a 200), status, duration and request ID; each failed attempt
// of a chain has a warn line with its target, class and cause (never the upstream's words); a
// stream the upstream broke off and one its client left say so on the request's line, and a
// client that left is no upstream's failure: no warn line blames one.
func TestRequestLogReview(t *testing.T) {
	for name, newHandler := range map[string]func(io.Writer) slog.Handler{
		"slog":   func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) },
		"logfmt": func(w io.Writer) slog.Handler { return logfmt.NewText(w, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			var logs syncBuffer
			g := logReviewGateway(t, &logs, newHandler)

			if rep := g.chat(t, "fall"); rep.status != 200 {
				t.Fatalf("fall: %d %s", rep.status, rep.body)
			}
			lines := linesOf(&logs, "req-a", 4)
			var req []string
			causes := map[string]string{}
			for _, l := range lines {
				switch {
				case strings.Contains(l, "msg=request "):
					req = append(req, l)
				case strings.Contains(l, "level=WARN") && strings.Contains(l, `msg="attempt failed"`):
					for _, tc := range []struct{ target, class, cause string }{
						{"down", "connection", "refused"},
						// The status, never the upstream's message (TestLogHoldsNoContent).
						{"e500", "server_error", "status 500"},
						{"slow", "timeout", ""},
					} {
						if strings.Contains(l, "target="+tc.target+" ") {
							if !strings.Contains(l, "class="+tc.class) || !strings.Contains(l, tc.cause) || !strings.Contains(l, "route=fall") {
								t.Errorf("attempt line of %s: want class %s and cause %q: %s", tc.target, tc.class, tc.cause, l)
							}
							if strings.Contains(l, "internal trouble") {
								t.Errorf("attempt line of %s holds the upstream's message: %s", tc.target, l)
							}
							causes[tc.target] = l
						}
					}
				}
			}
			if len(req) != 1 || len(causes) != 3 {
				t.Fatalf("want one request line and a warn line for each of down, e500 and slow:\n%s", strings.Join(lines, "\n"))
			}
			for _, f := range []string{"route=fall ", "chain=down→e500→slow→ok ", "status=200 ", "duration=", "request_id=req-a"} {
				if !strings.Contains(req[0], f) {
					t.Errorf("request line lacks %q: %s", f, req[0])
				}
			}

			if rep := g.chat(t, "dead"); rep.status != 503 {
				t.Fatalf("dead: %d %s", rep.status, rep.body)
			}
			lines = linesOf(&logs, "req-b", 3)
			if n := strings.Count(strings.Join(lines, "\n"), `msg="attempt failed"`); n != 2 ||
				!strings.Contains(strings.Join(lines, "\n"), "chain=down→e500 status=503 ") {
				t.Errorf("a chain that failed whole: want its request line and two attempt lines:\n%s", strings.Join(lines, "\n"))
			}

			g.post(t, "/v1/chat/completions", `{"model":"brk","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			lines = linesOf(&logs, "req-c", 2)
			if j := strings.Join(lines, "\n"); !strings.Contains(j, `msg="stream broke off"`) || !strings.Contains(j, " stream=broke_off ") {
				t.Errorf("a stream the upstream broke off: want its warn line, and the request line to say so:\n%s", j)
			}

			// The client reads the first event and hangs up.
			g.openStream(t, `{"model":"hold","stream":true,"messages":[{"role":"user","content":"hi"}]}`)()
			lines = linesOf(&logs, "req-d", 1)
			j := strings.Join(lines, "\n")
			if !strings.Contains(j, "msg=request ") || !strings.Contains(j, " stream=client_left ") {
				t.Errorf("a stream its client left: the request line should say so:\n%s", j)
			}
			if strings.Contains(j, "level=WARN") || strings.Contains(j, "level=ERROR") {
				t.Errorf("a stream its client left is blamed on its upstream:\n%s", j)
			}
		})
	}
}
