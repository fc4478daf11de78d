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

// TestRetryAfterFromRateLimitHeaders: OpenAI and Groq answer a 429 with their limits' state in
// headers: x-ratelimit-remaining-requests/-tokens and, as a Go-style duration ("1s", "6m0s",
// "2m59.56s", "12ms"), x-ratelimit-reset-requests/-tokens, the time until that limit is whole
// again; a Retry-After comes with some of them and not others. A 429 without a readable
// Retry-After (header or body) has the reset of the limit it ran out of as its LimitReset: the
// longer one when both read 0 remaining, the tokens' when neither does (a request larger than the
// tokens left). errmap takes it as the wait (TestOpenAIRateLimitHeaders). A retry-after-ms header
// (OpenAI's) is read before Retry-After.
func TestRetryAfterFromRateLimitHeaders(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header map[string]string
		want   time.Duration
	}{
		{"requests ran out", 429, map[string]string{"X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "1s",
			"X-Ratelimit-Remaining-Tokens": "39000", "X-Ratelimit-Reset-Tokens": "1.5s"}, time.Second},
		{"tokens ran out", 429, map[string]string{"X-Ratelimit-Remaining-Requests": "59", "X-Ratelimit-Reset-Requests": "1s",
			"X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "6m0s"}, 6 * time.Minute},
		{"both ran out: the longer", 429, map[string]string{"X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "2m59.56s",
			"X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "7.66s"}, 2*time.Minute + 59560*time.Millisecond},
		{"neither ran out: the tokens'", 429, map[string]string{"X-Ratelimit-Remaining-Requests": "50", "X-Ratelimit-Reset-Requests": "12ms",
			"X-Ratelimit-Remaining-Tokens": "1200", "X-Ratelimit-Reset-Tokens": "4s"}, 4 * time.Second},
		{"milliseconds", 429, map[string]string{"X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "120ms"}, 120 * time.Millisecond},
		{"Retry-After wins", 429, map[string]string{"Retry-After": "2", "X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "6m0s"}, 2 * time.Second},
		{"unreadable reset", 429, map[string]string{"X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "soon"}, 0},
		{"negative reset", 429, map[string]string{"X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "-3s"}, 0},
		{"no remaining said, nothing known ran out", 429, map[string]string{"X-Ratelimit-Reset-Requests": "1s"}, 0},
		{"only a 429's", 503, map[string]string{"X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "6m0s"}, 0},
		// retry-after-ms, which OpenAI's SDKs read before Retry-After: finer, so it wins.
		{"retry-after-ms", 429, map[string]string{"Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
		{"retry-after-ms before Retry-After", 429, map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}, 1500 * time.Millisecond},
		{"retry-after-ms on a 503", 503, map[string]string{"Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{"unreadable retry-after-ms leaves Retry-After", 429, map[string]string{"Retry-After-Ms": "soon", "Retry-After": "2"}, 2 * time.Second},
		{"negative retry-after-ms", 429, map[string]string{"Retry-After-Ms": "-5"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.status, Header: http.Header{},
				Body: io.NopCloser(strings.NewReader(`{"error":{"message":"Rate limit reached","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`))}
			for k, v := range tt.header {
				resp.Header.Set(k, v)
			}
			e := statusError(&core.Target{Name: "openai"}, resp, fixedNow)
			got := e.RetryAfter
			if got == 0 {
				got = e.LimitReset
			}
			if got != tt.want {
				t.Errorf("RetryAfter = %v, LimitReset = %v, want %v", e.RetryAfter, e.LimitReset, tt.want)
			}
		})
	}
}
