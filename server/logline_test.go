package server_test

import (
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/server"
)

// The request line written through logfmt (the handler gateway serve installs, which logRequest
// writes as a logfmt.Line) is the line slog's TextHandler writes for the same requests, but for
// the time and the duration, which are checked for their form.
func TestRequestLogLineLogfmt(t *testing.T) {
	std := requestLines(t, func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) })
	fast := requestLines(t, func(w io.Writer) slog.Handler { return logfmt.NewText(w, nil) })
	if len(std) != 6 {
		t.Fatalf("slog's TextHandler wrote %d request lines, want 6: %q", len(std), std)
	}
	if diff := cmp.Diff(std, fast); diff != "" {
		t.Errorf("request lines (-slog +logfmt):\n%s", diff)
	}
	// A logger derived with attributes is slog's TextHandler under logfmt's: the record path, and
	// the attributes stay.
	derived := requestLines(t, func(w io.Writer) slog.Handler {
		return logfmt.NewText(w, nil).WithAttrs([]slog.Attr{slog.String("component", "gw")})
	})
	for i := range std {
		if want := strings.Replace(std[i], " msg=request ", " msg=request component=gw ", 1); i >= len(derived) || derived[i] != want {
			t.Fatalf("derived logger's lines:\n%q\nwant\n%q", derived, std)
		}
	}
}

var timedRequestLine = regexp.MustCompile(
	`^time=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(?:Z|[+-]\d\d:\d\d)) (.*) duration=(\S+)((?: \S+)*)$`)

// requestLines sends TestRequestLogLine's requests to a gateway logging through newHandler and
// returns its request lines without their time and duration. Its requests' IDs are req-1, req-2…
func requestLines(t *testing.T, newHandler func(io.Writer) slog.Handler) []string {
	t.Helper()
	var logs syncBuffer
	saif, r1 := newFake(t, "saif"), newFake(t, "deepseek-r1")
	cfg := target("saif", saif.url(), "private") + target("deepseek-r1", r1.url(), "private") +
		"[routes.saif]\ntargets = [\"saif\", \"deepseek-r1\"]\n"
	g := newGateway(t, cfg, nil, func(o *server.Options) { o.Logger = slog.New(newHandler(&logs)) }, countedIDs())
	g.chat(t, "saif")
	saif.set(errHandler(500, "internal", "boom"))
	g.chat(t, "saif")
	g.chat(t, "nope")
	g.post(t, "/v1/chat/completions", `{"model":`)
	g.post(t, "/v1/embeddings", `{"model":"saif","input":"x"}`)
	saif.set(okHandler("saif"))
	g.post(t, "/v1/chat/completions", `{"model":"saif","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if !strings.Contains(line, " msg=request ") {
			continue
		}
		m := timedRequestLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("request line in an unexpected shape:\n%s", line)
		}
		if _, err := time.Parse(time.RFC3339Nano, m[1]); err != nil {
			t.Errorf("time in %q: %v", line, err)
		}
		if d, err := time.ParseDuration(m[3]); err != nil || d <= 0 || d.String() != m[3] {
			t.Errorf("duration %q in %q: not a positive Duration.String (%v)", m[3], line, err)
		}
		got = append(got, m[2]+m[4])
	}
	return got
}
