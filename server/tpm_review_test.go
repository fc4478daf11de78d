package server_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"
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
