package errmap

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// BenchmarkClassify is one failed attempt classified, for the failures a chain meets most: a
// refused connection, a 503, a context overflow told in a 400's message (the slowest case: the
// message is lower-cased and searched for every phrase), a 429 with Retry-After, and a client
// that left. Restore of the chain's final error follows only when nothing answered.
func BenchmarkClassify(b *testing.B) {
	body := []byte(`{"error":{"message":"This model's maximum context length is 32768 tokens. However, you ` +
		`requested 40211 tokens (39955 in the messages, 256 in the completion). Please reduce the length of ` +
		`the messages or completion.","type":"invalid_request_error","param":"messages","code":null}}`)
	cases := []struct {
		name string
		err  error
		want core.Class
	}{
		{"connection", fmt.Errorf("upstream: %w", &core.ConnError{Target: "saif", Err: errors.New("connect: connection refused")}),
			core.ClassConnection},
		{"503", &core.StatusError{Target: "saif", Status: 503, Message: "upstream unavailable"}, core.ClassServerError},
		{"overflow-400", &core.StatusError{Target: "saif", Status: 400, Body: body, Message: "This model's maximum " +
			"context length is 32768 tokens. However, you requested 40211 tokens (39955 in the messages, 256 in the " +
			"completion). Please reduce the length of the messages or completion.", Type: "invalid_request_error"},
			core.ClassOverflow},
		{"429", &core.StatusError{Target: "saif", Status: 429, RetryAfter: 2 * time.Second}, core.ClassRateLimit},
		{"client-gone", fmt.Errorf("upstream saif: %w", context.Canceled), core.ClassClientGone},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			if got := Classify(tc.err).Class; got != tc.want {
				b.Fatalf("Classify = %s, want %s", got, tc.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				Classify(tc.err)
			}
		})
	}
}
