package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesMaxOutputTokensErrorsNameIt: a bad max_output_tokens is refused naming the
// parameter the client sent, not chat's max_tokens the bridge turned it into.
func TestResponsesMaxOutputTokensErrorsNameIt(t *testing.T) {
	g, _ := oneTarget(t)
	c := sdkClient(g, "unused")
	for _, v := range []any{-1, "x"} {
		_, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "r",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}},
			option.WithJSONSet("max_output_tokens", v))
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Param != "max_output_tokens" ||
			strings.Contains(oe.Message, "max_tokens") || !strings.Contains(oe.Message, "max_output_tokens") {
			t.Errorf("max_output_tokens %v: %v", v, err)
		}
	}
}

// TestResponsesReasoningField: the thinking of an upstream that names it "reasoning" (vLLM's
// newer OpenAI server, Ollama's /v1) is the reasoning item, whole and streamed, as
// reasoning_content is; one that sends both fields with the same text gives it once, and a
// "reasoning" that is not a string is left alone.
func TestResponsesReasoningField(t *testing.T) {
	for name, delta := range map[string]string{
		"reasoning": `"reasoning":"hm"`,
		"both":      `"reasoning":"hm","reasoning_content":"hm"`,
		"object":    `"reasoning":{"effort":"low"},"reasoning_content":"hm"`,
	} {
		t.Run(name, func(t *testing.T) {
			g, up := oneTarget(t)
			up.set(wholeOrStream(
				`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant",`+delta+`,"content":"ok"},"finish_reason":"stop"}]}`,
				`{"index":0,"delta":{"role":"assistant",`+delta+`}}`,
				`{"index":0,"delta":{`+delta+`}}`,
				`{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}`))
			c := sdkClient(g, "unused")
			p := responses.ResponseNewParams{Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
			whole, err := c.Responses.New(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if len(whole.Output) != 2 || whole.Output[0].Type != "reasoning" || len(whole.Output[0].Content) != 1 ||
				whole.Output[0].Content[0].Text != "hm" || whole.OutputText() != "ok" {
				t.Errorf("whole %s", whole.RawJSON())
			}
			st := c.Responses.NewStreaming(context.Background(), p)
			_, _, last := collect(t, st)
			if len(last.Output) != 2 || last.Output[0].Type != "reasoning" || len(last.Output[0].Content) != 1 ||
				last.Output[0].Content[0].Text != "hmhm" || last.OutputText() != "ok" {
				t.Errorf("streamed %s", last.RawJSON())
			}
		})
	}
}

// TestResponsesObjectArguments: a call whose arguments an upstream gave as a JSON object (TGI's
// older answers) is a function_call with those arguments as text, not a 502 (whole) or a chunk
// dropped without a word (streamed).
func TestResponsesObjectArguments(t *testing.T) {
	g, up := oneTarget(t)
	up.set(wholeOrStream(
		`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":{"a": 1}}}]},"finish_reason":"tool_calls"}]}`,
		`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":{"a": 1}}}]},"finish_reason":"tool_calls"}`))
	c := sdkClient(g, "unused")
	p := responses.ResponseNewParams{Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("f", map[string]any{"type": "object"}, false)}}
	whole, err := c.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	st := c.Responses.NewStreaming(context.Background(), p)
	_, _, streamed := collect(t, st)
	for name, r := range map[string]*responses.Response{"whole": whole, "streamed": &streamed} {
		if len(r.Output) != 1 || r.Output[0].AsFunctionCall().Arguments != `{"a":1}` || r.Output[0].AsFunctionCall().CallID != "call_1" {
			t.Errorf("%s %s", name, r.RawJSON())
		}
	}
}
