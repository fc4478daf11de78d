//go:build unix

package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/lifecycle"
	"github.com/hayula/gateway/server"
)

// TestMetricsCountManagedAttempts: a managed target whose process cannot start fails the
// attempt in x-hayula-chain, and hayula_upstream_attempts_total counts it, so that a target
// that never starts does not look like one nobody asked.
func TestMetricsCountManagedAttempts(t *testing.T) {
	b := newFake(t, "b")
	for _, tc := range []struct{ name, chain string }{
		{"passed by cold", `["m", "b"]`}, // b can serve now: m is passed by while it starts
		{"fails to start", `["m"]`},      // m alone: its start is waited for, and fails
	} {
		t.Run(tc.name, func(t *testing.T) { countManaged(t, b, tc.chain) })
	}
}

func countManaged(t *testing.T, b *fake, chain string) {
	g := newGateway(t, `[targets.m]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["/nonexistent/hayula-no-such-server", "{port}"]
health_path = "http://127.0.0.1:{port}/health"

`+target("b", b.url(), "private")+"[routes.r]\ntargets = "+chain+"\n", nil,
		func(o *server.Options) {
			o.Lifecycle = lifecycle.Options{PollInterval: 20 * time.Millisecond, ProbeTimeout: time.Second,
				StopGrace: time.Second}
		})
	rep := g.chat(t, "r")
	if !strings.HasPrefix(rep.header.Get("x-hayula-chain"), "m") {
		t.Fatalf("status %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
	var body string
	settles(func() bool {
		r, _ := scrape(t, g)
		body = string(r.body)
		return strings.Contains(body, `hayula_upstream_attempts_total{target="m"`)
	})
	if !strings.Contains(body, `hayula_upstream_attempts_total{target="m"`) {
		t.Errorf("the attempt on m (chain %q) is not counted:\n%s", rep.header.Get("x-hayula-chain"), body)
	}
}
