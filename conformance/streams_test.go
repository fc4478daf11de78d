package conformance

import (
	"net/http"
	"strings"
	"testing"
)

// TestStreamChecksNameTheStream: a check about every chat stream says which stream broke, and
// quotes that one.
func TestStreamChecksNameTheStream(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
		return answerEdit{next: h, edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isToolsStreamReq(path, req) {
				return s, b
			}
			return s, strings.TrimSuffix(b, "data: [DONE]\n\n")
		}}
	})
	o := fakeOptions(t, srv)
	o.Only = []string{"chat.stream.done"}
	c, _ := runAgainst(t, o).Result("chat.stream.done")
	if c.Result != Fail || !strings.HasPrefix(c.Reason, "the stream with tools: no [DONE]") {
		t.Fatalf("chat.stream.done = %s %q, want FAIL naming the stream with tools", c.Result, c.Reason)
	}
	if c.Evidence == nil || !strings.Contains(c.Evidence.Excerpt, "tool_calls") {
		t.Errorf("excerpt does not quote the stream with tools: %+v", c.Evidence)
	}
}

// TestStreamChecksPassOverABrokenOptionalStream: the stream with tools is optional, and its
// failure is its gate's to report (tools.stream.first_fragment), even when --only leaves the
// gate out: the checks about every chat stream judge the streams that came.
func TestStreamChecksPassOverABrokenOptionalStream(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusInternalServerError} {
		_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
			return answerEdit{next: h, edit: func(path, req string, hd http.Header, s int, b string) (int, string) {
				if !isToolsStreamReq(path, req) {
					return s, b
				}
				hd.Set("Content-Type", "application/json")
				return status, `{"error":{"message":"tools are not supported","type":"invalid_request_error","param":null,"code":null}}`
			}}
		})
		o := fakeOptions(t, srv)
		o.Only = []string{"chat.stream.*"}
		if got := notPassing(runAgainst(t, o)); len(got) != 0 {
			t.Errorf("tools stream answered %d: checks that did not pass: %v", status, got)
		}
	}
}
