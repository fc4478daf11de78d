package upstream

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
)

// slowHandshakeListener holds each connection's first read (the client's TLS hello) for delay:
// a TLS terminator that is slow to answer the handshake, as one in front of a busy server is.
type slowHandshakeListener struct {
	net.Listener
	delay time.Duration
}

func (l slowHandshakeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &slowFirstRead{Conn: c, delay: l.delay}, nil
}

type slowFirstRead struct {
	net.Conn
	delay time.Duration
	once  sync.Once
}

func (c *slowFirstRead) Read(p []byte) (int, error) {
	c.once.Do(func() { time.Sleep(c.delay) })
	return c.Conn.Read(p)
}

// TestTLSHandshakeWithinTimeout: an https:// target's timeout counts from the request's sending,
// its TLS handshake included, as CONFIG.md says: a handshake that completes within it is not
// cut short by net/http's own TLSHandshakeTimeout (10s by default, below the 120s default
// timeout), which failed the attempt as a *core.TimeoutError whose message said the target had
// not answered "within 2m0s" ten seconds after it started. The template's 50ms stands in for
// those 10s.
func TestTLSHandshakeWithinTimeout(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answerJSON)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Listener = slowHandshakeListener{Listener: srv.Listener, delay: 250 * time.Millisecond}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tmpl := srv.Client().Transport.(*http.Transport).Clone()
	tmpl.TLSHandshakeTimeout = 50 * time.Millisecond
	tg := target(srv.URL)
	tg.Timeout = generous
	s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tmpl})
	t.Cleanup(s.Close)
	resp, err := s.Chat(context.Background(), tg, chatReq(false))
	if err != nil {
		t.Fatalf("a handshake within the target's timeout failed: %v (%s)", err, errmap.Classify(err).Class)
	}
	resp.Release()
}

// TestTLSHandshakeStallTimesOut: an https:// upstream that accepts the connection and never
// answers the handshake (a wedged server) fails as a timeout within the target's timeout, as an
// http:// one that reads nothing does, through the default Transport (no template), and leaves
// no handshake going on behind it while the Set lives on.
func TestTLSHandshakeStallTimesOut(t *testing.T) {
	tg := target("https://" + neverReads(t)[len("http://"):])
	tg.Timeout = 200 * time.Millisecond
	s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second})
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	before := goleak.IgnoreCurrent()
	_, err := s.Chat(ctx, tg, chatReq(false))
	var te *core.TimeoutError
	if !errors.As(err, &te) || ctx.Err() != nil || te.After != tg.Timeout {
		t.Fatalf("error %v (%T), want a *core.TimeoutError after the target's timeout", err, err)
	}
	if d := errmap.Classify(err); d.Class != core.ClassTimeout {
		t.Errorf("class %s, want timeout", d.Class)
	}
	// net/http dials apart from the request, and the handshake went on after the attempt had
	// failed, for net/http's 10s, however short the timeout: a goroutine pair per request
	// while the server stayed wedged.
	if err := goleak.Find(before); err != nil {
		t.Errorf("the failed attempt left its handshake behind: %v", err)
	}
}

// TestHTTPSTargetOnPlainHTTPCause: an https:// url for a server that speaks plain HTTP (a local
// server behind a url copied with the wrong scheme) is a connection failure whose cause, for the
// client, is the failed handshake: net/http replaces the handshake's RecordHeaderError with its
// own http.ErrSchemeMismatch, which errmap read as an unknown "connection failed".
func TestHTTPSTargetOnPlainHTTPCause(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, answerJSON)
	})
	tg := target("https://" + srv.Listener.Addr().String())
	s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second})
	t.Cleanup(s.Close)
	_, err := s.Chat(context.Background(), tg, chatReq(false))
	d := errmap.Classify(err)
	ce := errmap.Restore([]errmap.Attempt{{Target: tg.Name, Decision: d, Err: err}})
	if want := "upstream local unreachable: TLS handshake failed"; d.Class != core.ClassConnection || ce.Message != want {
		t.Errorf("%s %q, want connection %q (%v)", d.Class, ce.Message, want, err)
	}
}

// TestMalformedHeadParity: an upstream that answers with a head that is not HTTP/1.1 (a bad
// status code or line, a header line without a colon, a bad Content-Length) fails as a
// server_error whose message quotes what was wrong, the target's key redacted, over https://
// as over http://. net/http reports such a head as an error like a dropped connection's, and
// it reached errmap as a connection failure: "unreachable: connection failed", a cause the
// upstream had not given, and the whole line, key and all, in the log. A connection that ends
// inside the head is a connection failure on both.
func TestMalformedHeadParity(t *testing.T) {
	const key = "sk-malformed-key-0123456789"
	for _, tc := range []struct {
		name, raw string
		class     core.Class
		code      string
	}{
		{"bad status code", "HTTP/1.1 2x0 OK\r\n\r\n", core.ClassServerError, "bad_upstream_response"},
		{"not a status line", "<html>oops</html>\r\n\r\n", core.ClassServerError, "bad_upstream_response"},
		{"header line without a colon", "HTTP/1.1 200 OK\r\nBad Header\r\n\r\n", core.ClassServerError, "bad_upstream_response"},
		{"bad Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", core.ClassServerError, "bad_upstream_response"},
		{"key echoed in the status line", "<html>" + key + "</html>\r\n\r\n", core.ClassServerError, "bad_upstream_response"},
		{"head over 64 KiB", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("x", 70<<10) + "\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(answerJSON)) + "\r\n\r\n" + answerJSON, core.ClassServerError, "bad_upstream_response"},
		{"closed inside the head", "HTTP/1.1 200 OK\r\n", core.ClassConnection, "upstream_unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range wireModes[:2] { // HTTP/2 has no way to send a malformed head line
				t.Run(m.name, func(t *testing.T) {
					srv, _, tmpl := m.start(t, func(w http.ResponseWriter, r *http.Request) {
						_, _ = io.Copy(io.Discard, r.Body)
						c, bw, err := w.(http.Hijacker).Hijack()
						if err != nil {
							return
						}
						defer c.Close()
						_, _ = bw.WriteString(tc.raw)
						_ = bw.Flush()
					})
					tg := target(srv.URL)
					tg.APIKey = key
					s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tmpl})
					t.Cleanup(s.Close)
					_, err := s.Chat(context.Background(), tg, chatReq(false))
					d := errmap.Classify(err)
					ce := errmap.Restore([]errmap.Attempt{{Target: tg.Name, Decision: d, Err: err}})
					if d.Class != tc.class || ce.Code != tc.code {
						t.Errorf("%s %s %q, want %s %s (%v)", d.Class, ce.Code, ce.Message, tc.class, tc.code, err)
					}
					if tc.class == core.ClassServerError && !strings.HasPrefix(ce.Message, "upstream local gave an answer the gateway could not read: malformed HTTP answer: ") {
						t.Errorf("message %q does not say what the upstream sent", ce.Message)
					}
					if log := errmap.LogText(err); strings.Contains(ce.Message, key) || strings.Contains(log, key) {
						t.Errorf("the key reached the client's message %q or the log %q", ce.Message, log)
					}
				})
			}
		})
	}
}
