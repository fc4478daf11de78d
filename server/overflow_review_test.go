package server_test

import (
	"net/http"
	"testing"
)

// TestOverflowEverywhereIs400: when every target overflows, the client gets 400
// context_length_exceeded with the first upstream's words (CONFIG.md, overflow), whatever status
// each overflow came with: vLLM's 413, Ollama's 500, TGI's 422, a 400. Overflows of different
// statuses were answered 503 all_targets_failed, and a lone 500 overflow as a 500, which the
// OpenAI SDKs retry.
func TestOverflowEverywhereIs400(t *testing.T) {
	const words = "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens."
	tests := []struct {
		name string
		a, b http.HandlerFunc
	}{
		{"413 then 400", errHandler(413, "PayloadTooLarge", words), errHandler(400, "context_length_exceeded", "prompt is too long")},
		{"500 then 500", errHandler(500, "", words), errHandler(500, "", "the input length exceeds the context length")},
		{"422 then 400", errHandler(422, "", words), errHandler(400, "", "request (9000 tokens) exceeds the available context size (8192 tokens)")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, a, b := restoreChain(t, "")
			a.set(tt.a)
			b.set(tt.b)
			rep := g.chat(t, "r")
			if rep.status != 400 {
				t.Fatalf("status %d, want 400: %s", rep.status, rep.body)
			}
			if got := rep.errorField(t, "code"); got != "context_length_exceeded" {
				t.Errorf("code %v, want context_length_exceeded: %s", got, rep.body)
			}
			if got := rep.errorField(t, "type"); got != "invalid_request_error" {
				t.Errorf("type %v, want invalid_request_error", got)
			}
			if got := rep.errorField(t, "message"); got != words {
				t.Errorf("message %q, want the first upstream's words", got)
			}
			if got := rep.header.Get("x-hayula-chain"); got != "a→b" {
				t.Errorf("x-hayula-chain %q, want a→b", got)
			}
		})
	}
}
