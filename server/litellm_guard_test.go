package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/config/litellm"
)

// TestImportedGuardsCannotTellWhichTargetOverflowed pins where a chain `gateway import litellm`
// writes parts from LiteLLM's Router once context_window_fallbacks are set: the gateway gives up
// where LiteLLM goes on to another fallback. LiteLLM picks a model_name's list by its first failure
// (async_function_with_retries raises its original_exception; async_function_with_fallbacks_common_utils
// sends a ContextWindowExceededError to context_window_fallbacks alone), and then walks that list
// whatever each fallback fails with (run_async_fallback: every exception moves on to the next).
// Here a guard opens when every failure so far is of its classes, whichever target failed, and a
// target the context filter passes over counts as an overflow before any (CONFIG.md, Guards). So
// a class set cannot tell "this model_name failed otherwise, then a fallback overflowed", which
// opens the next fallback in LiteLLM, from "this model_name overflowed, then its
// context_window_fallback failed otherwise", which does not: both are {server_error, overflow}.
// Telling them apart takes guards that read the order of the failures, a mechanism the gateway
// does not have; CONFIG.md ("From LiteLLM's own file") and the routes' comments say so. Each case
// asserts what the gateway does, and says what LiteLLM does.
func TestImportedGuardsCannotTellWhichTargetOverflowed(t *testing.T) {
	overflow := errHandler(400, "context_length_exceeded", "This model's maximum context length is 64 tokens")
	long := strings.Repeat("word ", 500)
	for _, tc := range []struct {
		name     string
		settings string
		window   string // the model_name whose deployment has a 64-token window, "" for none
		fail     map[string]http.HandlerFunc
		prompt   string
		chain    string // the gateway's x-hayula-chain
		litellm  string // the model_name LiteLLM answers from, which the gateway never asks
	}{{
		name:     "a fallback that overflows: LiteLLM goes on to the next",
		settings: "  fallbacks: [{a: [b, c]}]\n  context_window_fallbacks: [{a: [x]}]\n",
		fail:     map[string]http.HandlerFunc{"a": errHandler(500, "internal", "boom"), "b": overflow},
		prompt:   "hi there",
		chain:    "a→b",
		litellm:  "c",
	}, {
		name:     "a context_window_fallback that fails otherwise: LiteLLM goes on to the next",
		settings: "  fallbacks: [{a: [b]}]\n  context_window_fallbacks: [{a: [x, y]}]\n",
		fail:     map[string]http.HandlerFunc{"a": overflow, "x": errHandler(500, "internal", "boom")},
		prompt:   "hi there",
		chain:    "a→x",
		litellm:  "y",
	}, {
		name:     "a later fallback the prompt does not fit: LiteLLM tries the first",
		settings: "  fallbacks: [{a: [c, b]}]\n  context_window_fallbacks: [{a: [x]}]\n",
		window:   "b",
		fail:     map[string]http.HandlerFunc{"a": errHandler(500, "internal", "boom")},
		prompt:   long,
		chain:    "a",
		litellm:  "c",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fakes := map[string]*fake{}
			var yaml strings.Builder
			yaml.WriteString("model_list:\n")
			for _, n := range []string{"a", "b", "c", "x", "y"} {
				f := newFake(t, n)
				if h := tc.fail[n]; h != nil {
					f.set(h)
				}
				fakes[n] = f
				yaml.WriteString("  - model_name: " + n + "\n    litellm_params: {model: openai/" + n + ", api_base: \"" + f.url() + "\"}\n")
				if n == tc.window {
					yaml.WriteString("    model_info: {max_input_tokens: 64}\n")
				}
			}
			yaml.WriteString("router_settings:\n" + tc.settings)
			res, err := litellm.Convert([]byte(yaml.String()), "config.yaml")
			if err != nil {
				t.Fatal(err)
			}
			g := newGateway(t, string(res.TOML), nil)
			body, _ := json.Marshal(map[string]any{"model": "a", "messages": []map[string]string{{"role": "user", "content": tc.prompt}}})
			rep := g.post(t, "/v1/chat/completions", string(body))
			if rep.status == http.StatusOK {
				t.Fatalf("served (%s): the gateway now goes on as LiteLLM does; update this test and CONFIG.md\n%s", rep.header.Get("x-hayula-chain"), res.TOML)
			}
			if got := rep.header.Get("x-hayula-chain"); got != tc.chain {
				t.Errorf("chain %q, want %q\n%s", got, tc.chain, res.TOML)
			}
			if n := fakes[tc.litellm].hits.Load(); n != 0 {
				t.Errorf("%s asked %d times", tc.litellm, n)
			}
		})
	}
}
