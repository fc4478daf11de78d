package server_test

import (
	"strconv"
	"testing"
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
