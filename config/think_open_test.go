package config

import (
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// TestReasoningThinkOpen: reasoning = "think-open" loads as core.ReasoningThinkOpen (a template
// that opens the think block in the prompt), check-config's summary names it, and an unknown
// value's error lists it among the values there are.
func TestReasoningThinkOpen(t *testing.T) {
	src := strings.Replace(minimal, "url = \"http://127.0.0.1:1/v1\"\n", "url = \"http://127.0.0.1:1/v1\"\nreasoning = \"think-open\"\n", 1)
	cfg, err := Parse([]byte(src), "r.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Targets[0].Reasoning; got != core.ReasoningThinkOpen {
		t.Errorf("Reasoning = %v, want ReasoningThinkOpen", got)
	}
	if s := cfg.Summary(); !strings.Contains(s, "think-open") {
		t.Errorf("summary does not name think-open:\n%s", s)
	}
	bad := strings.Replace(src, "think-open", "think-close", 1)
	if got := parseErr(t, bad); !strings.Contains(got, `unknown reasoning "think-close" (want passthrough, think-tags or think-open)`) {
		t.Errorf("error %q, want it to list think-open", got)
	}
}
