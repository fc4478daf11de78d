package conformance

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// silentChat takes every chat completion request and never answers it: no status, no header.
type silentChat struct{ next http.Handler }

func (s silentChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/chat/completions" {
		// Read to the end, so that the server notices the client hang up.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		return
	}
	s.next.ServeHTTP(w, r)
}

// TestSilentChatNamesTheTimeout: a server that takes a chat request and never answers fails
// every check whose request it was, each saying that --timeout ran out before the answer began;
// the sdk.* checks as well as the raw ones, where "context deadline exceeded" alone named
// neither the flag nor what it cut short.
func TestSilentChatNamesTheTimeout(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return silentChat{next: h} })
	o := fakeOptions(t, srv)
	o.Timeout = 100 * time.Millisecond
	o.Only = []string{"chat.status", "chat.stream.content_type", "sdk.*"}
	rep := runAgainst(t, o)
	for _, id := range []string{"chat.status", "chat.stream.content_type", "sdk.chat", "sdk.stream", "sdk.error"} {
		c, _ := rep.Result(id)
		if c.Result != Fail || !strings.Contains(c.Reason, "--timeout 100ms ran out before the answer began") {
			t.Errorf("%s = %s %q, want FAIL saying --timeout 100ms ran out before the answer began", id, c.Result, c.Reason)
		}
	}
	if c, _ := rep.Result("sdk.models"); c.Result != Pass {
		t.Errorf("sdk.models = %s %q, want PASS: /v1/models answers", c.Result, c.Reason)
	}
	if rep.ExitCode() != 1 {
		t.Errorf("exit code %d, want 1", rep.ExitCode())
	}
}
