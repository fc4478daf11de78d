package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// Ollama refuses a request the model cannot serve with a 400 naming what it lacks: tools to a
// model whose template has none ("registry.ollama.ai/library/gemma:2b does not support tools",
// CheckCapabilities through handleScheduleError), a think level to a model that cannot think
// ("\"gemma:2b\" does not support thinking"), chat to an embedding model ("does not support
// chat"). That is the model's failure, not the request's: the next target on the route, which
// can, must answer, streamed or not, and with no other target the client gets Ollama's 400 as
// it came. Before, the 400 was class request and stopped the chain: a route of a small model
// and a capable one answered every tools request from a homelab agent with the small one's 400.
func TestOllamaCapabilityRefusalFallsThrough(t *testing.T) {
	small := newAdUpstream(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		msg := `"\"gemma:2b\" does not support thinking"`
		if _, ok := body["tools"]; ok {
			msg = `"registry.ollama.ai/library/gemma:2b does not support tools"`
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":`+msg+`}`)
	})
	capable := newAdUpstream(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		line := `{"model":"qwen3:8b","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"",` +
			`"tool_calls":[{"id":"call_a1","function":{"index":0,"name":"get_weather","arguments":{"city":"Fès"}}}]},` +
			`"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":4}`
		if _, ok := body["tools"]; !ok {
			line = `{"model":"qwen3:8b","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"Sunny.","thinking":"Hm."},` +
				`"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":4}`
		}
		_, _ = io.WriteString(w, line+"\n")
	})
	c := adClient(t, fmt.Sprintf(`
[targets.gemma]
adapter = "ollama"
url     = %q
model   = "gemma:2b"

[targets.qwen]
adapter = "ollama"
url     = %q
model   = "qwen3:8b"

[routes.local]
targets = ["gemma", "qwen"]

[routes.small]
targets = ["gemma"]
`, small.srv.URL, capable.srv.URL))
	ctx := context.Background()
	tools := openai.ChatCompletionNewParams{Model: "local",
		Tools:    []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather"})},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Fès?")}}
	think := openai.ChatCompletionNewParams{Model: "local", ReasoningEffort: shared.ReasoningEffortHigh,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Fès?")}}
	t.Run("tools whole", func(t *testing.T) {
		got, err := c.Chat.Completions.New(ctx, tools)
		if err != nil {
			t.Fatal(err)
		}
		if tc := got.Choices[0].Message.ToolCalls; len(tc) != 1 || tc[0].Function.Name != "get_weather" || got.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("answer %s", got.RawJSON())
		}
	})
	t.Run("tools stream", func(t *testing.T) {
		st := c.Chat.Completions.NewStreaming(ctx, tools)
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if tc := acc.Choices[0].Message.ToolCalls; len(tc) != 1 || tc[0].Function.Arguments != `{"city":"Fès"}` || acc.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("answer %+v", acc.Choices[0])
		}
	})
	t.Run("reasoning_effort", func(t *testing.T) {
		got, err := c.Chat.Completions.New(ctx, think)
		if err != nil {
			t.Fatal(err)
		}
		if got.Choices[0].Message.Content != "Sunny." {
			t.Fatalf("answer %s", got.RawJSON())
		}
	})
	t.Run("no other target", func(t *testing.T) {
		p := tools
		p.Model = "small"
		_, err := c.Chat.Completions.New(ctx, p)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest ||
			!strings.Contains(apiErr.Message, "gemma:2b does not support tools") {
			t.Fatalf("err = %v, want Ollama's 400", err)
		}
	})
}
