package server_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/server"
)

// TestKeyTPMRetryAfterOfAbsurdUsage: an upstream that reports absurd usage (a trillion tokens)
// against tpm = 1 leaves the key in a debt the bucket counts to 292 years, its longest wait; the
// 429 still says it in whole seconds, a positive number. Rounding the longest wait up to a
// second overflowed: Retry-After: -9223372035, which a client reads as "now".
func TestKeyTPMRetryAfterOfAbsurdUsage(t *testing.T) {
	up := newFake(t, "up")
	up.set(usageHandler(1_000_000_000_000, 0, false, false))
	g := newGateway(t, keyBlock("k", "hk-k", "tpm = 1")+target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	k := []string{"Authorization", "Bearer hk-k"}
	if rep := g.chat(t, "r", k...); rep.status != 200 {
		t.Fatalf("first request: %d %s", rep.status, rep.body)
	}
	rep := g.chat(t, "r", k...)
	if rep.status != 429 {
		t.Fatalf("a key in debt: %d %s, want 429", rep.status, rep.body)
	}
	ra := rep.header.Get("Retry-After")
	if n, err := strconv.ParseInt(ra, 10, 64); err != nil || n < 292*365*24*3600 {
		t.Errorf("Retry-After %q, want the 292 years the bucket counts to, in seconds", ra)
	}
}

// TestKeyTPMRefusalSaysWaitAsOpenAI: the tpm refusal's message reads as OpenAI's TPM error does
// ("… on tokens per min (TPM): Limit 30000, Used 29000, … Please try again in 6m54.72s."), which
// clients' retry helpers parse: the wait in Go's duration form, rounded up to a millisecond, in
// milliseconds under a second. %g wrote a wait of 11.6 days or more as 1.2e+06s, and 600 ms as
// 0.6s.
func TestKeyTPMRefusalSaysWaitAsOpenAI(t *testing.T) {
	for _, tc := range []struct {
		name          string
		tpm, used     int
		advance       time.Duration
		limited, wait string
	}{
		{"seconds", 100, 150, 0, "Limit 100, Used 150", "30.6s"},
		{"under a second", 100, 150, 30 * time.Second, "Limit 100, Used 100", "600ms"},
		{"minutes", 1000, 8000, 0, "Limit 1000, Used 8000", "7m0.06s"},
		{"days", 1, 20000, 0, "Limit 1, Used 20000", "333h20m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake(t, "up")
			up.set(usageHandler(tc.used, 0, false, false))
			g := newGateway(t, keyBlock("k", "hk-k", fmt.Sprintf("tpm = %d", tc.tpm))+target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
			k := []string{"Authorization", "Bearer hk-k"}
			if rep := g.chat(t, "r", k...); rep.status != 200 {
				t.Fatalf("first request: %d %s", rep.status, rep.body)
			}
			g.clock.Advance(tc.advance)
			rep := g.chat(t, "r", k...)
			msg, _ := rep.errorField(t, "message").(string)
			want := "Rate limit reached for key k on tokens per min (TPM): " + tc.limited + ". Please try again in " + tc.wait + "."
			if msg != want {
				t.Errorf("message %q\nwant    %q", msg, want)
			}
		})
	}
}

// TestKeyTPMAnswerUnderWayAcrossReload: an answer whose request the replaced configuration
// admitted is charged to the bucket the key has when the answer ends (matched by name), once:
// the same bucket when the reload left tpm alone, and the new one when it changed tpm, however
// many reloads came meanwhile. It was charged to the replaced bucket, which nothing reads any
// more: an operator who lowers a key's tpm because of a long generation saw it go uncharged.
func TestKeyTPMAnswerUnderWayAcrossReload(t *testing.T) {
	for _, tc := range []struct {
		name string
		tpms []int // the key's tpm in the first configuration, then after each reload
	}{
		{"unchanged", []int{200, 200}},
		{"changed", []int{1000, 200}},
		{"changed twice", []int{1000, 500, 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake(t, "up")
			release := make(chan struct{})
			entered := make(chan struct{}, 1)
			up.set(func(w http.ResponseWriter, r *http.Request) {
				entered <- struct{}{}
				<-release
				usageHandler(200, 50, false, false)(w, r)
			})
			clock := health.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
			build := func(tpm int, prev *server.Server) *server.Server {
				text := keyBlock("k", "hk-k", fmt.Sprintf("tpm = %d", tpm)) + target("up", up.url(), "private") +
					"[routes.r]\ntargets = [\"up\"]\n"
				cfg, err := config.Parse([]byte(text), "test.toml", func(string) string { return "" })
				if err != nil {
					t.Fatal(err)
				}
				s, err := server.New(server.Options{Config: cfg, Clock: clock, Previous: prev})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Close)
				return s
			}
			cur := build(tc.tpms[0], nil)
			l := server.NewLive(cur)
			g := &gateway{ts: serveLive(t, l)}
			k := []string{"Authorization", "Bearer hk-k"}
			done := make(chan reply, 1)
			go func() { done <- g.chat(t, "r", k...) }()
			<-entered
			for _, tpm := range tc.tpms[1:] {
				next := build(tpm, cur)
				l.Replace(next)
				cur = next
			}
			close(release)
			if rep := <-done; rep.status != 200 {
				t.Fatalf("the request under way: %d %s", rep.status, rep.body)
			}
			rep := g.chat(t, "r", k...)
			if rep.status != 429 {
				t.Fatalf("after an answer of 250 tokens against tpm = 200: %d %s, want 429", rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, "Limit 200, Used 250.") {
				t.Errorf("message %q, want it to say Used 250", msg)
			}
		})
	}
}
