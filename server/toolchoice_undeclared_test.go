package server_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToolChoiceNamesUndeclaredTool: a tool_choice that names a function the request's tools do
// not declare is refused before any target is asked, whichever shape names it, where an openai
// target was sent it and the ollama adapter refused it its own way. On /v1/responses, a named
// function or an allowed_tools entry is refused as OpenAI's Responses API refuses it (400,
// param tool_choice, "Tool choice 'g' not found in 'tools' parameter."); on chat, the Responses
// shape the gateway also takes there ({"type":"function","name":…}) is refused as chat's own
// shape is, naming tool_choice.name. Choices that name declared tools, allowed_tools of chat's
// shape, and custom tools' choices go on as before. (This test failed first: the refused ones
// but the Responses named function reached the upstream, which answered 200.)
func TestToolChoiceNamesUndeclaredTool(t *testing.T) {
	g, up := oneTarget(t)
	const (
		msgs  = `"messages":[{"role":"user","content":"x"}]`
		chatF = `"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]`
		respF = `"tools":[{"type":"function","name":"f","parameters":{}}]`
	)
	type refusal struct{ Status, Param, Code, Message any }
	notFound := func(name string) refusal {
		return refusal{400.0, "tool_choice", "invalid_value", "Tool choice '" + name + "' not found in 'tools' parameter."}
	}
	ok := refusal{Status: 200.0}
	for _, tc := range []struct {
		name, path, body string
		want             refusal
	}{
		{"responses: named, undeclared", "/v1/responses", `{"model":"r","input":"x",` + respF + `,"tool_choice":{"type":"function","name":"g"}}`, notFound("g")},
		{"responses: allowed_tools, one undeclared", "/v1/responses", `{"model":"r","input":"x",` + respF +
			`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"},{"type":"function","name":"g"}]}}`, notFound("g")},
		{"responses: allowed_tools, no tools", "/v1/responses", `{"model":"r","input":"x",` +
			`"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"g"}]}}`, notFound("g")},
		{"responses: named, no tools", "/v1/responses", `{"model":"r","input":"x","tool_choice":{"type":"function","name":"g"}}`, notFound("g")},
		{"responses: named, declared", "/v1/responses", `{"model":"r","input":"x",` + respF + `,"tool_choice":{"type":"function","name":"f"}}`, ok},
		{"responses: allowed_tools, declared", "/v1/responses", `{"model":"r","input":"x",` + respF +
			`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}}`, ok},
		{"responses: allowed_tools, empty", "/v1/responses", `{"model":"r","input":"x",` + respF +
			`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}}`, ok},
		{"chat: the Responses shape, undeclared", "/v1/chat/completions", `{"model":"r",` + msgs + `,` + chatF + `,"tool_choice":{"type":"function","name":"g"}}`,
			refusal{400.0, "tool_choice.name", "invalid_value", `Invalid value for 'tool_choice.name': "g" is not a function defined in 'tools'.`}},
		{"chat: the Responses shape, no tools", "/v1/chat/completions", `{"model":"r",` + msgs + `,"tool_choice":{"type":"function","name":"g"}}`,
			refusal{400.0, "tool_choice", "invalid_value", "Invalid value for 'tool_choice': a named function is only allowed when 'tools' are specified."}},
		{"chat: the Responses shape, declared", "/v1/chat/completions", `{"model":"r",` + msgs + `,` + chatF + `,"tool_choice":{"type":"function","name":"f"}}`, ok},
		{"chat: named, declared", "/v1/chat/completions", `{"model":"r",` + msgs + `,` + chatF + `,"tool_choice":{"type":"function","function":{"name":"f"}}}`, ok},
		{"chat: allowed_tools, declared", "/v1/chat/completions", `{"model":"r",` + msgs + `,` + chatF +
			`,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f"}}]}}}`, ok},
		// chat's allowed_tools listing a function tools do not declare: refused as a named one is
		// (the ollama adapter refused it, an openai target was sent it), naming the list.
		{"chat: allowed_tools, one undeclared", "/v1/chat/completions", `{"model":"r",` + msgs + `,` + chatF +
			`,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}]}}}`,
			refusal{400.0, "tool_choice.allowed_tools.tools", "invalid_value", `Invalid value for 'tool_choice.allowed_tools.tools': "g" is not a function defined in 'tools'.`}},
		{"chat: allowed_tools of the Responses shape, undeclared", "/v1/chat/completions", `{"model":"r",` + msgs + `,` + chatF +
			`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"g"}]}}`,
			refusal{400.0, "tool_choice.tools", "invalid_value", `Invalid value for 'tool_choice.tools': "g" is not a function defined in 'tools'.`}},
		{"chat: allowed_tools, no tools", "/v1/chat/completions", `{"model":"r",` + msgs +
			`,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"g"}}]}}}`,
			ok}, // offers nothing without tools (TestToolChoiceWithoutToolsNotSentToATargetWithout)
		{"chat: allowed_tools, empty", "/v1/chat/completions", `{"model":"r",` + msgs + `,` + chatF +
			`,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}}`, ok},
		{"chat: a custom tool's choice", "/v1/chat/completions", `{"model":"r",` + msgs +
			`,"tools":[{"type":"custom","custom":{"name":"c"}}],"tool_choice":{"type":"custom","custom":{"name":"c"}}}`, ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := up.hits.Load()
			rep := g.post(t, tc.path, tc.body)
			got := refusal{Status: float64(rep.status)}
			if rep.status != http.StatusOK {
				got = refusal{float64(rep.status), rep.errorField(t, "param"), rep.errorField(t, "code"), rep.errorField(t, "message")}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if asked := up.hits.Load() - before; (tc.want.Status == 200.0) != (asked == 1) {
				t.Errorf("upstream asked %d times", asked)
			}
		})
	}
}
