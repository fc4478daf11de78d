package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A max_tokens near the largest int wrapped two sums. The server's shortcut (the body plus
// max_tokens fits the smallest window, so the prompt's bound is not computed) read such a request
// as fitting everywhere, so a target whose window the prompt alone certainly overflows was tried;
// and the context filter's prompt + max_tokens wrapped below the window, so explain, which always
// computes the bound, kept a target the real request dropped. Both now drop what certainly cannot
// fit, and explain says what the request does.
func TestContextHugeMaxTokens(t *testing.T) {
	huge := "9223372036854775807"
	prompt := strings.Repeat("lorem ipsum dolor sit amet ", 40) // 200 words: over 64 tokens
	cases := []struct {
		name      string
		smallConf string // the small target's window setting
		maxTokens string
	}{
		// The prompt alone overflows a target that makes room for the answer itself.
		{"prompt alone, window does not count max_tokens", "window_counts_max_tokens = false", huge},
		// max_tokens alone overflows a target that counts it, whatever the prompt's bound.
		{"max_tokens, window counts it", "window_counts_max_tokens = true", huge},
		{"max_tokens just under the largest int", "window_counts_max_tokens = true", "9223372036854775800"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			small, big := newFake(t, "small"), newFake(t, "big")
			g := newGateway(t, target("small", small.url(), "private", "context_window = 64", tc.smallConf)+
				target("big", big.url(), "private", "context_window = 1000000", "window_counts_max_tokens = false")+
				"[routes.r]\ntargets = [\"small\", \"big\"]\n", nil)
			body, _ := json.Marshal(map[string]any{"model": "r",
				"messages": []map[string]string{{"role": "user", "content": prompt}}})
			b := strings.Replace(string(body), `"model":"r"`, `"model":"r","max_tokens":`+tc.maxTokens, 1)

			rep := g.post(t, "/v1/route/explain", b)
			if rep.status != 200 {
				t.Fatalf("explain: %d %s", rep.status, rep.body)
			}
			var x struct {
				Order []string `json:"order"`
				Drops []struct {
					Target, Filter string
				} `json:"drops"`
			}
			if err := json.Unmarshal(rep.body, &x); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"big"}, x.Order); diff != "" {
				t.Errorf("explain order (-want +got):\n%s\n%s", diff, rep.body)
			}
			if len(x.Drops) != 1 || x.Drops[0].Target != "small" || x.Drops[0].Filter != "context" {
				t.Errorf("explain drops %+v, want small dropped by context", x.Drops)
			}
			real := g.post(t, "/v1/chat/completions", b)
			if chain := real.header.Get("x-hayula-chain"); chain != "big" {
				t.Errorf("the request walked %q (status %d), want big alone, as explain says", chain, real.status)
			}
			if small.hits.Load() != 0 {
				t.Errorf("small, whose 64-token window the request certainly overflows, was asked")
			}
		})
	}
}
