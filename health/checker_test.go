package health_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/health"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// gzipped is s in gzip.
func gzipped(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.Bytes()
}

// checked is a target with active checks against url.
func checked(name, url string, index int) *core.Target {
	return &core.Target{Name: name, Index: index, HealthURL: url, HealthInterval: 30 * time.Second,
		HealthTimeout: 2 * time.Second, DegradedAfter: 10 * time.Second, Stats: &core.Stats{}}
}

// TestCheck runs one check per case against an httptest server and compares what the tracker
// then says. The manual clock measures latency, so a handler makes an answer "slow" by advancing
// it.
func TestCheck(t *testing.T) {
	type outcome struct {
		Status       string
		Loading      bool
		RetryAfter   time.Duration
		Failed       bool
		CheckLatency time.Duration
	}
	cases := []struct {
		name    string
		handler func(clk *health.ManualClock) http.HandlerFunc
		want    outcome
	}{
		{"200 in time is healthy", func(clk *health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				clk.Advance(time.Second)
				fmt.Fprint(w, `{"object":"list","data":[]}`)
			}
		}, outcome{Status: "healthy", CheckLatency: time.Second}},
		{"200 slower than degraded_after is degraded", func(clk *health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				clk.Advance(11 * time.Second)
				fmt.Fprint(w, `{"status":"ok"}`)
			}
		}, outcome{Status: "degraded", CheckLatency: 11 * time.Second}},
		{"204 is healthy too", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }
		}, outcome{Status: "healthy"}},
		{"503 with Retry-After is loading", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "12")
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}, outcome{Status: "loading", Loading: true, RetryAfter: 12 * time.Second}},
		{"503 with a Retry-After date is loading", func(clk *health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", clk.Now().Add(40*time.Second).Format(http.TimeFormat))
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}, outcome{Status: "loading", Loading: true, RetryAfter: 40 * time.Second}},
		{"503 with a Retry-After too large for a Duration is loading without one", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				// 18446744074 s is 2^64 ns and 0.29 s: multiplied in an int64 it wraps to 0.29 s.
				// Absurd, it is ignored, as a request's answer's is (TestCheckAbsurdRetryAfterIgnored).
				w.Header().Set("Retry-After", "18446744074")
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}, outcome{Status: "loading", Loading: true}},
		{"503 with a negative Retry-After is loading without one", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "-5")
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}, outcome{Status: "loading", Loading: true}},
		{"SAIF's 200 status loading is loading", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, `{"status": "loading", "model": "rev_eng"}`)
			}
		}, outcome{Status: "loading", Loading: true, RetryAfter: 0}},
		{"llama-server's 503 status loading model is loading", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"status":"loading model"}`)
			}
		}, outcome{Status: "loading", Loading: true}},
		// Its /health while it loads, and its answer to a request then, which the request path
		// reads as loading (errmap): the check said failed, and after health_failures checks
		// the target was unavailable for the whole load.
		{"llama-server's 503 Loading model error is loading", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`)
			}
		}, outcome{Status: "loading", Loading: true}},
		{"a 500 saying loading in its error is a failed check", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, `{"error":{"code":500,"message":"error loading model","type":"unavailable_error"}}`)
			}
		}, outcome{Status: "healthy", Failed: true}},
		// A reverse proxy in front of llama-server that gzips whatever it sends, asked or not:
		// the request path decodes an error body so coded and reads it as loading, and the check
		// read the compressed bytes, found no words, and failed.
		{"a loading answer coded gzip anyway is loading", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write(gzipped(`{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`))
			}
		}, outcome{Status: "loading", Loading: true}},
		// Without Accept-Encoding a server may use any coding (RFC 9110 §12.5.3): asked for none,
		// as a request asks, it answers plain, and its loading words are read.
		{"a check asks for no coding", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Accept-Encoding") != "identity" {
					w.Header().Set("Content-Encoding", "br")
					_, _ = w.Write([]byte("\x1b\x5d\x00\xf8\xa5\x40\x42\x02"))
					return
				}
				fmt.Fprint(w, `{"status":"loading"}`)
			}
		}, outcome{Status: "loading", Loading: true}},
		{"a loading answer that does not decode is a failed check", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`))
			}
		}, outcome{Status: "healthy", Failed: true}},
		{"a bare 503 is a failed check", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }
		}, outcome{Status: "healthy", Failed: true}},
		{"500 is a failed check", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }
		}, outcome{Status: "healthy", Failed: true}},
		{"a redirect is a failed check", func(*health.ManualClock) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }
		}, outcome{Status: "healthy", Failed: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := health.NewManualClock(t0)
			srv := httptest.NewServer(tc.handler(clk))
			defer srv.Close()
			tg := checked("a", srv.URL+"/v1/models", 0)
			tr := health.NewTracker(1, clk, health.Policy{CheckFailures: 1})
			c := health.NewChecker(tr, []*core.Target{tg}, health.CheckerOptions{Clock: clk})
			defer c.Close()
			r, ok := c.Check(context.Background(), tg)
			if !ok {
				t.Fatal("Check reported nothing")
			}
			st := tr.Snapshot(tg)
			got := outcome{Status: st.Status, Loading: r.Loading, RetryAfter: r.RetryAfter, Failed: r.Err != nil,
				CheckLatency: st.CheckLatency}
			if got.Failed {
				// CheckFailures 1: a failure makes the target unavailable at once.
				if st.Status != "unavailable" {
					t.Errorf("failed check left status %q", st.Status)
				}
				got.Status = "healthy"
				var ce *health.CheckError
				if !errors.As(r.Err, &ce) || ce.Target != "a" {
					t.Errorf("Err = %v, want a *health.CheckError for a", r.Err)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckNoAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/health"
	ln.Close()

	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer slow.Close()
	defer close(hang)

	for _, tc := range []struct{ name, url string }{
		{"connection refused", refused},
		{"no answer within health_timeout", slow.URL + "/health"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := checked("a", tc.url, 0)
			tg.HealthTimeout = 50 * time.Millisecond
			tr := health.NewTracker(1, health.NewManualClock(t0), health.Policy{})
			c := health.NewChecker(tr, []*core.Target{tg}, health.CheckerOptions{})
			defer c.Close()
			r, _ := c.Check(context.Background(), tg)
			var ce *health.CheckError
			if !errors.As(r.Err, &ce) || ce.Err == nil {
				t.Fatalf("Err = %v, want a *health.CheckError with a transport error", r.Err)
			}
			if st := tr.Snapshot(tg); st.CheckFailures != 1 || st.CheckError == "" {
				t.Fatalf("state %+v, want one failed check with its error", st)
			}
		})
	}
}

func TestCheckSendsTheKeyAndSkipsWhatURLSkips(t *testing.T) {
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	a, b := checked("a", srv.URL+"/models", 0), checked("b", srv.URL+"/models", 1)
	a.APIKey = "sk-up"
	off := checked("off", srv.URL+"/models", 2)
	off.HealthInterval = 0
	clk := health.NewManualClock(t0)
	tr := health.NewTracker(3, clk, health.Policy{CheckFailures: 1})
	c := health.NewChecker(tr, []*core.Target{a, b, off}, health.CheckerOptions{Clock: clk,
		URL: func(t *core.Target) (string, bool) { return t.HealthURL, t.Name != "b" }})
	defer c.Close()
	if diff := cmp.Diff([]string{"a", "b"}, names(c.Targets())); diff != "" {
		t.Errorf("checked targets (-want +got):\n%s", diff)
	}
	c.CheckAll(context.Background())
	if got := auth.Load(); got != "Bearer sk-up" {
		t.Errorf("Authorization = %v, want the target's key", got)
	}
	if st := tr.Snapshot(a); st.LastCheck.IsZero() {
		t.Error("a was not checked")
	}
	if st := tr.Snapshot(b); !st.LastCheck.IsZero() {
		t.Error("b was checked although URL skipped it")
	}
}

// TestCheckPrivateTargetBypassesProxy: with a proxy for every request, a public target's check
// (and its key) goes through it and a private target's never does.
func TestCheckPrivateTargetBypassesProxy(t *testing.T) {
	var direct, proxied atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { direct.Add(1) }))
	defer up.Close()
	proxy := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { proxied.Add(1) }))
	defer proxy.Close()
	proxyURL, _ := url.Parse(proxy.URL)
	private, public := checked("private", up.URL+"/models", 0), checked("public", up.URL+"/models", 1)
	private.Privacy, public.Privacy = core.Private, core.Public
	private.APIKey = "sk-private"
	clk := health.NewManualClock(t0)
	c := health.NewChecker(health.NewTracker(2, clk, health.Policy{}), []*core.Target{private, public},
		health.CheckerOptions{Clock: clk, Proxy: func(*http.Request) (*url.URL, error) { return proxyURL, nil }})
	defer c.Close()
	c.CheckAll(context.Background())
	if direct.Load() != 1 || proxied.Load() != 1 {
		t.Errorf("%d checks went direct and %d through the proxy, want 1 and 1", direct.Load(), proxied.Load())
	}
}

// TestCheckerSchedule runs the goroutines on a manual clock: a check at Start, the next one only
// once the interval has passed on the clock, none after Close.
func TestCheckerSchedule(t *testing.T) {
	hits := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- struct{}{}
	}))
	defer srv.Close()
	clk := health.NewManualClock(t0)
	tg := checked("a", srv.URL+"/health", 0)
	tr := health.NewTracker(1, clk, health.Policy{})
	c := health.NewChecker(tr, []*core.Target{tg}, health.CheckerOptions{Clock: clk})
	c.Start()
	c.Start() // a second Start changes nothing
	<-hits
	clk.BlockUntil(1) // the checker has scheduled its next round
	if len(hits) != 0 {
		t.Fatalf("%d extra checks before the interval passed", len(hits))
	}
	clk.Advance(29 * time.Second)
	clk.Advance(time.Second)
	<-hits
	clk.BlockUntil(1)
	c.Close()
	c.Close()
	if n := clk.Pending(); n != 0 {
		t.Errorf("%d timers still pending after Close", n)
	}
	c.Start() // after Close: nothing
	clk.Advance(time.Hour)
	if len(hits) != 0 {
		t.Fatalf("checks after Close: %d", len(hits))
	}
	if st := tr.Snapshot(tg); st.Status != "healthy" || !st.LastCheck.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("state %+v, want healthy, last checked at 30s", st)
	}
}

func names(ts []*core.Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}
