package core

import (
	"encoding/json"
	"testing"
)

// OffersTools is the one rule eligibility and the adapters share: tools are offered when the
// array has one and tool_choice is not "none", however that string is written, nor an
// allowed_tools that lists no function tool (an empty list, or custom tools only), which offers
// none (TestOffersTools's allowed_tools rows failed first: a target without tools was dropped
// for a request it could serve).
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
		{tools, `{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"custom","custom":{"name":"c"}}]}}`, false},
		{tools, `{"type":"allowed_tools","allowed_tools":{"mode":"auto"}}`, false},
		{tools, `{"type":"allowed_tools","mode":"auto","tools":[]}`, false},
		{tools, `{"type":"allowed_tools","mode":"auto","tools":[{"type":"custom","name":"c"}]}`, false},
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
