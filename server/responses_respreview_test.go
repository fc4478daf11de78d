package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesReasoningInputDropped: a reasoning item a client sends back in input (the gateway's
// own, round-tripped by the SDK with ToParam, or OpenAI's with a summary and encrypted_content) is
// read and not sent on, since chat has no item for it and the model reasons afresh; the request is
// served, and the messages and calls around it keep their order: a call after the reasoning joins
// the assistant message before it, as it does without the reasoning. Input of reasoning alone has
// nothing to send and is refused, naming input.
func TestResponsesReasoningInputDropped(t *testing.T) {
	g, up := oneTarget(t)
	up.set(wholeHandler(`{"index":0,"message":{"role":"assistant","content":"let me check","reasoning_content":"need the weather",` +
		`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"w","arguments":"{}"}}]},"finish_reason":"tool_calls"}`))
	c := sdkClient(g, "unused")
	ctx := context.Background()
	in := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("weather?", responses.EasyInputMessageRoleUser)}
	first, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "r", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: in}})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range first.Output {
		kinds = append(kinds, o.Type)
		switch o.Type {
		case "reasoning":
			p := o.AsReasoning().ToParam()
			in = append(in, responses.ResponseInputItemUnionParam{OfReasoning: &p})
		case "message":
			p := o.AsMessage().ToParam()
			in = append(in, responses.ResponseInputItemUnionParam{OfOutputMessage: &p})
		case "function_call":
			p := o.AsFunctionCall().ToParam()
			in = append(in, responses.ResponseInputItemUnionParam{OfFunctionCall: &p})
		}
	}
	if d := cmp.Diff([]string{"reasoning", "message", "function_call"}, kinds); d != "" {
		t.Fatalf("first output (-want +got):\n%s", d)
	}
	out := responses.ResponseInputItemParamOfFunctionCallOutput("sunny")
	out.OfFunctionCallOutput.CallID = openai.String("call_1")
	// OpenAI's own reasoning item, between the output and a second call.
	in = append(in, out, responses.ResponseInputItemUnionParam{OfReasoning: &responses.ResponseReasoningItemParam{
		ID: "rs_2", Summary: []responses.ResponseReasoningItemSummaryParam{{Text: "check again"}},
		EncryptedContent: openai.String("gAAAA")}},
		responses.ResponseInputItemParamOfFunctionCall(`{"again":true}`, "call_2", "w"))
	out2 := responses.ResponseInputItemParamOfFunctionCallOutput("still sunny")
	out2.OfFunctionCallOutput.CallID = openai.String("call_2")
	in = append(in, out2)
	up.set(wholeHandler(`{"index":0,"message":{"role":"assistant","content":"sunny"},"finish_reason":"stop"}`))
	second, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "r", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: in}})
	if err != nil {
		t.Fatal(err)
	}
	if second.OutputText() != "sunny" {
		t.Fatalf("second response %s", second.RawJSON())
	}
	call := func(id, args string) any {
		return map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "w", "arguments": args}}
	}
	want := []any{
		map[string]any{"role": "user", "content": "weather?"},
		map[string]any{"role": "assistant", "content": "let me check", "tool_calls": []any{call("call_1", "{}")}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call("call_2", `{"again":true}`)}},
		map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "still sunny"},
	}
	if d := cmp.Diff(want, upstreamMessages(t, up)); d != "" {
		t.Errorf("upstream messages (-want +got):\n%s", d)
	}

	hits := up.hits.Load()
	rep := g.post(t, "/v1/responses", `{"model":"r","input":[{"type":"reasoning","id":"rs_1","summary":[]}]}`)
	if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != "input" {
		t.Fatalf("reasoning alone: %d %s", rep.status, rep.body)
	}
	if n := up.hits.Load(); n != hits {
		t.Fatalf("upstream asked %d times for reasoning alone", n-hits)
	}
}
