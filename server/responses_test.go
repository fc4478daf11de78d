package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// oneTarget is a gateway with route r in front of the single fake upstream up.
func oneTarget(t *testing.T) (*gateway, *fake) {
	t.Helper()
	up := newFake(t, "up")
	return newGateway(t, target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil), up
}

// upstreamMessages are the chat messages the fake's last request carried.
func upstreamMessages(t *testing.T, f *fake) []any {
	t.Helper()
	m, _ := f.lastBody(t)["messages"].([]any)
	return m
}

func TestResponsesText(t *testing.T) {
	g, up := oneTarget(t)
	c := sdkClient(g, "unused")
	var raw *http.Response
	got, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model:           "r",
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("hi there")},
		MaxOutputTokens: openai.Int(64),
		Temperature:     openai.Float(0.5),
		Store:           openai.Bool(false),
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if got.OutputText() != "hello from up" || got.Status != "completed" || !strings.HasPrefix(got.ID, "resp_") ||
		got.Usage.InputTokens != 3 || got.Usage.OutputTokens != 3 || got.Usage.TotalTokens != 6 {
		t.Fatalf("response %s", got.RawJSON())
	}
	if h := raw.Header.Get("X-Hayula-Chain"); h != "up" {
		t.Errorf("x-hayula-chain %q", h)
	}
	body := up.lastBody(t)
	want := map[string]any{"model": "up", "messages": []any{map[string]any{"role": "user", "content": "hi there"}},
		"max_tokens": 64.0, "temperature": 0.5}
	if d := cmp.Diff(want, body); d != "" {
		t.Errorf("upstream body (-want +got):\n%s", d)
	}
}

func TestResponsesMessagesAndInstructions(t *testing.T) {
	g, up := oneTarget(t)
	c := sdkClient(g, "unused")
	got, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model:        "r",
		Instructions: openai.String("be brief"),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("answer in French", responses.EasyInputMessageRoleDeveloper),
			responses.ResponseInputItemParamOfMessage("hello", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("bonjour", responses.EasyInputMessageRoleAssistant),
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				{OfInputText: &responses.ResponseInputTextParam{Text: "what is this?"}},
				{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("data:image/png;base64,AAAA"),
					Detail: responses.ResponseInputImageDetailLow}},
			}, responses.EasyInputMessageRoleUser),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.OutputText() != "hello from up" {
		t.Fatalf("response %s", got.RawJSON())
	}
	want := []any{
		map[string]any{"role": "system", "content": "be brief\n\nanswer in French"},
		map[string]any{"role": "user", "content": "hello"},
		map[string]any{"role": "assistant", "content": "bonjour"},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "what is this?"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA", "detail": "low"}},
		}},
	}
	if d := cmp.Diff(want, upstreamMessages(t, up)); d != "" {
		t.Errorf("upstream messages (-want +got):\n%s", d)
	}
}

// toolHandler calls get_weather until the conversation has its result, then answers with text.
func toolHandler(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	w.Header().Set("Content-Type", "application/json")
	if req.Messages[len(req.Messages)-1].Role == "tool" {
		fmt.Fprint(w, `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"sunny"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`)
		return
	}
	fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`)
}

func TestResponsesFunctionToolRoundTrip(t *testing.T) {
	g, up := oneTarget(t)
	up.set(toolHandler)
	c := sdkClient(g, "unused")
	ctx := context.Background()
	params := responses.ResponseNewParams{
		Model: "r",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("weather in Paris?", responses.EasyInputMessageRoleUser)}},
		Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather",
			map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}, true)},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}},
	}
	first, err := c.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Output) != 1 || first.Output[0].Type != "function_call" {
		t.Fatalf("first response %s", first.RawJSON())
	}
	call := first.Output[0].AsFunctionCall()
	if call.CallID != "call_1" || call.Name != "get_weather" || call.Arguments != `{"city":"Paris"}` {
		t.Fatalf("function call %+v", call)
	}
	body := up.lastBody(t)
	wantTools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "strict": true,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}
	if d := cmp.Diff(wantTools, body["tools"]); d != "" {
		t.Errorf("upstream tools (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, body["tool_choice"]); d != "" {
		t.Errorf("upstream tool_choice (-want +got):\n%s", d)
	}

	params.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{}
	output := responses.ResponseInputItemParamOfFunctionCallOutput(`{"sky":"clear"}`)
	output.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	params.Input.OfInputItemList = append(params.Input.OfInputItemList,
		responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name), output)
	second, err := c.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if second.OutputText() != "sunny" {
		t.Fatalf("second response %s", second.RawJSON())
	}
	want := []any{
		map[string]any{"role": "user", "content": "weather in Paris?"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"sky":"clear"}`},
	}
	if d := cmp.Diff(want, upstreamMessages(t, up)); d != "" {
		t.Errorf("upstream messages (-want +got):\n%s", d)
	}
}

// collect reads a Responses stream to its end: the event types in order, the text of its deltas,
// and its last response (completed, incomplete or failed).
func collect(t *testing.T, st interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
}) (types []string, text string, last responses.Response) {
	t.Helper()
	seq := int64(-1)
	for st.Next() {
		ev := st.Current()
		if ev.SequenceNumber != seq+1 {
			t.Errorf("event %s has sequence_number %d after %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.completed", "response.incomplete", "response.failed":
			last = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return types, text, last
}

func TestResponsesStreamText(t *testing.T) {
	g, up := oneTarget(t)
	c := sdkClient(g, "unused")
	st := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	types, text, last := collect(t, st)
	if text != "hello from up" || last.OutputText() != text || last.Status != "completed" || last.Model != "up" {
		t.Fatalf("text %q, final %s", text, last.RawJSON())
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if d := cmp.Diff(want, types); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if so, _ := up.lastBody(t)["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("upstream not asked for usage: %v", up.lastBody(t))
	}
}

// streamHandler streams the chunks given, each a chat.completion.chunk's choices[0] (or, when it
// starts with "usage", the usage chunk), then [DONE].
func streamHandler(chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			if rest, ok := strings.CutPrefix(c, "usage"); ok {
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],\"usage\":%s}\n\n", rest)
			} else {
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[%s]}\n\n", c)
			}
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

func TestResponsesStreamToolCallAndUsage(t *testing.T) {
	g, up := oneTarget(t)
	up.set(streamHandler(
		`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_7","type":"function","function":{"name":"f","arguments":""}}]}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}`,
		`usage{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}`))
	c := sdkClient(g, "unused")
	st := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("call f")},
		Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("f", map[string]any{"type": "object"}, false)}})
	types, _, last := collect(t, st)
	want := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if d := cmp.Diff(want, types); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if len(last.Output) != 1 {
		t.Fatalf("final %s", last.RawJSON())
	}
	call := last.Output[0].AsFunctionCall()
	if call.CallID != "call_7" || call.Name != "f" || call.Arguments != `{"a":1}` || last.Usage.TotalTokens != 6 ||
		last.Usage.InputTokens != 4 || last.Usage.OutputTokens != 2 {
		t.Fatalf("final %s", last.RawJSON())
	}
}

func TestResponsesIncomplete(t *testing.T) {
	g, up := oneTarget(t)
	up.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"cut"},"finish_reason":"length"}]}`)
	})
	c := sdkClient(g, "unused")
	got, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}, MaxOutputTokens: openai.Int(1)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "incomplete" || got.IncompleteDetails.Reason != "max_output_tokens" || got.OutputText() != "cut" {
		t.Fatalf("response %s", got.RawJSON())
	}
}

func TestResponsesStreamBrokenAfterStart(t *testing.T) {
	g, up := oneTarget(t)
	up.set(func(w http.ResponseWriter, _ *http.Request) {
		resetConn(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+
			"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n")
	})
	c := sdkClient(g, "unused")
	st := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	types, text, last := collect(t, st)
	if text != "par" || len(types) < 2 || types[len(types)-1] != "response.failed" || !containsStr(types, "error") ||
		last.Status != "failed" || last.Error.Message == "" || last.OutputText() != "par" {
		t.Fatalf("events %v, final %s", types, last.RawJSON())
	}
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestResponsesFallback(t *testing.T) {
	bad, good := newFake(t, "bad"), newFake(t, "good")
	bad.set(errHandler(503, "overloaded", "busy"))
	g := newGateway(t, target("bad", bad.url(), "private")+target("good", good.url(), "private")+
		"[routes.r]\ntargets = [\"bad\", \"good\"]\n", nil)
	c := sdkClient(g, "unused")
	params := responses.ResponseNewParams{Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
	t.Run("whole", func(t *testing.T) {
		var raw *http.Response
		got, err := c.Responses.New(context.Background(), params, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if got.OutputText() != "hello from good" || raw.Header.Get("X-Hayula-Chain") != "bad→good (served by good)" {
			t.Fatalf("response %s, chain %q", got.RawJSON(), raw.Header.Get("X-Hayula-Chain"))
		}
	})
	t.Run("stream", func(t *testing.T) {
		_, text, last := collect(t, c.Responses.NewStreaming(context.Background(), params))
		if text != "hello from good" || last.Status != "completed" {
			t.Fatalf("text %q, final %s", text, last.RawJSON())
		}
	})
	t.Run("all fail", func(t *testing.T) {
		good.set(errHandler(503, "overloaded", "busy"))
		defer good.set(okHandler("good"))
		_, err := c.Responses.New(context.Background(), params)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
			t.Fatalf("error %v", err)
		}
	})
}

func TestResponsesRefusals(t *testing.T) {
	g, up := oneTarget(t)
	tests := []struct {
		name, body, param string
	}{
		{"previous_response_id", `{"model":"r","input":"hi","previous_response_id":"resp_1"}`, "previous_response_id"},
		{"conversation", `{"model":"r","input":"hi","conversation":"conv_1"}`, "conversation"},
		{"background", `{"model":"r","input":"hi","background":true}`, "background"},
		{"no input", `{"model":"r"}`, "input"},
		{"hosted tool", `{"model":"r","input":"hi","tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{"item reference", `{"model":"r","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].type"},
		{"file image", `{"model":"r","input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]}`, "input[0].content[0].image_url"},
		{"unknown model", `{"model":"nope","input":"hi"}`, "model"},
		{"tool_choice names no tool", `{"model":"r","input":"hi","tools":[{"type":"function","name":"f","parameters":{}}],` +
			`"tool_choice":{"type":"function","name":"g"}}`, "tool_choice"},
		{"tool_choice names a tool, no tools", `{"model":"r","input":"hi","tool_choice":{"type":"function","name":"g"}}`, "tool_choice"},
		{"tool_choice required, no tools", `{"model":"r","input":"hi","tool_choice":"required"}`, "tool_choice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", tc.body)
			if rep.status/100 != 4 || rep.errorField(t, "param") != tc.param {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("upstream asked %d times", n)
	}

	c := sdkClient(g, "unused")
	_, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		PreviousResponseID: openai.String("resp_123")})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "previous_response_id" ||
		!strings.Contains(apiErr.Message, "keeps no responses") {
		t.Fatalf("error %v", err)
	}
}

func TestResponsesTextFormatAndPassThrough(t *testing.T) {
	g, up := oneTarget(t)
	rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi","store":true,"metadata":{"k":"v"},"user":"u1",
		"text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object"},"strict":true}}}`)
	if rep.status != 200 {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	body := up.lastBody(t)
	want := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "s", "schema": map[string]any{"type": "object"}, "strict": true}}
	if d := cmp.Diff(want, body["response_format"]); d != "" {
		t.Errorf("response_format (-want +got):\n%s", d)
	}
	if body["user"] != "u1" || body["metadata"] != nil || body["store"] != nil || body["text"] != nil {
		t.Errorf("upstream body %v", body)
	}
	got := rep.json(t)
	if got["store"] != false || cmp.Diff(map[string]any{"k": "v"}, got["metadata"]) != "" {
		t.Errorf("response %s", rep.body)
	}
}

func TestResponsesMetrics(t *testing.T) {
	g, _ := oneTarget(t)
	if rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi"}`); rep.status != 200 {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	if rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi","previous_response_id":"x"}`); rep.status != 400 {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	_, lines := scrape(t, g)
	for _, l := range []string{
		`hayula_requests_total{endpoint="responses",route="r",code="200"} 1`,
		`hayula_requests_total{endpoint="responses",route="",code="400"} 1`,
		`hayula_tokens_total{route="r",target="up",kind="prompt"} 3`,
	} {
		if !lines[l] {
			t.Errorf("scrape lacks %s", l)
		}
	}
	for l := range lines {
		if strings.HasPrefix(l, `hayula_requests_total{endpoint="chat"`) {
			t.Errorf("counted as chat: %s", l)
		}
	}
}

// TestResponsesKeyBeforeBody: a Responses request is admitted as a chat request is, the key
// before the body is read, so a request without a key learns nothing about its body.
func TestResponsesKeyBeforeBody(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, "[[keys]]\nname = \"k\"\nsha256 = \""+sha256hex("hk-1")+"\"\n\n"+
		target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	if rep := g.post(t, "/v1/responses", `{"model":"r","previous_response_id":"x"}`); rep.status != 401 {
		t.Fatalf("no key: %d %s", rep.status, rep.body)
	}
	rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi"}`, "Authorization", "Bearer hk-1")
	if rep.status != 200 || rep.json(t)["status"] != "completed" {
		t.Fatalf("with key: %d %s", rep.status, rep.body)
	}
}
