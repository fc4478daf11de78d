package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// accumulate feeds a Responses stream's events to openai-go's ResponseAccumulator, as a client
// that uses it reads them, and returns the response it reconstructs (its error for a stream that
// failed).
func accumulate(t *testing.T, evs []responses.ResponseStreamEventUnion) (*responses.Response, error) {
	t.Helper()
	var acc responses.ResponseAccumulator
	for _, ev := range evs {
		var u responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &u); err != nil {
			t.Fatalf("event %s: %v", ev.RawJSON(), err)
		}
		if err := acc.AddEvent(u); err != nil {
			var pe *responses.ResponseProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("accumulator refused %s: %v", ev.RawJSON(), err)
			}
		}
	}
	return acc.ReconstructedResponse()
}

// TestResponsesSDKJourney is a Responses client's way through the gateway with openai-go: a
// streamed answer with text and a tool call whose id, name and arguments come in pieces, read
// by the SDK's accumulator, then the call's output sent back with the answer's items (the
// conversation the client keeps, since previous_response_id is refused, naming it); an upstream
// that fails before its first byte (the next target serves the stream) and one that breaks off
// after it (error event, response.failed with the text so far); a client that leaves mid-stream
// (the upstream's request is cancelled, no goroutine left behind); a body of the wrong types (a
// 400 the SDK reads, naming the field).
func TestResponsesSDKJourney(t *testing.T) {
	ctx := context.Background()
	tools := []responses.ToolUnionParam{responses.ToolParamOfFunction("wx",
		map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}, false)}
	user := responses.ResponseInputItemParamOfMessage("weather in Paris?", responses.EasyInputMessageRoleUser)

	t.Run("tool call in pieces, then its output", func(t *testing.T) {
		g, up := oneTarget(t)
		up.set(streamHandler(
			`{"index":0,"delta":{"role":"assistant","content":"Let me "}}`,
			`{"index":0,"delta":{"content":"check."}}`,
			`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"wx","arguments":""}}]}}`,
			`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}}`,
			`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}`,
			`usage{"prompt_tokens":9,"completion_tokens":6,"total_tokens":15}`))
		params := responses.ResponseNewParams{Model: "r", Tools: tools,
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{user}}}
		evs, err := streamAll(t, g, params)
		if err != nil {
			t.Fatal(err)
		}
		checkEvents(t, evs)
		final := evs[len(evs)-1].Response
		if evs[len(evs)-1].Type != "response.completed" || len(final.Output) != 2 || final.OutputText() != "Let me check." ||
			final.Usage.InputTokens != 9 || final.Usage.OutputTokens != 6 {
			t.Fatalf("final %s", final.RawJSON())
		}
		call := final.Output[1].AsFunctionCall()
		if call.CallID != "call_9" || call.Name != "wx" || call.Arguments != `{"city":"Paris"}` || call.Status != "completed" {
			t.Fatalf("call %s", call.RawJSON())
		}
		acc, err := accumulate(t, evs)
		if err != nil {
			t.Fatal(err)
		}
		if acc.OutputText() != "Let me check." || len(acc.Output) != 2 || acc.Output[1].AsFunctionCall().Arguments != call.Arguments {
			t.Errorf("accumulated %s", acc.RawJSON())
		}

		// The next turn: the answer's items and the call's output, the conversation in input.
		up.set(streamHandler(`{"index":0,"delta":{"content":"Sunny."},"finish_reason":"stop"}`))
		out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"sky":"clear"}`)
		out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
		msg := final.Output[0].AsMessage().ToParam()
		fc := call.ToParam()
		params.Input.OfInputItemList = append(params.Input.OfInputItemList,
			responses.ResponseInputItemUnionParam{OfOutputMessage: &msg}, responses.ResponseInputItemUnionParam{OfFunctionCall: &fc}, out)
		evs, err = streamAll(t, g, params)
		if err != nil || len(evs) == 0 || evs[len(evs)-1].Response.OutputText() != "Sunny." {
			t.Fatalf("second turn: %v, %d events", err, len(evs))
		}
		want := []any{
			map[string]any{"role": "user", "content": "weather in Paris?"},
			map[string]any{"role": "assistant", "content": "Let me check.", "tool_calls": []any{map[string]any{"id": "call_9",
				"type": "function", "function": map[string]any{"name": "wx", "arguments": `{"city":"Paris"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_9", "content": `{"sky":"clear"}`},
		}
		if d := cmp.Diff(want, upstreamMessages(t, up)); d != "" {
			t.Errorf("second turn's messages (-want +got):\n%s", d)
		}

		// Chaining by id asks for a response the gateway never kept.
		before := up.hits.Load()
		params.PreviousResponseID = openai.String(final.ID)
		c := sdkClient(g, "unused")
		_, err = c.Responses.New(ctx, params)
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Param != "previous_response_id" || ae.Code != "unsupported_parameter" {
			t.Errorf("previous_response_id: %v", err)
		}
		if up.hits.Load() != before {
			t.Error("previous_response_id reached the upstream")
		}
	})

	t.Run("fails before its first byte, then after", func(t *testing.T) {
		bad, good := newFake(t, "bad"), newFake(t, "good")
		bad.set(errHandler(500, "boom", "engine died"))
		g := newGateway(t, target("bad", bad.url(), "private")+target("good", good.url(), "private")+
			"[routes.r]\ntargets = [\"bad\", \"good\"]\n", nil)
		c := sdkClient(g, "unused")
		params := responses.ResponseNewParams{Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
		var raw *http.Response
		st := c.Responses.NewStreaming(ctx, params, option.WithResponseInto(&raw))
		var evs []responses.ResponseStreamEventUnion
		for st.Next() {
			evs = append(evs, st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		checkEvents(t, evs)
		if last := evs[len(evs)-1]; last.Type != "response.completed" || last.Response.OutputText() != "hello from good" {
			t.Fatalf("last %s", last.RawJSON())
		}
		if h := raw.Header.Get("X-Hayula-Chain"); h != "bad→good (served by good)" {
			t.Errorf("chain %q", h)
		}

		good.set(func(w http.ResponseWriter, _ *http.Request) {
			resetConn(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+
				"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n")
		})
		evs, err := streamAll(t, g, params)
		if err != nil {
			t.Fatalf("Err() %v: the SDK sets it for no documented Responses event", err)
		}
		checkEvents(t, evs)
		n, errorAt := len(evs), slices.IndexFunc(evs, func(ev responses.ResponseStreamEventUnion) bool { return ev.Type == "error" })
		if errorAt < 0 || evs[errorAt].Code != "stream_interrupted" || evs[n-1].Type != "response.failed" {
			t.Fatalf("no error event, or the last is %s", evs[n-1].RawJSON())
		}
		if r := evs[n-1].Response; r.Status != "failed" || r.OutputText() != "half" || r.Output[0].AsMessage().Status != "incomplete" ||
			r.Error.Code != "server_error" {
			t.Errorf("failed response %s", r.RawJSON())
		}
		var pe *responses.ResponseProtocolError
		if _, err := accumulate(t, evs); !errors.As(err, &pe) {
			t.Errorf("accumulator: %v, want the error event's protocol error", err)
		}
	})

	t.Run("client leaves mid-stream", func(t *testing.T) {
		ignore := goleak.IgnoreCurrent()
		t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
		g, up := oneTarget(t)
		gone := make(chan struct{})
		up.set(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"one\"}}]}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			close(gone)
		})
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		c := sdkClient(g, "unused")
		st := c.Responses.NewStreaming(cctx, responses.ResponseNewParams{Model: "r",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
		for st.Next() {
			if st.Current().Type == "response.output_text.delta" {
				cancel()
			}
		}
		_ = st.Close()
		select {
		case <-gone:
		case <-time.After(10 * time.Second):
			t.Fatal("the upstream's request was not cancelled after the client left")
		}
	})

	t.Run("wrong types", func(t *testing.T) {
		g, up := oneTarget(t)
		c := sdkClient(g, "unused")
		params := responses.ResponseNewParams{Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
		for _, tc := range []struct {
			field string
			value any
			param string
		}{
			{"max_output_tokens", "64", "max_output_tokens"},
			{"temperature", "hot", "temperature"},
			{"input", 5, "input"},
			{"instructions", []any{"be brief"}, "instructions"},
			{"tools", map[string]any{"type": "function"}, "tools"},
			{"stream", "yes", "stream"},
			{"metadata", "x", "metadata"},
		} {
			_, err := c.Responses.New(ctx, params, option.WithJSONSet(tc.field, tc.value))
			var ae *openai.Error
			if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Param != tc.param || ae.Type != "invalid_request_error" ||
				ae.Code != "invalid_type" {
				t.Errorf("%s %v: %v, want 400 invalid_type naming %s", tc.field, tc.value, err, tc.param)
			}
		}
		if n := up.hits.Load(); n != 0 {
			t.Errorf("the upstream was asked %d times", n)
		}
	})
}
