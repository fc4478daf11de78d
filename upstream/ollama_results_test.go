package upstream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOllamaToolResultsInCallOrder: Ollama's tool messages have tool_name and no call id, and a
// model's template pairs each result with the call in the same place. Two calls of one tool
// (the weather in two cities) answered in another order than they were made were read as each
// other's answers, without a word: the run of results after an assistant's calls is now sent in
// the calls' order when it answers each call exactly once by tool_call_id, as Ollama's own
// OpenAI endpoint orders it. A run that does not (a result missing or extra, an id unknown,
// repeated or absent) cannot be matched, and goes as the client ordered it.
func TestOllamaToolResultsInCallOrder(t *testing.T) {
	call := func(ids ...string) string {
		s := `{"role":"assistant","content":null,"tool_calls":[`
		for i, id := range ids {
			if i > 0 {
				s += ","
			}
			idField := ""
			if id != "" {
				idField = `"id":"` + id + `",`
			}
			s += `{` + idField + `"type":"function","function":{"name":"weather","arguments":"{\"city\":\"` + id + `\"}"}}`
		}
		return s + `]}`
	}
	result := func(id string) string {
		if id == "" {
			return `{"role":"tool","content":"for ?","name":"weather"}`
		}
		// The name is what a result whose id no call has falls back to.
		return `{"role":"tool","tool_call_id":"` + id + `","name":"weather","content":"for ` + id + `"}`
	}
	for _, tt := range []struct {
		name string
		msgs []string
		want []string // the tool results' contents as sent
	}{
		{"reversed", []string{call("a", "b"), result("b"), result("a")}, []string{"for a", "for b"}},
		{"in order", []string{call("a", "b"), result("a"), result("b")}, []string{"for a", "for b"}},
		{"three", []string{call("a", "b", "c"), result("c"), result("a"), result("b")}, []string{"for a", "for b", "for c"}},
		{"each turn on its own", []string{call("a", "b"), result("b"), result("a"), `{"role":"user","content":"and?"}`,
			call("c", "d"), result("d"), result("c")}, []string{"for a", "for b", "for c", "for d"}},
		{"a result missing", []string{call("a", "b", "c"), result("c"), result("a")}, []string{"for c", "for a"}},
		{"a result extra", []string{call("a", "b"), result("b"), result("a"), result("c")}, []string{"for b", "for a", "for c"}},
		{"an unknown id", []string{call("a", "b"), result("b"), result("x")}, []string{"for b", "for x"}},
		{"a result repeated", []string{call("a", "b"), result("b"), result("b")}, []string{"for b", "for b"}},
		{"a call id repeated", []string{call("a", "a", "b"), result("b"), result("a"), result("a")}, []string{"for b", "for a", "for a"}},
		{"no ids", []string{call("", ""), result(""), result("")}, []string{"for ?", "for ?"}},
		{"interrupted", []string{call("a", "b"), result("b"), `{"role":"user","content":"go on"}`, result("a")}, []string{"for b", "for a"}},
		{"no calls before", []string{`{"role":"user","content":"q"}`, result("b"), result("a")}, []string{"for b", "for a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"messages":[{"role":"user","content":"Weather?"}`
			for _, m := range tt.msgs {
				body += "," + m
			}
			a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
			out, err := a.translate(chatRequestOf(t, body+`]}`))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range out.Messages {
				if m.Role == "tool" {
					got = append(got, m.sentText())
					if m.ToolName != "weather" {
						t.Errorf("%q went with tool_name %q", m.sentText(), m.ToolName)
					}
				}
			}
			if len(out.Messages) != len(tt.msgs)+1 {
				t.Errorf("%d messages sent for %d", len(out.Messages), len(tt.msgs)+1)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
		})
	}
}
