package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
)

// wireMode is one way to reach an upstream: the synchronous client over http://, or net/http's
// Transport over https:// speaking HTTP/1.1 or HTTP/2 (what the paid cloud tail negotiates).
type wireMode struct {
	name  string
	start func(t *testing.T, h http.HandlerFunc) (srv *httptest.Server, conns *atomic.Int64, tmpl *http.Transport)
}

var wireModes = []wireMode{
	{"http", func(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64, *http.Transport) {
		srv, conns := countingServer(t, h)
		return srv, conns, nil
	}},
	{"https/1.1", func(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64, *http.Transport) {
		return tlsServer(t, h)
	}},
	{"https/2", func(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64, *http.Transport) {
		srv, conns := counting(t, h, func(s *httptest.Server) { s.EnableHTTP2 = true; s.StartTLS() })
		return srv, conns, srv.Client().Transport.(*http.Transport).Clone()
	}},
}

// parityOutcome is what a caller of the Set sees of one exchange: how errmap classifies it, what
// the client is told, and how many events a stream gave before it ended.
type parityOutcome struct {
	Class  core.Class
	Status int
	Client errmap.ClientError
	Events int
	Conns  int64 // connections the upstream accepted over the case's requests
}

// TestHTTPAndHTTPSParity runs the same upstream behaviours against an http:// target (the
// synchronous client) and https:// targets over HTTP/1.1 and HTTP/2 (net/http's Transport under
// headTransport and idleTransport), and requires the same classification, the same answer to the
// client, the same point of no return and the same connection reuse on each.
func TestHTTPAndHTTPSParity(t *testing.T) {
	const (
		limit = 150 * time.Millisecond // the target's timeout or idle_timeout a case exercises
		key   = "sk-parity-key-0123456789"
	)
	okEvent := fmt.Sprintf("data: %s\n\n", chunkHello)
	cases := []struct {
		name     string
		stream   bool
		requests int // sent one after another; the outcome is the last's
		timeout  time.Duration
		idle     time.Duration
		h        func(t *testing.T, w http.ResponseWriter, r *http.Request)
		want     parityOutcome
		// h2Message, when set, is the client's message over HTTP/2, where an upstream that
		// aborts resets the stream (RST_STREAM) rather than closing the connection.
		h2Message string
	}{
		{name: "whole answer, connection reused", requests: 3, h: func(_ *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, answerJSON)
		}, want: parityOutcome{Status: 200, Conns: 1}},
		{name: "stream, connection reused", stream: true, requests: 3, h: func(_ *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, doneStream)
		}, want: parityOutcome{Status: 200, Events: 1, Conns: 1}},
		{name: "429 with Retry-After, connection reused", requests: 2, h: func(_ *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Retry-After", "7")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit_exceeded"}}`)
		}, want: parityOutcome{Class: core.ClassRateLimit, Status: 429, Conns: 1, Client: errmap.ClientError{
			Status: 429, Message: "slow down", Type: "rate_limit_error", Code: "rate_limit_exceeded", RetryAfter: 7 * time.Second}}},
		{name: "503 with a Retry-After date", h: func(_ *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Retry-After", fixedNow().Add(30*time.Second).Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		}, want: parityOutcome{Class: core.ClassServerError, Status: 503, Conns: 1, Client: errmap.ClientError{
			Status: 503, Message: "upstream local answered 503 Service Unavailable", Type: "upstream_error", RetryAfter: 30 * time.Second}}},
		{name: "redirect is not followed", h: func(_ *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if r.URL.Path != "/v1/chat/completions" {
				w.WriteHeader(http.StatusTeapot)
				return
			}
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, want: parityOutcome{Class: core.ClassServerError, Status: 502, Conns: 1, Client: errmap.ClientError{
			Status: 502, Message: "upstream local answered 307 Temporary Redirect", Type: "upstream_error"}}},
		{name: "no head within timeout", timeout: limit, h: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			stall(t, r)
		}, want: parityOutcome{Class: core.ClassTimeout, Status: 504, Conns: 1, Client: errmap.ClientError{
			Status: 504, Message: "upstream local did not answer within 150ms", Type: "upstream_error", Code: "upstream_timeout"}}},
		{name: "head then a stalled whole body", idle: limit, h: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Length", "1000")
			_, _ = io.WriteString(w, `{"id":"x",`)
			w.(http.Flusher).Flush()
			stall(t, r)
		}, want: parityOutcome{Class: core.ClassTimeout, Status: 504, Conns: 1, Client: errmap.ClientError{
			Status: 504, Message: "upstream local sent nothing of its answer for 150ms (idle_timeout)", Type: "upstream_error", Code: "upstream_timeout"}}},
		{name: "stream head then no first event", stream: true, idle: limit, h: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			stall(t, r)
		}, want: parityOutcome{Class: core.ClassTimeout, Status: 504, Conns: 1, Client: errmap.ClientError{
			Status: 504, Message: "upstream local sent nothing of its answer for 150ms (idle_timeout)", Type: "upstream_error", Code: "upstream_timeout"}}},
		{name: "stream stalls after its first event", stream: true, idle: limit, h: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, okEvent)
			w.(http.Flusher).Flush()
			stall(t, r)
		}, want: parityOutcome{Class: core.ClassTimeout, Status: 504, Events: 1, Conns: 1, Client: errmap.ClientError{
			Status: 504, Message: "upstream local sent nothing of its answer for 150ms (idle_timeout)", Type: "upstream_error", Code: "upstream_timeout"}}},
		{name: "aborted before the head", h: func(_ *testing.T, _ http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			panic(http.ErrAbortHandler)
		}, h2Message: "upstream local unreachable: connection failed",
			want: parityOutcome{Class: core.ClassConnection, Status: 502, Conns: 1, Client: errmap.ClientError{
				Status: 502, Message: "upstream local unreachable: connection closed before the answer", Type: "upstream_error", Code: "upstream_unreachable"}}},
		{name: "stream aborted after its first event", stream: true, h: func(_ *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, okEvent)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}, h2Message: "upstream local broke off: upstream broke off: stream error: stream ID 1; INTERNAL_ERROR; received from peer",
			want: parityOutcome{Class: core.ClassServerError, Status: 502, Events: 1, Conns: 1, Client: errmap.ClientError{
				Status: 502, Message: "upstream local broke off: connection closed before the answer", Type: "upstream_error", Code: "upstream_stream_error"}}},
		{name: "whole answer cut short", h: func(_ *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Length", "1000")
			_, _ = io.WriteString(w, `{"id":"x",`)
		}, want: parityOutcome{Class: core.ClassServerError, Status: 502, Conns: 1, Client: errmap.ClientError{
			Status: 502, Message: "upstream local broke off: connection closed before the answer", Type: "upstream_error", Code: "upstream_stream_error"}}},
		{name: "stream aborted before its first event", stream: true, h: func(_ *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}, h2Message: "upstream local broke off: upstream broke off: stream error: stream ID 1; INTERNAL_ERROR; received from peer",
			want: parityOutcome{Class: core.ClassServerError, Status: 502, Conns: 1, Client: errmap.ClientError{
				Status: 502, Message: "upstream local broke off: connection closed before the answer", Type: "upstream_error", Code: "upstream_stream_error"}}},
		{name: "key echoed in an error", h: func(_ *testing.T, w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprintf(w, `{"error":{"message":"bad key %s"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		}, want: parityOutcome{Class: core.ClassEndpoint, Status: 401, Conns: 1, Client: errmap.ClientError{
			Status: 401, Message: "bad key " + key, Type: "invalid_request_error"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range wireModes {
				t.Run(m.name, func(t *testing.T) {
					srv, conns, tmpl := m.start(t, func(w http.ResponseWriter, r *http.Request) { tc.h(t, w, r) })
					tg := target(srv.URL)
					tg.APIKey = key
					tg.Timeout, tg.IdleTimeout = cmpOrDur(tc.timeout, generous), cmpOrDur(tc.idle, generous)
					s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tmpl})
					t.Cleanup(s.Close)
					var got parityOutcome
					for range max(tc.requests, 1) {
						got = parityExchange(t, s, tg, tc.stream)
					}
					got.Conns = conns.Load()
					want := tc.want
					if m.name == "https/2" && tc.h2Message != "" {
						want.Client.Message = tc.h2Message
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("outcome (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

func cmpOrDur(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

// parityExchange sends one chat request and reads its answer to the end, bounded by generous.
func parityExchange(t *testing.T, s *Set, tg *core.Target, stream bool) parityOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	var out parityOutcome
	resp, err := s.Chat(ctx, tg, chatReq(stream))
	if err == nil && stream {
		for {
			_, err = resp.Stream.Next()
			if err != nil {
				break
			}
			out.Events++
		}
		_ = resp.Stream.Close()
		if errors.Is(err, io.EOF) {
			err = nil
		}
	} else if err == nil {
		resp.Release()
	}
	if ctx.Err() != nil {
		t.Fatalf("the exchange outlived the test's bound: %v", err)
	}
	d := errmap.Classify(err)
	out.Class, out.Status = d.Class, d.Status
	if err != nil {
		out.Client = errmap.Restore([]errmap.Attempt{{Target: tg.Name, Decision: d, Err: err}})
	}
	return out
}

// TestClientGoneCancelsUpstreamOnEveryWire: a caller that gives up in the middle of a stream
// ends the upstream's request, over http:// and over https:// on HTTP/1.1 and HTTP/2 alike (the
// upstream's handler sees its context end).
func TestClientGoneCancelsUpstreamOnEveryWire(t *testing.T) {
	for _, m := range wireModes {
		t.Run(m.name, func(t *testing.T) {
			gone := make(chan struct{})
			srv, _, tmpl := m.start(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = fmt.Fprintf(w, "data: %s\n\n", chunkHello)
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					close(gone)
				case <-t.Context().Done():
				}
			})
			tg := target(srv.URL)
			s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tmpl})
			t.Cleanup(s.Close)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp, err := s.Chat(ctx, tg, chatReq(true))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Stream.Close()
			if _, err := resp.Stream.Next(); err != nil {
				t.Fatal(err)
			}
			next := nextAsync(resp.Stream)
			cancel()
			// Not the class of err: net/http's HTTP/1 body sometimes reads io.EOF rather than the
			// context's error once the request is cancelled (about one run in ten under -race),
			// which the stream reports as an upstream that closed early; the server takes any
			// failure of a request whose context has ended for the client gone.
			if err := wait(t, next); err == nil {
				t.Error("the stream went on after its caller left")
			}
			wait(t, chanOf(gone))
		})
	}
}

// chanOf turns a channel that is closed into one that yields, for wait.
func chanOf(c chan struct{}) chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		<-c
		out <- struct{}{}
	}()
	return out
}

// TestTimeoutBoundsTheWriteOnEveryWire: TestTimeoutBoundsTheWrite over HTTP/2 too, where the
// request body waits on flow control rather than on socket buffers: an upstream that never
// reads the body nor answers fails as a *core.TimeoutError at the target's timeout.
func TestTimeoutBoundsTheWriteOnEveryWire(t *testing.T) {
	body := `{"model":"auto","messages":[{"role":"user","content":"` + strings.Repeat("x", 16<<20) + `"}]}`
	for _, m := range wireModes[1:] { // http:// is TestTimeoutBoundsTheWrite's
		t.Run(m.name, func(t *testing.T) {
			srv, _, tmpl := m.start(t, func(_ http.ResponseWriter, r *http.Request) { stall(t, r) })
			tg := target(srv.URL)
			tg.Timeout = 200 * time.Millisecond
			s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tmpl})
			t.Cleanup(s.Close)
			ctx, cancel := context.WithTimeout(context.Background(), generous)
			defer cancel()
			_, err := s.Chat(ctx, tg, &core.Request{Model: "auto", Body: []byte(body)})
			var te *core.TimeoutError
			if !errors.As(err, &te) || ctx.Err() != nil {
				t.Fatalf("error %v (%T), want a *core.TimeoutError before the test's own deadline", err, err)
			}
		})
	}
}
