package upstream

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hayula/gateway/core"
)

// codeWith is body in the content coding named, as a server that codes its answers writes it.
func codeWith(t *testing.T, coding string, body []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&b)
	case "zlib":
		w = zlib.NewWriter(&b)
	case "raw":
		fw, err := flate.NewWriter(&b, flate.DefaultCompression)
		if err != nil {
			t.Fatal(err)
		}
		w = fw
	default:
		t.Fatalf("no coding %q", coding)
	}
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// codedWireModes are wireModes and one more net/http path: an http:// public target reached
// through a proxy, which here is the upstream itself (a compressing reverse proxy's place).
func codedWireModes() []wireMode {
	proxied := wireMode{"http/proxied", func(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64, *http.Transport) {
		srv, conns := countingServer(t, h)
		u, err := url.Parse(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		return srv, conns, &http.Transport{Proxy: http.ProxyURL(u)}
	}}
	return append(append([]wireMode(nil), wireModes...), proxied)
}

// codedTarget is the target for a wireMode's server: public for the proxied mode, which only a
// public target's requests take.
func codedTarget(m wireMode, srv *httptest.Server) *core.Target {
	tg := target(srv.URL)
	tg.Timeout, tg.IdleTimeout = generous, generous
	if m.name == "http/proxied" {
		tg.Privacy = core.Public
	}
	return tg
}

// TestCodedErrorBodyRead: an upstream's error answer (a non-2xx) in gzip, x-gzip or deflate
// (zlib-wrapped as RFC 9110 names it, or raw as some servers send it), which the gateway asked
// not to get but a compressing reverse proxy in front of vLLM or Ollama sends anyway, is read as
// the same body plain: the overflow recognised from its words, the 401's message relayed, the
// 429's wait read from its body; on every wire (net/http's Transport does not decode it a second
// time), whole and streamed. It was left unread: the overflow was a plain 400 that ended the
// chain, where a target with a larger window could have answered, and every message was lost.
func TestCodedErrorBodyRead(t *testing.T) {
	const overflowWords = "This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens."
	answers := []struct {
		name   string
		status int
		body   string
		class  core.Class
	}{
		{"400 overflow", 400, fmt.Sprintf(`{"object":"error","message":%q,"type":"BadRequestError","param":null,"code":400}`, overflowWords), core.ClassOverflow},
		{"401", 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, core.ClassEndpoint},
		{"429 wait in body", 429, fmt.Sprintf(`{"error":{"message":"Rate limit exceeded: free-models-per-min.","code":429,"metadata":{"headers":{"X-RateLimit-Remaining":"0","X-RateLimit-Reset":"%d"}}}}`, fixedNow().Add(12*time.Second).UnixMilli()), core.ClassRateLimit},
	}
	codings := []struct{ header, coder string }{
		{"gzip", "gzip"},
		{"x-gzip", "gzip"},
		{"identity, GZIP", "gzip"},
		{"deflate", "zlib"},
		{"deflate", "raw"},
	}
	for _, a := range answers {
		for _, c := range codings {
			for _, stream := range []bool{false, true} {
				for _, m := range codedWireModes() {
					name := fmt.Sprintf("%s/%s(%s)/%s/stream=%v", a.name, c.header, c.coder, m.name, stream)
					t.Run(name, func(t *testing.T) {
						exchange := func(coded bool) parityOutcome {
							srv, _, tmpl := m.start(t, func(w http.ResponseWriter, r *http.Request) {
								_, _ = io.Copy(io.Discard, r.Body)
								w.Header().Set("Content-Type", "application/json")
								body := []byte(a.body)
								if coded {
									w.Header().Set("Content-Encoding", c.header)
									body = codeWith(t, c.coder, body)
								}
								w.WriteHeader(a.status)
								_, _ = w.Write(body)
							})
							tg := codedTarget(m, srv)
							s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second, Transport: tmpl})
							t.Cleanup(s.Close)
							return parityExchange(t, s, tg, stream)
						}
						plain, coded := exchange(false), exchange(true)
						if plain.Class != a.class || plain.Client.Message == "" {
							t.Fatalf("the plain body's outcome %+v, want class %v with its message", plain, a.class)
						}
						if diff := cmp.Diff(plain, coded, cmpopts.IgnoreFields(parityOutcome{}, "Conns")); diff != "" {
							t.Errorf("coded outcome differs from the plain body's (-plain +coded):\n%s", diff)
						}
					})
				}
			}
		}
	}
}

// TestCodedErrorBodyBounded: an error body that decodes to far more than the error body's bound
// (a bomb: 16 MiB of zeros in a few KiB) is decoded up to the bound and no further, as a plain
// body is cut: what is kept, and what is allocated reading it, is the bound, not the bomb.
func TestCodedErrorBodyBounded(t *testing.T) {
	const bombSize = 16 << 20
	// Gzip members one after another are one gzip body (RFC 1952 §2.2), which a gzip reader
	// reads whole: the bomb is made of one member of 1 MiB, cheaply.
	member := codeWith(t, "gzip", make([]byte, 1<<20))
	gzipBomb := bytes.Repeat(member, bombSize>>20)
	var zb bytes.Buffer
	zw, err := zlib.NewWriterLevel(&zb, zlib.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	for range bombSize >> 20 {
		_, _ = zw.Write(make([]byte, 1<<20))
	}
	_ = zw.Close()
	for _, c := range []struct {
		coding string
		body   []byte
	}{{"gzip", gzipBomb}, {"deflate", zb.Bytes()}} {
		t.Run(c.coding, func(t *testing.T) {
			srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Encoding", c.coding)
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write(c.body)
			})
			tg := target(srv.URL)
			tg.Timeout, tg.IdleTimeout = generous, generous
			s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second})
			t.Cleanup(s.Close)
			ctx, cancel := context.WithTimeout(context.Background(), generous)
			defer cancel()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := s.Chat(ctx, tg, chatReq(false))
			runtime.ReadMemStats(&after)
			se, ok := errors.AsType[*core.StatusError](err)
			if !ok {
				t.Fatalf("error %v is no StatusError", err)
			}
			if len(se.Body) != maxErrorBody || se.Coding != "" {
				t.Errorf("kept %d bytes (coding %q), want the bound, %d, decoded", len(se.Body), se.Coding, maxErrorBody)
			}
			// Far more than decoding to the bound takes, far less than the bomb.
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
				t.Errorf("reading the error allocated %d bytes: the bomb was decoded past the bound", grew)
			}
		})
	}
}

// TestCodedEmptyErrorBody: an error answer that names a coding and has no body has no words,
// as the same answer plain: its status alone, not a body "in Content-Encoding gzip".
func TestCodedEmptyErrorBody(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusNotFound)
	})
	tg := target(srv.URL)
	s := NewSet([]*core.Target{tg}, Options{Now: fixedNow, DialTimeout: 2 * time.Second})
	t.Cleanup(s.Close)
	got := parityExchange(t, s, tg, false)
	if !strings.HasSuffix(got.Client.Message, "answered 404 Not Found") || got.Status != 404 {
		t.Errorf("outcome %+v, want the 404 alone", got)
	}
}
