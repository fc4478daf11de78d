package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/server"
)

// TestResponsesUnreadableAnswerStatus: a whole chat answer the Responses bridge cannot read is,
// from the only target, answered 502 bad_upstream_response (an answer the gateway could not read,
// which falls through where another target is left: TestInvResponsesUnreadableAnswerFallsThrough),
// and hayula_requests_total and the request line say 502, the status the client got (they said
// 200, the chat answer's).
func TestResponsesUnreadableAnswerStatus(t *testing.T) {
	odd := newFake(t, "odd")
	odd.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":5},"finish_reason":"stop"}]}`)
	})
	var logs syncBuffer
	g := newGateway(t, target("odd", odd.url(), "private")+"[routes.odd]\ntargets = [\"odd\"]\n", nil,
		func(o *server.Options) {
			o.Logger = slog.New(logfmt.NewText(&logs, nil))
			o.NewRequestID = func() string { return "req-odd" }
		})
	rep := g.post(t, "/v1/responses", `{"model":"odd","input":"hi"}`)
	if rep.status != http.StatusBadGateway || !strings.Contains(string(rep.body), `"bad_upstream_response"`) {
		t.Fatalf("answer %d %s, want 502 bad_upstream_response", rep.status, rep.body)
	}
	lines := logLines(&logs, 1, func(l string) bool { return strings.Contains(l, "msg=request ") })
	if len(lines) != 1 || !strings.Contains(lines[0], " status=502 ") {
		t.Errorf("request line %q, want status=502", lines)
	}
	_, got := scrape(t, g)
	if want := `hayula_requests_total{endpoint="responses",route="odd",code="502"} 1`; !got[want] {
		for l := range got {
			if strings.HasPrefix(l, "hayula_requests_total") {
				t.Logf("%s", l)
			}
		}
		t.Errorf("no line %q", want)
	}
}
