package core

import (
	"encoding/json"
	"testing"
)

// OffersTools is the one rule eligibility and the adapters share: tools are offered when the
// array has one and tool_choice is not "none", however that string is written, nor an
// allowed_tools that lists no tool, which offers none (TestOffersTools's allowed_tools rows
// failed first: a target without tools was dropped for a request it could serve). One that lists
// custom tools alone offers them.
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
		{tools, `{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`, false},
		// A custom tool is a tool: listed alone it is offered (TestAllowedCustomToolIsOffered).
		{tools, `{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"custom","custom":{"name":"c"}}]}}`, true},
		{tools, `{"type":"allowed_tools","allowed_tools":{"mode":"auto"}}`, false},
		{tools, `{"type":"allowed_tools","mode":"auto","tools":[]}`, false},
		{tools, `{"type":"allowed_tools","mode":"auto","tools":[{"type":"custom","name":"c"}]}`, true},
		{tools, `{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f"}}]}}`, true},
		{tools, `{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"custom","custom":{"name":"c"}},{"type":"function","function":{"name":"f"}}]}}`, true},
		{tools, `{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"}]}`, true},
		{tools, `{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"function":{"name":"f"}}]}}`, true},
		{tools, `{"type":"custom","custom":{"name":"c"}}`, true},
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

// OffersCustomTools: a custom tool is offered when tools holds one and tool_choice leaves it
// callable, which only a named function or an allowed_tools without it does not.
func TestOffersCustomTools(t *testing.T) {
	const tools = `[{"type":"function","function":{"name":"f"}},{"type":"custom","custom":{"name":"c"}}]`
	for _, tc := range []struct {
		tools, choice string
		want          bool
	}{
		{tools, "", true},
		{tools, `"auto"`, true},
		{tools, `"required"`, true},
		{tools, `null`, true},
		{tools, `{"type":"custom","custom":{"name":"c"}}`, true},
		{tools, `{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"custom","custom":{"name":"c"}}]}}`, true},
		{tools, `{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"},{"type":"custom","name":"c"}]}`, true},
		{`[{"type":"\u0063ustom","custom":{"name":"c"}}]`, "", true},
		{tools, `"none"`, false},
		{tools, `{"type":"function","function":{"name":"f"}}`, false},
		{tools, `{"type":"function","name":"f"}`, false},
		{tools, `{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f"}}]}}`, false},
		{tools, `{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`, false},
		{`[{"type":"function","function":{"name":"custom"}}]`, "", false},
		{`[]`, "", false},
	} {
		p := Params{ToolsRaw: json.RawMessage(tc.tools), ToolChoice: json.RawMessage(tc.choice)}
		if got := p.OffersCustomTools(); got != tc.want {
			t.Errorf("tools %s, tool_choice %s: OffersCustomTools() = %v, want %v", tc.tools, tc.choice, got, tc.want)
		}
	}
}
