package server_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/server"
)

// TestRequestLogLineEchoesNoClientValue: the request log line (logfmt, as gateway serve writes
// it) repeats nothing a client chose as it came. Its path is one the router matched (a path
// spelt with escapes is logged decoded, the route's own), route, chain and key are the config's
// names, and the request ID is one the gateway checked (upstream.ValidRequestID) or made: a
// model, a hint, a request ID or a parameter holding ESC[2J, a line break, a C1 control, a DEL
// or an invalid byte leaves the log one line per request, none of those bytes on it.
func TestRequestLogLineEchoesNoClientValue(t *testing.T) {
	var logs syncBuffer
	up := newFake(t, "up")
	g := newGateway(t, target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil,
		func(o *server.Options) { o.Logger = slog.New(logfmt.NewText(&logs, nil)) })
	const user = `"messages":[{"role":"user","content":"x"}]`
	v := `"` + evil + `"`
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/complet%69ons", `{"model":` + v + `,` + user + `}`},
		{"/v1/chat/completions", `{"model":"r",` + user + `,"tool_choice":` + v + `}`},
		{"/v1/chat/completions", `{"model":"r",` + user + `,"x-route-hint":` + v + `}`},
		{"/v1/responses", `{"model":"r","input":[{"role":` + v + `,"content":"x"}]}`},
		{"/v1/embeddings", `{"model":"r","input":"x","encoding_format":` + v + `}`},
	} {
		req, err := http.NewRequest(http.MethodPost, g.ts.URL, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.URL = &url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Opaque: c.path}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", evilHeader)
		req.Header.Set("X-Route-Hint", evilHeader)
		g.send(t, req)
	}
	out := logs.String()
	if !utf8.ValidString(out) {
		t.Errorf("the log holds invalid UTF-8: %q", out)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if i := strings.IndexFunc(line, unicode.IsControl); i >= 0 {
			t.Errorf("log line %q holds %q", line, line[i:])
		}
		if strings.Contains(line, "2J") || strings.Contains(line, `\u009b`) || strings.Contains(line, `\xff`) {
			t.Errorf("log line %q repeats the client's value", line)
		}
		if strings.Contains(line, " msg=request ") {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d request lines, want 5:\n%s", n, out)
	}
}
