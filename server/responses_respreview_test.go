package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// TestResponsesReasoningInputSentBack: a reasoning item a client sends back in input (the gateway's
// own, round-tripped by the SDK with ToParam, or OpenAI's with a summary and encrypted_content)
// goes on as the reasoning_content of the assistant message the turn's next items build: the
// gateway's own with its reasoning_text, where it was read and dropped and a model in a tool loop
// lost the thinking behind its calls; OpenAI's, whose summary is no model's own reasoning, with
// nothing. The request is served,
// and the messages and calls around it keep their order: a call after the reasoning joins the
// assistant message before it, as it does without the reasoning. Input of reasoning alone has
// nothing to send and is refused, naming input.
func TestResponsesReasoningInputSentBack(t *testing.T) {
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
		map[string]any{"role": "assistant", "content": "let me check", "reasoning_content": "need the weather",
			"tool_calls": []any{call("call_1", "{}")}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
		// OpenAI's item's summary is not sent on (TestResponsesReasoningInputRules).
		map[string]any{"role": "assistant", "content": nil,
			"tool_calls": []any{call("call_2", `{"again":true}`)}},
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

// TestResponsesMessageWithoutContent: a message item whose content is null or an empty array goes
// on as an empty text, as one without content did, where the bridge sent a user message with
// "content": null, which chat's API refuses and a chat template renders as "None".
func TestResponsesMessageWithoutContent(t *testing.T) {
	g, up := oneTarget(t)
	for _, role := range []string{"user", "assistant", "developer"} {
		for _, content := range []string{`,"content":null`, `,"content":[]`, ``} {
			in := `[{"role":"` + role + `"` + content + `},{"role":"user","content":"hi"}]`
			t.Run(in, func(t *testing.T) {
				rep := g.post(t, "/v1/responses", `{"model":"r","input":`+in+`}`)
				if rep.status != http.StatusOK {
					t.Fatalf("%d %s", rep.status, rep.body)
				}
				msgs := upstreamMessages(t, up)
				if len(msgs) != 2 {
					t.Fatalf("upstream messages %v", msgs)
				}
				if c, ok := msgs[0].(map[string]any)["content"].(string); !ok || c != "" {
					t.Errorf("upstream message %v, want an empty text", msgs[0])
				}
			})
		}
	}
}

// TestResponsesItemFieldErrors: an input item or content part whose field has the wrong JSON type
// is refused naming that field, where the 400 named the whole item ("expected an input item
// object") or the whole content; a function_call without its name or arguments is refused
// naming it, as OpenAI's API refuses it, where the bridge sent the model a call of no function.
func TestResponsesItemFieldErrors(t *testing.T) {
	g, up := oneTarget(t)
	const user = `{"role":"user","content":"hi"},`
	tests := []struct{ name, input, param, code string }{
		{"object arguments", user + `{"type":"function_call","call_id":"c1","name":"f","arguments":{"a":1}}`, "input[1].arguments", "invalid_type"},
		{"number role", `{"role":1,"content":"hi"}`, "input[0].role", "invalid_type"},
		{"number call_id", user + `{"type":"function_call","call_id":7,"name":"f","arguments":"{}"}`, "input[1].call_id", "invalid_type"},
		{"chat's image_url object", user + `{"role":"user","content":[{"type":"input_text","text":"see"},{"type":"input_image","image_url":{"url":"https://x/y.png"}}]}`,
			"input[1].content[1].image_url", "invalid_type"},
		{"number text", `{"role":"user","content":[{"type":"input_text","text":5}]}`, "input[0].content[0].text", "invalid_type"},
		{"output part text", user + `{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":true}]}`, "input[2].output[0].text", "invalid_type"},
		{"call without name", user + `{"type":"function_call","call_id":"c1","arguments":"{}"}`, "input[1].name", "missing_required_parameter"},
		{"call with a null name", user + `{"type":"function_call","call_id":"c1","name":null,"arguments":"{}"}`, "input[1].name", "missing_required_parameter"},
		{"call without arguments", user + `{"type":"function_call","call_id":"c1","name":"f"}`, "input[1].arguments", "missing_required_parameter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", `{"model":"r","input":[`+tc.input+`]}`)
			if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != tc.param || rep.errorField(t, "code") != tc.code {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("upstream asked %d times", n)
	}
	// Empty arguments, sent as such, are the client's: they go on.
	rep := g.post(t, "/v1/responses", `{"model":"r","input":[`+user+`{"type":"function_call","call_id":"c1","name":"f","arguments":""},`+
		`{"type":"function_call_output","call_id":"c1","output":"ok"}]}`)
	if rep.status != http.StatusOK {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
}

// TestResponsesCallWithoutOutput: a function_call with no function_call_output after it in input is
// refused naming its call_id, as OpenAI's API refuses it ("No tool output found for function
// call"), and as the bridge refuses an output without its call: sent on, it made a chat
// conversation whose assistant tool_calls no tool message answers, which chat's API refuses and
// a local model answers as if the tool had returned nothing.
func TestResponsesCallWithoutOutput(t *testing.T) {
	g, up := oneTarget(t)
	const user = `{"role":"user","content":"hi"},`
	call := func(id string) string {
		return `{"type":"function_call","call_id":"` + id + `","name":"f","arguments":"{}"}`
	}
	output := func(id string) string {
		return `{"type":"function_call_output","call_id":"` + id + `","output":"42"}`
	}
	tests := []struct{ name, input, param string }{
		{"last item", user + call("c1"), "input[1].call_id"},
		{"before a user message", user + call("c1") + `,{"role":"user","content":"go on"}`, "input[1].call_id"},
		{"one of two answered", user + call("c1") + `,` + call("c2") + `,` + output("c1"), "input[2].call_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", `{"model":"r","input":[`+tc.input+`]}`)
			if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != tc.param ||
				rep.errorField(t, "code") != "invalid_value" {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("upstream asked %d times", n)
	}
	rep := g.post(t, "/v1/responses", `{"model":"r","input":[`+user+call("c1")+`,`+call("c2")+`,`+output("c2")+`,`+output("c1")+`]}`)
	if rep.status != http.StatusOK {
		t.Fatalf("both answered: %d %s", rep.status, rep.body)
	}
}

// TestResponsesReasoningEffort: reasoning.effort goes on as chat's reasoning_effort, which an
// openai target reads as it is and the ollama adapter maps to think, where the bridge dropped
// "reasoning" whole and a Responses client could neither turn a model's thinking off nor set
// gpt-oss's level, as a chat client can. reasoning's other members (summary) have no chat
// counterpart and are not sent; a reasoning or effort of the wrong JSON type is a 400 naming it.
func TestResponsesReasoningEffort(t *testing.T) {
	g, up := oneTarget(t)
	c := sdkClient(g, "unused")
	_, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "r", Input: inputString("hi"),
		Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortNone, Summary: shared.ReasoningSummaryAuto}})
	if err != nil {
		t.Fatal(err)
	}
	body := up.lastBody(t)
	if body["reasoning_effort"] != "none" || body["reasoning"] != nil {
		t.Errorf("upstream body %v", body)
	}
	for _, reasoning := range []string{`{"summary":"auto"}`, `{"effort":null}`, `null`} {
		rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi","reasoning":`+reasoning+`}`)
		if rep.status != http.StatusOK {
			t.Fatalf("%s: %d %s", reasoning, rep.status, rep.body)
		}
		if body := up.lastBody(t); body["reasoning_effort"] != nil || body["reasoning"] != nil {
			t.Errorf("%s: upstream body %v", reasoning, body)
		}
	}
	for reasoning, param := range map[string]string{`"low"`: "reasoning", `{"effort":3}`: "reasoning.effort"} {
		rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi","reasoning":`+reasoning+`}`)
		if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != param || rep.errorField(t, "code") != "invalid_type" {
			t.Errorf("%s: %d %s", reasoning, rep.status, rep.body)
		}
	}
}

// TestResponsesFoldedSpellingRefused: on /v1/responses, as on chat, a member whose name differs
// from a field the gateway reads only by case is refused 400 unknown_parameter naming it as
// sent. The bridge read input items, parts and tools with encoding/json, which matches names
// case-insensitively and lets a later "Content" replace "content", and passed a case variant of
// a Responses-only field ("Instructions") on to the upstream unread, the instructions lost.
func TestResponsesFoldedSpellingRefused(t *testing.T) {
	g, up := oneTarget(t)
	const call = `{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`
	tests := []struct{ name, body, param string }{
		{"Instructions", `{"model":"r","Instructions":"be brief","input":"hi"}`, "Instructions"},
		{"Input beside input", `{"model":"r","Input":"a","input":"b"}`, "Input"},
		{"Max_Output_Tokens", `{"model":"r","input":"hi","Max_Output_Tokens":5}`, "Max_Output_Tokens"},
		{"Previous_Response_Id", `{"model":"r","input":"hi","Previous_Response_Id":"resp_1"}`, "Previous_Response_Id"},
		{"an item's Content", `{"model":"r","input":[{"role":"user","content":"a","Content":"b"}]}`, "input[0].Content"},
		{"an item's Role", `{"model":"r","input":[{"Role":"user","content":"a"}]}`, "input[0].Role"},
		{"a call's Call_Id", `{"model":"r","input":[{"role":"user","content":"a"},{"type":"function_call","Call_Id":"c1","call_id":"c1","name":"f","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"c1","output":"x"}]}`, "input[1].Call_Id"},
		{"a part's Type", `{"model":"r","input":[{"role":"user","content":[{"type":"input_text","Type":"input_image","text":"a"}]}]}`, "input[0].content[0].Type"},
		{"an output part's Text", `{"model":"r","input":[{"role":"user","content":"a"},` + call +
			`,{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","Text":"x"}]}]}`, "input[2].output[0].Text"},
		{"a tool's Name", `{"model":"r","input":"hi","tools":[{"type":"function","Name":"f"}]}`, "tools[0].Name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", tc.body)
			if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != tc.param ||
				rep.errorField(t, "code") != "unknown_parameter" {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("upstream asked %d times", n)
	}
	// A case variant of model is read and stripped, as on chat; the item's own id and status,
	// which the bridge does not read, are the client's.
	rep := g.post(t, "/v1/responses", `{"Model":"r","model":"r","input":[{"type":"message","role":"user","content":"a","ID":"msg_1","Status":"completed"}]}`)
	if rep.status != http.StatusOK {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
}

// TestResponsesLogprobsRefused: a request for the answer's log probabilities (top_logprobs above 0,
// or include naming message.output_text.logprobs) is refused 400 naming the field, where the
// bridge dropped both and answered with every output_text's logprobs empty, as if the model had
// none to give. top_logprobs 0 or null, and the other include values (reasoning.encrypted_content,
// which Codex sends on every request), are served.
func TestResponsesLogprobsRefused(t *testing.T) {
	g, up := oneTarget(t)
	for body, param := range map[string]string{
		`{"model":"r","input":"hi","top_logprobs":3}`:                                                         "top_logprobs",
		`{"model":"r","input":"hi","include":["message.output_text.logprobs"]}`:                               "include[0]",
		`{"model":"r","input":"hi","include":["reasoning.encrypted_content","message.output_text.logprobs"]}`: "include[1]",
	} {
		rep := g.post(t, "/v1/responses", body)
		if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != param || rep.errorField(t, "code") != "unsupported_parameter" {
			t.Errorf("%s: %d %s", body, rep.status, rep.body)
		}
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("upstream asked %d times", n)
	}
	for _, body := range []string{
		`{"model":"r","input":"hi","top_logprobs":0}`,
		`{"model":"r","input":"hi","top_logprobs":null,"include":null}`,
		`{"model":"r","input":"hi","include":["reasoning.encrypted_content"]}`,
	} {
		if rep := g.post(t, "/v1/responses", body); rep.status != http.StatusOK {
			t.Errorf("%s: %d %s", body, rep.status, rep.body)
		}
	}
}

// TestResponsesStreamReasoningResumes: reasoning a stream sends after its answer began (after text,
// or after a call) takes a reasoning item of its own at the next output_index, where the bridge
// dropped what came after text once a reasoning item had closed, and the streamed answer lost
// reasoning the whole answer has. Every event keeps OpenAI's order (checkEvents): the message
// closes before the reasoning after it is added, and the text after that is a message of its own.
func TestResponsesStreamReasoningResumes(t *testing.T) {
	g, up := oneTarget(t)
	up.set(streamHandler(
		`{"index":0,"delta":{"role":"assistant","reasoning_content":"first "}}`,
		`{"index":0,"delta":{"reasoning_content":"thought"}}`,
		`{"index":0,"delta":{"content":"a"}}`,
		`{"index":0,"delta":{"reasoning_content":"second thought"}}`,
		`{"index":0,"delta":{"content":"b"}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}}`,
		`{"index":0,"delta":{"reasoning_content":"third"},"finish_reason":"tool_calls"}`))
	evs, err := streamAll(t, g, responses.ResponseNewParams{Model: "r", Input: inputString("go")})
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, evs)
	last := evs[len(evs)-1].Response
	var got []string
	for _, o := range last.Output {
		switch o.Type {
		case "reasoning":
			got = append(got, "reasoning: "+o.Content[0].Text)
		case "message":
			got = append(got, "message: "+o.Content[0].Text)
		default:
			got = append(got, o.Type)
		}
	}
	want := []string{"reasoning: first thought", "message: a", "reasoning: second thought", "message: b", "function_call",
		"reasoning: third"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("output (-want +got):\n%s", d)
	}
}
