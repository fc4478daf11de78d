package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A target is dropped for context only when the request certainly does not fit; a prompt that
// fits is served by the first target, and one that no target can take is a 400.
func TestContextFilterEndToEnd(t *testing.T) {
	small, big := newFake(t, "small"), newFake(t, "big")
	g := newGateway(t, target("small", small.url(), "private", "context_window = 64")+
		target("big", big.url(), "private", "context_window = 4096")+"[routes.r]\ntargets = [\"small\", \"big\"]\n", nil)
	chat := func(words, maxTokens int) reply {
		body, _ := json.Marshal(map[string]any{"model": "r", "max_tokens": maxTokens,
			"messages": []map[string]string{{"role": "user", "content": strings.Repeat("word ", words)}}})
		return g.post(t, "/v1/chat/completions", string(body))
	}
	if rep := chat(3, 10); rep.header.Get("x-hayula-chain") != "small" {
		t.Fatalf("a short prompt: chain %q", rep.header.Get("x-hayula-chain"))
	}
	if rep := chat(100, 10); rep.status != 200 || rep.header.Get("x-hayula-chain") != "big" {
		t.Fatalf("100 words cannot fit 64 tokens: status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
	}
	if rep := chat(3, 100); rep.header.Get("x-hayula-chain") != "big" {
		t.Fatalf("max_tokens 100 cannot fit 64 tokens: chain %q", rep.header.Get("x-hayula-chain"))
	}
	if small.hits.Load() != 1 {
		t.Fatalf("small was asked %d times, want once", small.hits.Load())
	}
	rep := chat(5000, 10)
	if rep.status != 400 || rep.errorField(t, "code") != "context_length_exceeded" {
		t.Fatalf("nothing fits: %d %s", rep.status, rep.body)
	}
}

// A target whose upstream makes room for the answer itself (window_counts_max_tokens = false, as
// for Ollama) is not dropped for a max_tokens larger than its window, only for a prompt that
// cannot fit.
func TestContextFilterMaxTokensNotCounted(t *testing.T) {
	small, big := newFake(t, "small"), newFake(t, "big")
	g := newGateway(t, target("small", small.url(), "private", "context_window = 64\nwindow_counts_max_tokens = false")+
		target("big", big.url(), "private", "context_window = 4096")+"[routes.r]\ntargets = [\"small\", \"big\"]\n", nil)
	chat := func(words, maxTokens int) reply {
		body, _ := json.Marshal(map[string]any{"model": "r", "max_tokens": maxTokens,
			"messages": []map[string]string{{"role": "user", "content": strings.Repeat("word ", words)}}})
		return g.post(t, "/v1/chat/completions", string(body))
	}
	if rep := chat(3, 8192); rep.status != 200 || rep.header.Get("x-hayula-chain") != "small" {
		t.Fatalf("max_tokens 8192 on a target that makes room: status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
	}
	if rep := chat(100, 10); rep.status != 200 || rep.header.Get("x-hayula-chain") != "big" {
		t.Fatalf("100 words cannot fit 64 tokens: status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
	}
	if small.hits.Load() != 1 {
		t.Fatalf("small was asked %d times, want once", small.hits.Load())
	}
}
