package server_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// checkEvents holds a Responses event sequence to what the SDK's types and OpenAI's order say:
// every event decodes into its SDK type with no field left over, every item's events name one
// output_index, come after its output_item.added and before its output_item.done, and the final
// response carries, at each output_index, the item output_item.done gave; and each item is
// closed before the next is added (itemsOneAtATime), which it returns.
func checkEvents(t *testing.T, evs []responses.ResponseStreamEventUnion) []streamedItem {
	t.Helper()
	items := itemsOneAtATime(t, evs)
	at := map[string]int64{}  // item id → output_index
	open := map[string]bool{} // added, not yet done
	doneItems := map[int64]string{}
	var final *responses.Response
	for i, ev := range evs {
		if ev.SequenceNumber != int64(i) {
			t.Errorf("event %d (%s) has sequence_number %d", i, ev.Type, ev.SequenceNumber)
		}
		if x := extraFields(ev); x != "" {
			t.Errorf("event %s: fields the SDK type does not have: %s (%s)", ev.Type, x, ev.RawJSON())
		}
		switch ev.Type {
		case "response.output_item.added":
			if _, ok := at[ev.Item.ID]; ok {
				t.Errorf("item %s added twice", ev.Item.ID)
			}
			at[ev.Item.ID], open[ev.Item.ID] = ev.OutputIndex, true
		case "response.output_item.done":
			if !open[ev.Item.ID] || at[ev.Item.ID] != ev.OutputIndex {
				t.Errorf("done for item %s at %d, not open there: %s", ev.Item.ID, ev.OutputIndex, ev.RawJSON())
			}
			open[ev.Item.ID] = false
			doneItems[ev.OutputIndex] = ev.Item.RawJSON()
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			final = &r
		case "response.created", "response.in_progress", "error":
		default:
			if !open[ev.ItemID] || at[ev.ItemID] != ev.OutputIndex {
				t.Errorf("%s for item %s at %d, not open there", ev.Type, ev.ItemID, ev.OutputIndex)
			}
		}
	}
	if final == nil {
		t.Fatalf("no final response")
	}
	for id, o := range open {
		if o {
			t.Errorf("item %s never done", id)
		}
	}
	if len(final.Output) != len(at) {
		t.Errorf("final output has %d items, %d were streamed", len(final.Output), len(at))
	}
	for i, it := range final.Output {
		if doneItems[int64(i)] != it.RawJSON() {
			t.Errorf("final output[%d] %s, output_item.done said %s", i, it.RawJSON(), doneItems[int64(i)])
		}
	}
	return items
}

func extraFields(ev responses.ResponseStreamEventUnion) string {
	v := ev.AsAny()
	if v == nil {
		return "unknown type " + ev.Type
	}
	// The event types that carry the fields the bridge builds itself.
	var extra []string
	switch e := v.(type) {
	case responses.ResponseOutputItemAddedEvent:
		extra = mapKeys(e.JSON.ExtraFields)
	case responses.ResponseFunctionCallArgumentsDeltaEvent:
		extra = mapKeys(e.JSON.ExtraFields)
	case responses.ResponseFunctionCallArgumentsDoneEvent:
		// name is in OpenAI's current schema, not yet in this SDK's type.
		extra = slices.DeleteFunc(mapKeys(e.JSON.ExtraFields), func(k string) bool { return k == "name" })
	case responses.ResponseReasoningTextDeltaEvent:
		extra = mapKeys(e.JSON.ExtraFields)
	case responses.ResponseErrorEvent:
		extra = mapKeys(e.JSON.ExtraFields)
	case responses.ResponseTextDeltaEvent:
		extra = mapKeys(e.JSON.ExtraFields)
	}
	return strings.Join(extra, ",")
}

// mapKeys is m's keys, in no order.
func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func streamAll(t *testing.T, g *gateway, p responses.ResponseNewParams) ([]responses.ResponseStreamEventUnion, error) {
	t.Helper()
	c := sdkClient(g, "unused")
	st := c.Responses.NewStreaming(context.Background(), p)
	var evs []responses.ResponseStreamEventUnion
	for st.Next() {
		evs = append(evs, st.Current())
	}
	return evs, st.Err()
}

// TestResponsesStreamParallelCallsInPieces: reasoning, then text, then two calls whose ids, names
// and arguments come in interleaved fragments, then usage with reasoning tokens.
func TestResponsesStreamParallelCallsInPieces(t *testing.T) {
	g, up := oneTarget(t)
	up.set(streamHandler(
		`{"index":0,"delta":{"role":"assistant","reasoning_content":"let me "}}`,
		`{"index":0,"delta":{"reasoning_content":"think"}}`,
		`{"index":0,"delta":{"content":"Checking."}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"wx","arguments":""}}]}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"tz","arguments":"{\"z"}}]}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"P\"}"}}]}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\":1}"}}]},"finish_reason":"tool_calls"}`,
		`usage{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":4}}`))
	evs, err := streamAll(t, g, responses.ResponseNewParams{Model: "r",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("go")}})
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, evs)
	last := evs[len(evs)-1]
	if last.Type != "response.completed" {
		t.Fatalf("last %s", last.RawJSON())
	}
	r := last.Response
	u := r.Usage
	if u.InputTokens != 10 || u.OutputTokens != 7 || u.TotalTokens != 17 || u.InputTokensDetails.CachedTokens != 3 ||
		u.OutputTokensDetails.ReasoningTokens != 4 {
		t.Errorf("usage %s", u.RawJSON())
	}
	if len(r.Output) != 4 || r.Output[0].Type != "reasoning" || r.Output[1].Type != "message" ||
		r.Output[2].AsFunctionCall().Arguments != `{"city":"P"}` || r.Output[2].AsFunctionCall().CallID != "call_a" ||
		r.Output[3].AsFunctionCall().Arguments != `{"z":1}` || r.Output[3].AsFunctionCall().Name != "tz" {
		t.Errorf("output %s", r.RawJSON())
	}
	if r.OutputText() != "Checking." || r.Output[0].Content[0].Text != "let me think" {
		t.Errorf("output %s", r.RawJSON())
	}
}

// TestResponsesStreamBreaksInCall: a stream that breaks while a call's arguments are coming ends
// with error and response.failed, its call closed incomplete.
func TestResponsesStreamBreaksInCall(t *testing.T) {
	g, up := oneTarget(t)
	up.set(func(w http.ResponseWriter, _ *http.Request) {
		resetConn(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+
			`data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"wx","arguments":"{\"c"}}]}}]}`+"\n\n")
	})
	evs, err := streamAll(t, g, responses.ResponseNewParams{Model: "r",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("go")}})
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, evs)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	last := evs[len(evs)-1]
	if last.Type != "response.failed" || !containsStr(types, "error") || last.Response.Status != "failed" ||
		last.Response.Output[0].Status != "incomplete" {
		t.Fatalf("events %v, last %s", types, last.RawJSON())
	}
}

// TestResponsesUpstreamErrorStatus: an upstream 400 or 429 reaches the SDK as *openai.Error with
// its status, whole and streamed.
func TestResponsesUpstreamErrorStatus(t *testing.T) {
	for _, status := range []int{400, 429} {
		for _, stream := range []bool{false, true} {
			g, up := oneTarget(t)
			up.set(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = w.Write([]byte(`{"error":{"message":"nope","type":"invalid_request_error","code":"bad"}}`))
			})
			p := responses.ResponseNewParams{Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("go")}}
			var err error
			if stream {
				_, err = streamAll(t, g, p)
			} else {
				c := sdkClient(g, "unused")
				_, err = c.Responses.New(context.Background(), p)
			}
			var oe *openai.Error
			if !errors.As(err, &oe) || oe.StatusCode != status {
				t.Errorf("status %d stream %v: err %v", status, stream, err)
			}
		}
	}
}

// TestResponsesStreamCleanEOF: an upstream stream that ends without [DONE] still ends the
// Responses stream with a final event.
func TestResponsesStreamCleanEOF(t *testing.T) {
	g, up := oneTarget(t)
	up.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(`data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}` + "\n\n"))
	})
	evs, err := streamAll(t, g, responses.ResponseNewParams{Model: "r",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("go")}})
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, evs)
}

// TestResponsesRequestMapping: instructions come before the input's developer message, in one
// system message; max_output_tokens, text.format and a named tool_choice take chat's shapes.
func TestResponsesRequestMapping(t *testing.T) {
	g, up := oneTarget(t)
	c := sdkClient(g, "unused")
	_, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "r",
		Instructions:    openai.String("be brief"),
		MaxOutputTokens: openai.Int(33),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("dev says", responses.EasyInputMessageRoleDeveloper),
			responses.ResponseInputItemParamOfMessage("q", responses.EasyInputMessageRoleUser),
		}},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigParamOfJSONSchema("out",
			map[string]any{"type": "object"})},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "f"}},
		Tools:      []responses.ToolUnionParam{responses.ToolParamOfFunction("f", map[string]any{"type": "object"}, true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "up", "max_tokens": 33.0,
		"messages": []any{map[string]any{"role": "system", "content": "be brief\n\ndev says"},
			map[string]any{"role": "user", "content": "q"}},
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "out",
			"schema": map[string]any{"type": "object"}}},
		"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "f"}},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "f",
			"parameters": map[string]any{"type": "object"}, "strict": true}}}}
	if d := cmp.Diff(want, up.lastBody(t)); d != "" {
		t.Errorf("upstream body (-want +got):\n%s", d)
	}
}

func sseBody(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(body))
	}
}

const chunkHi = `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\n\n"

// TestResponsesStreamOddEvents: an upstream's error event, a payload that is not JSON, an empty
// data line, a comment and an event of another name each leave a well-formed event sequence.
func TestResponsesStreamOddEvents(t *testing.T) {
	for name, body := range map[string]string{
		"upstream error event": chunkHi + `data: {"error":{"message":"oom","code":500}}` + "\n\n" + "data: [DONE]\n\n",
		"not json":             chunkHi + "data: ping\n\n" + chunkHi + "data: [DONE]\n\n",
		"empty data":           chunkHi + "data: \n\n" + chunkHi + "data: [DONE]\n\n",
		"comment":              chunkHi + ": keepalive\n\n" + chunkHi + "data: [DONE]\n\n",
		"event line":           chunkHi + "event: ping\ndata: {}\n\n" + chunkHi + "data: [DONE]\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			g, up := oneTarget(t)
			up.set(sseBody(body))
			evs, err := streamAll(t, g, responses.ResponseNewParams{Model: "r",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("go")}})
			if err != nil {
				t.Fatal(err)
			}
			checkEvents(t, evs)
			var types []string
			for _, e := range evs {
				types = append(types, e.Type)
			}
			t.Logf("%v final %s", types, evs[len(evs)-1].Response.Status)
		})
	}
}
