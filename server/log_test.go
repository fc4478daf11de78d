package server_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/server"
)

func TestPanicIsLogged(t *testing.T) {
	var logs syncBuffer
	up := newFake(t, "solo")
	g := newGateway(t, target("solo", up.url(), "private")+"[routes.solo]\ntargets = [\"solo\"]\n", nil,
		func(o *server.Options) { o.Upstream = panicky{} }, withLog(&logs))
	if rep := g.chat(t, "solo"); rep.status != 500 {
		t.Fatalf("status %d", rep.status)
	}
	if out := logs.String(); !strings.Contains(out, "panic serving request") || !strings.Contains(out, "adapter bug") {
		t.Fatalf("the panic was not logged with its value:\n%s", out)
	}
}

// Neither the client's key nor the upstream's key ever reaches the log, on success, on
// upstream failure or on a bad key.
func TestSecretsNeverLogged(t *testing.T) {
	const clientKey, upstreamKey = "hk-client-secret-123", "sk-upstream-secret-456"
	var logs syncBuffer
	up := newFake(t, "solo")
	cfg := target("solo", up.url(), "private", `api_key_env = "UP_KEY"`) + "[routes.solo]\ntargets = [\"solo\"]\n" +
		"[[keys]]\nname = \"k\"\nsha256 = \"" + sha256hex(clientKey) + "\"\n"
	g := newGateway(t, cfg, map[string]string{"UP_KEY": upstreamKey}, withLog(&logs))
	g.chat(t, "solo", "Authorization", "Bearer "+clientKey)
	up.set(errHandler(500, "internal", "boom"))
	g.chat(t, "solo", "Authorization", "Bearer "+clientKey)
	g.chat(t, "solo", "Authorization", "Bearer "+clientKey+"x")
	if got := up.headers[0].Get("Authorization"); got != "Bearer "+upstreamKey {
		t.Fatalf("upstream got Authorization %q", got)
	}
	out := logs.String()
	if out == "" {
		t.Fatal("nothing was logged: the test would prove nothing")
	}
	for _, secret := range []string{clientKey, upstreamKey} {
		if strings.Contains(out, secret) {
			t.Fatalf("a secret reached the log:\n%s", out)
		}
	}
}

// The request log line is one record whose fields and their order the operators' tooling reads:
// it stays byte for byte what it is, whatever the handler does to build it cheaply.
func TestRequestLogLine(t *testing.T) {
	// Through slog's TextHandler; TestRequestLogLineLogfmt holds logfmt's line (what gateway
	// serve writes) to this one.
	got := requestLines(t, func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) })
	want := []string{
		"level=INFO msg=request method=POST path=/v1/chat/completions route=saif chain=saif status=200 request_id=req-1",
		"level=INFO msg=request method=POST path=/v1/chat/completions route=saif chain=saif→deepseek-r1 status=200 request_id=req-2",
		`level=INFO msg=request method=POST path=/v1/chat/completions route="" chain="" status=404 request_id=req-3`,
		`level=INFO msg=request method=POST path=/v1/chat/completions route="" chain="" status=400 request_id=req-4`,
		"level=INFO msg=request method=POST path=/v1/embeddings route=saif chain=saif→deepseek-r1 status=200 request_id=req-5",
		"level=INFO msg=request method=POST path=/v1/chat/completions route=saif chain=saif status=200 request_id=req-6",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request lines (-want +got):\n%s", diff)
	}
}

// The request line names the key a request came with (CONFIG.md: a key's name "names the key in
// logs"), after the other fields but the IDs, in both of the handler's paths; a request without a valid key
// has no key field.
func TestRequestLogNamesTheKey(t *testing.T) {
	const clientKey = "hk-client-secret-789"
	for name, handler := range map[string]func(io.Writer) slog.Handler{
		"slog":   func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) },
		"logfmt": func(w io.Writer) slog.Handler { return logfmt.NewText(w, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			var logs syncBuffer
			up := newFake(t, "solo")
			cfg := target("solo", up.url(), "private") + "[routes.solo]\ntargets = [\"solo\"]\n" +
				"[[keys]]\nname = \"laptop\"\nsha256 = \"" + sha256hex(clientKey) + "\"\n"
			g := newGateway(t, cfg, nil, func(o *server.Options) { o.Logger = slog.New(handler(&logs)) })
			g.chat(t, "solo", "Authorization", "Bearer "+clientKey)
			g.chat(t, "solo", "Authorization", "Bearer nope")
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				if strings.Contains(l, "msg=request") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 2 || !strings.Contains(lines[0], " key=laptop request_id=") || strings.Contains(lines[1], "key=") {
				t.Fatalf("request lines:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}
