package core

import (
	"encoding/json"
	"testing"
)

// OffersTools is the one rule eligibility and the adapters share: tools are offered when the
// array has one and tool_choice is not "none", however that string is written.
func TestOffersTools(t *testing.T) {
	const tools = `[{"type":"function","function":{"name":"f"}}]`
	for _, tc := range []struct {
		tools, choice string
		want          bool
	}{
		{tools, "", true},
		{tools, `"auto"`, true},
		{tools, `"required"`, true},
		{tools, `{"type":"function","function":{"name":"f"}}`, true},
		{tools, `null`, true},
		{tools, `"none"`, false},
		{tools, ` "none" `, false},
		{tools, `"\u006eone"`, false},
		{`[]`, `"auto"`, false},
		{`[ ]`, "", false},
		{``, "", false},
		{`null`, "", false},
	} {
		p := Params{ToolsRaw: json.RawMessage(tc.tools), ToolChoice: json.RawMessage(tc.choice)}
		if got := p.OffersTools(); got != tc.want {
			t.Errorf("tools %s, tool_choice %s: OffersTools() = %v, want %v", tc.tools, tc.choice, got, tc.want)
		}
	}
}
