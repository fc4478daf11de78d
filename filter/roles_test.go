package filter_test

import (
	"encoding/json"
	"testing"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
)

// TestPromptTokensMinTemplateDrops: a chat template leaves some messages out of the prompt, and
// what it leaves out cannot count. Llama 3.1's template (and Ollama's llama3.1 and nemotron)
// renders an assistant message with tool calls as the calls alone; Mistral Nemo's renders the
// system prompt only inside the last message when that is the user's, so a conversation that ends
// with a tool result has none; Qwen 2.5's renders no role it does not know ("developer").
func TestPromptTokensMinTemplateDrops(t *testing.T) {
	long := jsonString("one two three four five six seven eight nine ten")
	calls := json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]`)
	cases := []struct {
		name string
		msgs []core.Message
		want int
	}{
		{"assistant content beside tool calls", []core.Message{
			{Role: "user", Content: jsonString("hi")},
			{Role: "assistant", Content: long, ToolCalls: calls},
		}, 1},
		{"assistant content with empty tool calls counts", []core.Message{
			{Role: "assistant", Content: long, ToolCalls: json.RawMessage(`[]`)},
		}, 10},
		{"system when the last message is a tool result", []core.Message{
			{Role: "system", Content: long},
			{Role: "user", Content: jsonString("hi")},
			{Role: "assistant", ToolCalls: calls},
			{Role: "tool", ToolCallID: "c1", Content: jsonString("result")},
		}, 2},
		{"system when the last message is the user's", []core.Message{
			{Role: "system", Content: long},
			{Role: "user", Content: jsonString("hi")},
		}, 11},
		{"developer", []core.Message{
			{Role: "developer", Content: long},
			{Role: "user", Content: jsonString("hi")},
		}, 1},
		{"unknown role", []core.Message{
			{Role: "function", Name: "f", Content: long},
			{Role: "user", Content: jsonString("hi")},
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := filter.PromptTokensMin(tc.msgs); got != tc.want {
				t.Errorf("PromptTokensMin = %d, want %d", got, tc.want)
			}
		})
	}
}
