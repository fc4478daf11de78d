package config

import (
	"strings"
	"testing"
)

// TestHintShadowedRouteWarned: a route auto can choose whose name is also a specialist hint
// (case-insensitively) cannot be reached with x-route-hint, which names the specialist first and
// so goes to specialist_route: check-config says so. The specialist route itself, and a route
// auto cannot choose, are not warned of.
func TestHintShadowedRouteWarned(t *testing.T) {
	const targets = "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:9/v1\"\n"
	for _, tc := range []struct {
		name, routes, auto string
		warn               []string
	}{
		{"a route named like a default specialist", "[routes.saif]\ntargets = [\"a\"]\n[routes.Cloud]\ntargets = [\"a\"]\n" +
			"[routes.averroes-q]\ntargets = [\"a\"]\n[routes.deepseek-r1]\ntargets = [\"a\"]\n",
			"[auto]\n[[auto.intents]]\nname = \"cloudy\"\nroute = \"Cloud\"\nterms = [\"aws\"]\n", []string{"route Cloud"}},
		{"named like a configured specialist", "[routes.saif]\ntargets = [\"a\"]\n[routes.web]\ntargets = [\"a\"]\n[routes.gen]\ntargets = [\"a\"]\n",
			"[auto]\ndefault = \"web\"\nspecialists = [\"WEB\"]\n[[auto.intents]]\nname = \"x\"\nroute = \"gen\"\nterms = [\"x\"]\n", []string{"route web"}},
		{"the specialist route itself", "[routes.saif]\ntargets = [\"a\"]\n[routes.gen]\ntargets = [\"a\"]\n",
			"[auto]\ndefault = \"gen\"\nspecialists = [\"saif\"]\n[[auto.intents]]\nname = \"x\"\nroute = \"gen\"\nterms = [\"x\"]\n", nil},
		{"a route auto cannot choose", "[routes.saif]\ntargets = [\"a\"]\n[routes.gen]\ntargets = [\"a\"]\n[routes.cloud]\ntargets = [\"a\"]\n",
			"[auto]\ndefault = \"gen\"\n[[auto.intents]]\nname = \"x\"\nroute = \"gen\"\nterms = [\"x\"]\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(targets+tc.routes+tc.auto), "h.toml", nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range cfg.Warnings() {
				if strings.Contains(w, "x-route-hint") {
					got = append(got, w)
				}
			}
			if len(got) != len(tc.warn) {
				t.Fatalf("warnings %q, want %d naming %q", got, len(tc.warn), tc.warn)
			}
			for i, w := range tc.warn {
				if !strings.Contains(got[i], w) || !strings.Contains(cfg.Summary(), got[i]) {
					t.Errorf("warning %q does not name %q, or check-config does not print it", got[i], w)
				}
			}
		})
	}
}
