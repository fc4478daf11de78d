package conformance

import (
	"net/http"
	"testing"
	"time"
)

// TestRetryWait: the wait after a 429 is what Retry-After asks, in seconds or as an HTTP date, 1s
// for what it cannot read, and never more than maxRetryWait or the request timeout, however
// large the number (seconds past what a Duration holds once wrapped to a negative wait).
func TestRetryWait(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name, v string
		timeout time.Duration
		want    time.Duration
	}{
		{"seconds", "3", 30 * time.Second, 3 * time.Second},
		{"zero", "0", 30 * time.Second, 0},
		{"none", "", 30 * time.Second, time.Second},
		{"garbage", "soon", 30 * time.Second, time.Second},
		{"negative", "-5", 30 * time.Second, time.Second},
		{"an hour", "3600", 30 * time.Second, maxRetryWait},
		{"past the timeout", "8", 5 * time.Second, 5 * time.Second},
		{"wraps a Duration", "9223372037", 30 * time.Second, maxRetryWait},
		{"past an int", "99999999999999999999", 30 * time.Second, maxRetryWait},
		{"date ahead", now.Add(4 * time.Second).Format(http.TimeFormat), 30 * time.Second, 4 * time.Second},
		{"date passed", now.Add(-time.Hour).Format(http.TimeFormat), 30 * time.Second, 0},
		{"date far ahead", now.AddDate(1, 0, 0).Format(http.TimeFormat), 30 * time.Second, maxRetryWait},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.v != "" {
				h.Set("Retry-After", tc.v)
			}
			if got := retryWait(h, now, tc.timeout); got != tc.want {
				t.Errorf("retryWait(%q) = %v, want %v", tc.v, got, tc.want)
			}
		})
	}
}
