package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestGuardShutAfterContextDropIsOverflow: a target the context filter passes over counts as an
// overflow failure (CONFIG.md, Guards), so a guard that overflow does not open stays shut after
// it, as after the target's own overflow answer. The client gets what that answer gets: 400
// context_length_exceeded, not 503 no_target saying that no earlier failure opened the guards,
// which an SDK would retry in vain; explain says the same. (This test failed first: the dropped
// target's request got 503 no_target.) A route `local → tail` whose tail is guarded to open on
// every class but overflow is what `gateway import litellm` writes for LiteLLM's fallbacks once
// context_window_fallbacks are set.
func TestGuardShutAfterContextDropIsOverflow(t *testing.T) {
	local, tail := newFake(t, "local"), newFake(t, "tail")
	local.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"This model's maximum context length is 64 tokens","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`))
	})
	guard := "guard = { tail = [\"connection\", \"timeout\", \"server_error\", \"rate_limit\", \"endpoint\", \"loading\"] }\n"
	for _, tc := range []struct {
		name, window string
		localHits    int64
	}{
		{name: "the target answers an overflow", localHits: 1},
		{name: "the context filter passes the target over", window: "context_window = 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local.hits.Store(0)
			g := newGateway(t, target("local", local.url(), "private", tc.window)+target("tail", tail.url(), "public")+
				"[routes.r]\ntargets = [\"local\", \"tail\"]\n"+guard, nil)
			body, _ := json.Marshal(map[string]any{"model": "r",
				"messages": []map[string]string{{"role": "user", "content": strings.Repeat("word ", 500)}}})
			rep := g.post(t, "/v1/chat/completions", string(body))
			if rep.status != 400 || rep.errorField(t, "code") != "context_length_exceeded" || rep.errorField(t, "type") != "invalid_request_error" {
				t.Errorf("got %d %s, want 400 context_length_exceeded", rep.status, rep.body)
			}
			if local.hits.Load() != tc.localHits || tail.hits.Load() != 0 {
				t.Errorf("local asked %d times (want %d), tail %d (want 0)", local.hits.Load(), tc.localHits, tail.hits.Load())
			}
			if tc.window == "" {
				return // explain predicts no upstream's answer
			}
			x := g.post(t, "/v1/route/explain", string(body))
			var e struct {
				Error *struct {
					Status int    `json:"status"`
					Code   string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(x.body, &e); err != nil {
				t.Fatal(err)
			}
			if e.Error == nil || e.Error.Status != 400 || e.Error.Code != "context_length_exceeded" {
				t.Errorf("explain: %s", x.body)
			}
		})
	}
}
