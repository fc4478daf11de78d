package filter_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
)

// A server may join an assistant message's text parts with nothing between (the bound allows a
// merge per boundary for that reason), and then a "</think>" cut across two or more parts is one
// in the rendered content: the reasoning templates (DeepSeek R1, Qwen 3) keep only what follows
// it. Only a "</think>" whole inside one part was looked for, so the reasoning before a split one
// was counted, and a target it fits was dropped.
func TestPromptTokensMinThinkEndAcrossParts(t *testing.T) {
	reasoning := strings.Repeat("step by step we reason about it ", 50) // 350 words
	cases := []struct {
		name  string
		texts []string
	}{
		{"split in two", []string{reasoning + "</thi", "nk>The answer"}},
		{"split in three", []string{reasoning + "</", "think", ">The answer"}},
		{"split at its first byte", []string{reasoning + "<", "/think>The answer"}},
		{"split at its last byte", []string{reasoning + "</think", ">The answer"}},
		{"a whole one earlier, a split one later", []string{"<think>x</think>" + reasoning + "</th", "ink>The answer"}},
		{"the answer in a later part", []string{reasoning + "</thin", "k>", "The answer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parts := make([]map[string]string, len(tc.texts))
			for i, s := range tc.texts {
				parts[i] = map[string]string{"type": "text", "text": s}
			}
			content, err := json.Marshal(parts)
			if err != nil {
				t.Fatal(err)
			}
			got := filter.PromptTokensMin([]core.Message{{Role: "assistant", Content: content}})
			// Joined with nothing, the template renders what follows the last "</think>".
			joined := strings.Join(tc.texts, "")
			rendered := joined[strings.LastIndex(joined, "</think>")+len("</think>"):]
			req := core.Request{PromptTokensMin: got}
			if ok, why := (filter.Context{}).Keep(&req, &core.Target{Name: "small", ContextWindow: 16}); !ok {
				t.Errorf("a 16-token window the rendered text fits was dropped: %s", why)
			}
			for _, p := range pretokenizers {
				if want := p.count(rendered); got > want {
					t.Errorf("PromptTokensMin = %d > %d %s pre-tokens of the rendered %q", got, want, p.name, rendered)
				}
			}
		})
	}
}
