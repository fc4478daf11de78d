package upstream

// The Ollama fidelity review: what the adapter sends /api/chat against Ollama's current API
// (api/types.go Message and ToolCall; openai/openai.go FromChatRequest, which is how Ollama's own
// OpenAI endpoint fills them), each case against an httptest Ollama that keeps the request.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sentToOllama serves one whole /api/chat answer and returns the request body the adapter sent.
func sentToOllama(t *testing.T, client string) []byte {
	t.Helper()
	got := make(chan []byte, 1)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, ollamaLine(`{"role":"assistant","content":"ok"}`, true, `"done_reason":"stop","prompt_eval_count":3,"eval_count":1`))
	})
	tg := ollamaTarget(srv.URL)
	if _, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, client)); err != nil {
		t.Fatal(err)
	}
	return <-got
}

// TestOllamaToolIDsSent: Ollama's Message carries tool_call_id and its ToolCall an id (its own
// OpenAI endpoint fills both from the client's tool_call_id and tool_calls[].id), and the
// templates and renderers that pair a result with its call by id (and llama.cpp's Jinja
// templates, which Ollama now runs for some models) read them. The adapter sent neither: a
// result reached the model as the tool's name alone, and two calls of one tool were told apart
// by position only.
func TestOllamaToolIDsSent(t *testing.T) {
	const client = `{"messages":[{"role":"user","content":"Weather in Fès and Rabat?"},` +
		`{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Fès\"}"}},` +
		`{"id":"call_b","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rabat\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_a","content":"sunny"},` +
		`{"role":"tool","tool_call_id":"call_b","content":"rain"},` +
		`{"role":"tool","name":"weather","content":"no id"}]}`
	var sent struct {
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				ID       *string `json:"id"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolName   string  `json:"tool_name"`
			ToolCallID *string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(sentToOllama(t, client), &sent); err != nil {
		t.Fatal(err)
	}
	type result struct{ Name, ID string }
	var calls, results []result
	for _, m := range sent.Messages {
		for _, c := range m.ToolCalls {
			r := result{Name: c.Function.Name, ID: "(none)"}
			if c.ID != nil {
				r.ID = *c.ID
			}
			calls = append(calls, r)
		}
		if m.Role == "tool" {
			r := result{Name: m.ToolName, ID: "(none)"}
			if m.ToolCallID != nil {
				r.ID = *m.ToolCallID
			}
			results = append(results, r)
		}
	}
	if diff := cmp.Diff([]result{{"weather", "call_a"}, {"weather", "call_b"}}, calls); diff != "" {
		t.Errorf("assistant tool_calls sent (-want +got):\n%s", diff)
	}
	// A result without an id is sent without one (omitted, not ""), as before.
	if diff := cmp.Diff([]result{{"weather", "call_a"}, {"weather", "call_b"}, {"weather", "(none)"}}, results); diff != "" {
		t.Errorf("tool results sent (-want +got):\n%s", diff)
	}
}
