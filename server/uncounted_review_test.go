package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/health"
)

// TestUncountedFailuresNeverBench: failures that say nothing about the target (CONFIG.md
// [cooldown]: only connection, timeout, server_error and rate_limit count) never bench it,
// however many in a row: a request error, an overflow (a 500 naming the context too), an
// endpoint refusal, a client that left.
func TestUncountedFailuresNeverBench(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"request 400", errHandler(400, "invalid_value", "temperature out of range")},
		{"overflow 400", errHandler(400, "context_length_exceeded", "This model's maximum context length is 8 tokens")},
		{"overflow 500", errHandler(500, "", "the request exceeds the available context size")},
		{"overflow 413", errHandler(413, "", "too large")},
		{"endpoint 401", errHandler(401, "invalid_api_key", "no")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newFake(t, "a")
			g := newGateway(t, target("a", a.url(), "private")+"[cooldown]\nfailures = 1\n[routes.r]\ntargets = [\"a\"]\n", nil)
			a.set(tc.h)
			for range 3 {
				g.chat(t, "r")
			}
			if st := g.srv.Health().Snapshot(mustTarget(t, g, "a")); st.Status != health.StatusHealthy || st.Failures != 0 {
				t.Errorf("after three: %+v", st)
			}
		})
	}
	t.Run("client gone", func(t *testing.T) {
		a := newFake(t, "a")
		g := newGateway(t, target("a", a.url(), "private")+"[cooldown]\nfailures = 1\n[routes.r]\ntargets = [\"a\"]\n", nil)
		for range 3 {
			ctx, cancel := context.WithCancel(context.Background())
			in := make(chan struct{})
			a.set(func(w http.ResponseWriter, r *http.Request) {
				close(in)
				<-r.Context().Done()
			})
			done := make(chan struct{})
			go func() {
				defer close(done)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.ts.URL+"/v1/chat/completions",
					strings.NewReader(`{"model":"r","messages":[{"role":"user","content":"hi"}]}`))
				req.Header.Set("Content-Type", "application/json")
				if resp, err := g.ts.Client().Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			<-in
			cancel()
			<-done
		}
		// The gateway reports after the client has gone: wait for the three attempts' reports.
		settles(func() bool {
			_, lines := scrape(t, g)
			return lines[`hayula_upstream_attempts_total{target="a",result="client_gone"} 3`]
		})
		if st := g.srv.Health().Snapshot(mustTarget(t, g, "a")); st.Status != health.StatusHealthy || st.Failures != 0 {
			t.Errorf("after three: %+v", st)
		}
	})
}
