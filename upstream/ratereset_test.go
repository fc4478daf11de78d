package upstream

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// openRouter429 is OpenRouter's 429 for a :free model over its per-minute cap: the reset is in
// the body, as milliseconds since the epoch, and no Retry-After header comes with it.
func openRouter429(reset string) string {
	return `{"error":{"message":"Rate limit exceeded: free-models-per-min. ","code":429,"metadata":{"headers":` +
		`{"X-RateLimit-Limit":"20","X-RateLimit-Remaining":"0","X-RateLimit-Reset":` + reset + `},"provider_name":null}},"user_id":"user_1"}`
}

// TestRetryAfterFromBodyReset: a 429 without a readable Retry-After header takes its wait from the
// X-RateLimit-Reset that OpenRouter relays in the error's metadata, read as a Retry-After is:
// relative to the injected clock, nothing when in the past, unreadable or absurd, and never over
// a Retry-After header the answer has of its own.
func TestRetryAfterFromBodyReset(t *testing.T) {
	ms := func(d time.Duration) string {
		return strconv.Quote(strconv.FormatInt(fixedNow().Add(d).UnixMilli(), 10))
	}
	tests := []struct {
		name   string
		status int
		header string
		body   string
		want   time.Duration
	}{
		{"reset in 40s", 429, "", openRouter429(ms(40 * time.Second)), 40 * time.Second},
		{"reset as a number", 429, "", openRouter429(strconv.FormatInt(fixedNow().Add(1500*time.Millisecond).UnixMilli(), 10)), 1500 * time.Millisecond},
		{"a day ahead (free-models-per-day)", 429, "", strings.Replace(openRouter429(ms(9*time.Hour)), "per-min", "per-day", 1), 9 * time.Hour},
		{"the header wins", 429, "5", openRouter429(ms(40 * time.Second)), 5 * time.Second},
		{"an unreadable header does not hide the body's", 429, "soon", openRouter429(ms(40 * time.Second)), 40 * time.Second},
		{"a header in the past does not either", 429, "Mon, 01 Jan 2001 00:00:00 GMT", openRouter429(ms(40 * time.Second)), 40 * time.Second},
		{"reset in the past", 429, "", openRouter429(ms(-time.Second)), 0},
		{"reset now", 429, "", openRouter429(ms(0)), 0},
		{"reset in seconds, not milliseconds, is long past", 429, "", openRouter429(strconv.Quote(strconv.FormatInt(fixedNow().Add(time.Minute).Unix(), 10))), 0},
		{"unreadable reset", 429, "", openRouter429(`"soon"`), 0},
		{"absurd reset", 429, "", openRouter429(`"99999999999999999"`), 0},
		{"overflowing reset", 429, "", openRouter429(`"999999999999999999999999"`), 0},
		{"header names in another case", 429, "", `{"error":{"message":"x","code":429,"metadata":{"headers":{"x-ratelimit-reset":` + ms(7*time.Second) + `}}}}`, 7 * time.Second},
		{"a provider's Retry-After relayed in the body", 429, "", `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"rate-limited upstream","provider_name":"Venice","retry_after_seconds":17,"headers":{"Retry-After":"17"}}}}`, 17 * time.Second},
		{"relayed Retry-After before the reset", 429, "", `{"error":{"message":"x","code":429,"metadata":{"headers":{"X-RateLimit-Reset":` + ms(time.Minute) + `,"Retry-After":"3"}}}}`, 3 * time.Second},
		{"no metadata", 429, "", `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, 0},
		{"metadata headers not an object", 429, "", `{"error":{"message":"x","code":429,"metadata":{"headers":"X-RateLimit-Reset"}}}`, 0},
		{"not JSON", 429, "", "Too Many Requests\n", 0},
		{"only a 429's", 503, "", openRouter429(ms(40 * time.Second)), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tt.body))}
			if tt.header != "" {
				resp.Header.Set("Retry-After", tt.header)
			}
			e := statusError(&core.Target{Name: "or"}, resp, fixedNow)
			if e.RetryAfter != tt.want {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.want)
			}
		})
	}
}
