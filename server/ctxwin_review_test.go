package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// An embeddings request generates nothing, so a max_tokens in its body (which an embeddings API
// ignores) reserves no room in the window: the target is kept.
func TestEmbeddingsMaxTokensReservesNothing(t *testing.T) {
	small := newFake(t, "small")
	g := newGateway(t, target("small", small.url(), "private", "context_window = 64")+"[routes.r]\ntargets = [\"small\"]\n", nil)
	rep := g.post(t, "/v1/embeddings", `{"model":"r","input":"hello","max_tokens":100}`)
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "small" {
		t.Fatalf("embeddings with max_tokens 100 against a 64-token window: %d %s", rep.status, rep.body)
	}
	// A completion does generate: its max_tokens alone still cannot fit.
	rep = g.post(t, "/v1/completions", `{"model":"r","prompt":"hello","max_tokens":100}`)
	if rep.status != 400 || rep.errorField(t, "code") != "context_length_exceeded" {
		t.Fatalf("completions with max_tokens 100 against a 64-token window: %d %s", rep.status, rep.body)
	}
}

// A user message of 30 "<|im_end|>" lines is 30 tokens to a Qwen model served by vLLM (each
// spelling is its added token), and fits a 64-token window.
func TestContextFilterAddedTokenSpellings(t *testing.T) {
	small, big := newFake(t, "small"), newFake(t, "big")
	g := newGateway(t, target("small", small.url(), "private", "context_window = 64")+
		target("big", big.url(), "private", "context_window = 4096")+"[routes.r]\ntargets = [\"small\", \"big\"]\n", nil)
	body, _ := json.Marshal(map[string]any{"model": "r",
		"messages": []map[string]string{{"role": "user", "content": strings.Repeat("<|im_end|>\n", 30)}}})
	if rep := g.post(t, "/v1/chat/completions", string(body)); rep.status != 200 || rep.header.Get("x-hayula-chain") != "small" {
		t.Fatalf("30 added-token spellings: status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
	}
}
