package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestKeyTPMNotEscapedByContinuousUsageStats: a stream of a key with a tpm is charged the usage
// its upstream reports, whatever the client puts in stream_options. vLLM's
// continuous_usage_stats kept the gateway from asking an OpenAI-compatible target for the
// stream's usage, so a client that sent it (and not include_usage) was charged its prompt's lower
// bound alone, never its completion: a key held to 100 tokens a minute streamed 500-token answers
// from the paid tail one after another.
func TestKeyTPMNotEscapedByContinuousUsageStats(t *testing.T) {
	up := newFake(t, "up")
	up.set(usageHandler(10, 500, false, false))
	g := newGateway(t, keyBlock("slow", "hk-slow", "tpm = 100")+
		target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	slow := []string{"Authorization", "Bearer hk-slow"}
	for _, opts := range []string{`{"continuous_usage_stats":true}`, `{"continuous_usage_stats":false,"include_usage":false}`} {
		t.Run(opts, func(t *testing.T) {
			g.clock.Advance(24 * time.Hour) // a full bucket
			body := `{"model":"r","stream":true,"stream_options":` + opts + `,"messages":[{"role":"user","content":"hi"}]}`
			rep := g.post(t, "/v1/chat/completions", body, slow...)
			if rep.status != http.StatusOK || !strings.Contains(string(rep.body), "[DONE]") {
				t.Fatalf("stream: %d %s", rep.status, rep.body)
			}
			so, _ := up.lastBody(t)["stream_options"].(map[string]any)
			if so["include_usage"] != true {
				t.Errorf("the target was not asked for the stream's usage: stream_options %v", so)
			}
			rep = g.chat(t, "r", slow...)
			if rep.status != http.StatusTooManyRequests || rep.errorField(t, "type") != "tokens" {
				t.Errorf("the next request after a 510-token stream on tpm = 100: %d %s, want 429 on tokens", rep.status, rep.body)
			}
		})
	}
}
