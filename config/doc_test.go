package config

import (
	"os"
	"strings"
	"testing"
)

// TestConfigDocExampleLoads keeps CONFIG.md's complete example true: it must load as written.
func TestConfigDocExampleLoads(t *testing.T) {
	doc, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## A complete example")
	if !ok {
		t.Fatal("CONFIG.md has no complete example")
	}
	_, rest, _ = strings.Cut(rest, "```toml\n")
	example, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the complete example has no toml block")
	}
	env := map[string]string{"OPENROUTER_API_KEY": "sk-test"}
	cfg, err := Parse([]byte(example), "CONFIG.md", func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("CONFIG.md's complete example does not load:\n%v", err)
	}
	if cfg.Auto == nil || len(cfg.Routes) < 4 {
		t.Fatalf("example compiled to %d routes, auto %v", len(cfg.Routes), cfg.Auto != nil)
	}
}
