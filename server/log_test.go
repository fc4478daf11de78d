package server_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
	var logs syncBuffer
	saif, r1 := newFake(t, "saif"), newFake(t, "deepseek-r1")
	cfg := target("saif", saif.url(), "private") + target("deepseek-r1", r1.url(), "private") +
		"[routes.saif]\ntargets = [\"saif\", \"deepseek-r1\"]\n"
	g := newGateway(t, cfg, nil, withLog(&logs))
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
		// time and duration are the only fields that differ from run to run.
		m := requestLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("request line in an unexpected shape:\n%s", line)
		}
		got = append(got, m[1])
	}
	want := []string{
		"level=INFO msg=request method=POST path=/v1/chat/completions route=saif chain=saif status=200",
		"level=INFO msg=request method=POST path=/v1/chat/completions route=saif chain=saif→deepseek-r1 status=200",
		`level=INFO msg=request method=POST path=/v1/chat/completions route="" chain="" status=404`,
		`level=INFO msg=request method=POST path=/v1/chat/completions route="" chain="" status=400`,
		"level=INFO msg=request method=POST path=/v1/embeddings route=saif chain=saif→deepseek-r1 status=200",
		"level=INFO msg=request method=POST path=/v1/chat/completions route=saif chain=saif status=200",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request lines (-want +got):\n%s", diff)
	}
}

var requestLine = regexp.MustCompile(`^time=\S+ (.*) duration=[0-9.]+[µnm]?s$`)
