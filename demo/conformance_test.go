package demo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/conformance"
)

// TestDemoPassesConformance runs `gateway conformance` in-process against the demo, as a new
// user's first move does, and lists every check that does not pass, so that a simulator that
// stops honouring a parameter (or a check that starts skipping) fails here. "auto" sends most
// probes to Averroes-Q (the Ollama adapter), n: 2 and /v1/completions on to DeepSeek R1 (the
// OpenAI adapter with think-tags); the two named routes drive each simulator through everything.
func TestDemoPassesConformance(t *testing.T) {
	// What no simulator can change: no --api-key, no 429, and the gateway accepts unknown
	// request fields (a --strict matter).
	always := map[string]conformance.Result{
		"errors.bad_key":              conformance.Skip,
		"errors.retry_after":          conformance.Skip,
		"errors.strict.unknown_field": conformance.Warn,
	}
	embeddingsSkip := map[string]conformance.Result{
		"embeddings.status": conformance.Skip, "embeddings.object": conformance.Skip, "embeddings.entries": conformance.Skip,
		"embeddings.order": conformance.Skip, "embeddings.usage": conformance.Skip, "embeddings.base64": conformance.Skip,
	}
	reasoningSkips := map[string]conformance.Result{"logprobs.content": conformance.Skip, "logprobs.top_count": conformance.Skip}
	for k, v := range embeddingsSkip {
		reasoningSkips[k] = v
	}
	tests := []struct {
		model string
		// embed is the embedding model, when not model: "auto" does not embed (its routes are
		// chat routes), and a client names the route that does.
		embed string
		// notPassing is every check beyond always that is not PASS, with its result.
		notPassing map[string]conformance.Result
	}{
		{"auto", "averroes-q", nil},
		{"averroes-q", "", nil},
		// The deepseek-r1 route has no target that embeds; and R1 spends the logprobs probe's 4
		// tokens on its reasoning, so its answer has no content and no content logprobs.
		{"deepseek-r1", "", reasoningSkips},
		// Nor has saif's. A JSON response_format or logprobs skips SAIF, whose protocol carries
		// neither, for deepseek-r1 (eligibility's format filter).
		{"saif", "", reasoningSkips},
	}
	url := startDemoURL(t)
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			want := map[string]conformance.Result{}
			for _, m := range []map[string]conformance.Result{always, tt.notPassing} {
				for k, v := range m {
					want[k] = v
				}
			}
			rep, err := conformance.Run(context.Background(), conformance.Options{BaseURL: url + "/v1", Model: tt.model, EmbeddingModel: tt.embed})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := map[string]conformance.Result{}
			for _, c := range rep.Checks {
				if c.Result != conformance.Pass {
					got[c.ID] = c.Result
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				for _, c := range rep.Checks {
					if c.Result != conformance.Pass {
						t.Logf("%s %s: %s%s", c.Result, c.ID, c.Reason, evidence(c))
					}
				}
				t.Errorf("checks that did not pass (-want +got):\n%s", diff)
			}
			if s := rep.Summary(); s.Fail != 0 || rep.ExitCode() != 0 {
				t.Errorf("summary %+v, exit code %d; want no FAIL and exit 0", s, rep.ExitCode())
			}
		})
	}
}

func evidence(c conformance.CheckResult) string {
	if c.Evidence == nil {
		return ""
	}
	return fmt.Sprintf("; expected %s; seen %s; excerpt %s", c.Evidence.Expected, c.Evidence.Seen, c.Evidence.Excerpt)
}
