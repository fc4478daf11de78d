package config

import (
	"strings"
	"testing"
)

// TestTopLevelStrict: the top-level strict = true makes every route strict, one written without
// strict included, and check-config's summary says so; a route may not take it back with
// strict = false, and a route with only public targets, which could then serve nothing, is an
// error naming the top-level strict. Left out, routes are as they say.
func TestTopLevelStrict(t *testing.T) {
	const targets = "[targets.local]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:9/v1\"\n\n" +
		"[targets.cloud]\nadapter = \"openai\"\nurl = \"https://openrouter.ai/api/v1\"\nclass = \"public\"\n\n"
	parse := func(text string) (*Config, error) {
		return Parse([]byte(text), "t.toml", func(string) string { return "" })
	}

	cfg, err := parse("strict = true\n" + targets +
		"[routes.a]\ntargets = [\"local\", \"cloud\"]\n\n[routes.b]\ntargets = [\"local\"]\nstrict = true\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cfg.Routes {
		if !r.Strict {
			t.Errorf("route %s is not strict under the top-level strict = true", r.Name)
		}
	}
	if !cfg.Strict || !strings.Contains(cfg.Summary(), "strict: every route") {
		t.Errorf("the summary does not say every route is strict:\n%s", cfg.Summary())
	}

	cfg, err = parse(targets + "[routes.a]\ntargets = [\"local\", \"cloud\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Strict || cfg.Routes[0].Strict || strings.Contains(cfg.Summary(), "strict: every route") {
		t.Error("without the top-level strict, a route that does not say strict is strict")
	}

	for _, tc := range []struct{ name, routes, want string }{
		{"a route's strict = false", "[routes.a]\ntargets = [\"local\", \"cloud\"]\nstrict = false\n",
			"routes.a.strict: strict = false, but the top-level strict = true makes every route strict"},
		{"a route with only public targets", "[routes.a]\ntargets = [\"cloud\"]\n",
			"routes.a.targets: every target of this route is public, and the top-level strict = true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse("strict = true\n" + targets + tc.routes)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
