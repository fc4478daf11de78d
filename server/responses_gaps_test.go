package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// wholeHandler answers one chat completion whose choice is choice (its message and finish_reason).
func wholeHandler(choice string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[%s],`+
			`"usage":{"prompt_tokens":4,"completion_tokens":5,"total_tokens":9}}`, choice)
	}
}

func inputString(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
}

// TestResponsesAssistantContentParts: an assistant message whose content is an array of parts is
// read as its text, both ways. An upstream that answers so (Mistral's API; its Magistral models put
// their thinking in a "thinking" part) failed the whole answer 502 ("cannot unmarshal array into
// ... content of type string") and streamed, had every such chunk dropped, the answer empty. The
// SDK's own round trip, a previous output sent back in input as output_text parts, with the
// user's input_text parts beside it, is held here too.
func TestResponsesAssistantContentParts(t *testing.T) {
	const thinking = `{"type":"thinking","thinking":[{"type":"text","text":"let me "},{"type":"text","text":"think"}]}`
	t.Run("whole", func(t *testing.T) {
		g, up := oneTarget(t)
		up.set(wholeHandler(`{"index":0,"message":{"role":"assistant","content":[` + thinking +
			`,{"type":"text","text":"hello "},{"type":"text","text":"world"}]},"finish_reason":"stop"}`))
		c := sdkClient(g, "unused")
		r, err := c.Responses.New(context.Background(),
			responses.ResponseNewParams{Model: "r", Input: inputString("go")})
		if err != nil {
			t.Fatal(err)
		}
		if r.OutputText() != "hello world" || len(r.Output) != 2 || r.Output[0].Type != "reasoning" ||
			r.Output[0].Content[0].Text != "let me think" {
			t.Errorf("output %s", r.RawJSON())
		}
	})
	t.Run("streamed", func(t *testing.T) {
		g, up := oneTarget(t)
		up.set(streamHandler(
			`{"index":0,"delta":{"role":"assistant","content":[`+thinking+`]}}`,
			`{"index":0,"delta":{"content":[{"type":"text","text":"hello "}]}}`,
			`{"index":0,"delta":{"content":"world"},"finish_reason":"stop"}`))
		evs, err := streamAll(t, g, responses.ResponseNewParams{Model: "r", Input: inputString("go")})
		if err != nil {
			t.Fatal(err)
		}
		checkEvents(t, evs)
		r := evs[len(evs)-1].Response
		if r.OutputText() != "hello world" || len(r.Output) != 2 || r.Output[0].Content[0].Text != "let me think" {
			t.Errorf("output %s", r.RawJSON())
		}
	})
	t.Run("sent back in input", func(t *testing.T) {
		g, up := oneTarget(t)
		c := sdkClient(g, "unused")
		first, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "r", Input: inputString("hi")})
		if err != nil {
			t.Fatal(err)
		}
		prev := first.Output[0].AsMessage().ToParam()
		in := responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				responses.ResponseInputContentParamOfInputText("hi"),
				responses.ResponseInputContentParamOfInputText(" there"),
			}, responses.EasyInputMessageRoleUser),
			{OfOutputMessage: &prev},
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				responses.ResponseInputContentParamOfInputText("be brief"),
			}, responses.EasyInputMessageRoleDeveloper),
			responses.ResponseInputItemParamOfMessage("again", responses.EasyInputMessageRoleUser),
		}
		if _, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "r",
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: in}}); err != nil {
			t.Fatal(err)
		}
		want := `[map[content:[map[text:hi type:text] map[text: there type:text]] role:user] ` +
			`map[content:hello from up role:assistant] map[content:be brief role:system] map[content:again role:user]]`
		if got := fmt.Sprint(upstreamMessages(t, up)); got != want {
			t.Errorf("upstream messages\n got %s\nwant %s", got, want)
		}
	})
}

// TestResponsesIncompleteItems: a response cut short (finish_reason length, or content_filter)
// is incomplete, and so is the item the model was producing when it stopped, whole and streamed
// (its output_item.done, and the response.incomplete that ends the stream), as OpenAI marks it;
// the items it had finished before say completed. An answer cut before its text began has its
// reasoning and the empty message after it incomplete. They all said completed.
func TestResponsesIncompleteItems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		whole  string   // the chat completion's choice
		chunks []string // the same answer streamed
		want   []string // each output item's type and status
		reason string
	}{
		{
			name:   "text cut",
			whole:  `{"index":0,"message":{"role":"assistant","reasoning_content":"hm","content":"Once upon"},"finish_reason":"length"}`,
			chunks: []string{`{"index":0,"delta":{"reasoning_content":"hm"}}`, `{"index":0,"delta":{"content":"Once upon"},"finish_reason":"length"}`},
			want:   []string{"reasoning completed", "message incomplete"},
			reason: "max_output_tokens",
		},
		{
			name:   "thinking cut",
			whole:  `{"index":0,"message":{"role":"assistant","reasoning_content":"hm, so"},"finish_reason":"length"}`,
			chunks: []string{`{"index":0,"delta":{"reasoning_content":"hm, so"},"finish_reason":"length"}`},
			want:   []string{"reasoning incomplete", "message incomplete"},
			reason: "max_output_tokens",
		},
		{
			name: "second call cut",
			whole: `{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
				`{"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}},` +
				`{"id":"call_b","type":"function","function":{"name":"g","arguments":"{\"x"}}]},"finish_reason":"length"}`,
			chunks: []string{
				`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]}}`,
				`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":"{\"x"}}]},"finish_reason":"length"}`,
			},
			want:   []string{"function_call completed", "function_call incomplete"},
			reason: "max_output_tokens",
		},
		{
			name:   "filtered",
			whole:  `{"index":0,"message":{"role":"assistant","content":"Well"},"finish_reason":"content_filter"}`,
			chunks: []string{`{"index":0,"delta":{"content":"Well"},"finish_reason":"content_filter"}`},
			want:   []string{"message incomplete"},
			reason: "content_filter",
		},
		{
			name:   "stopped",
			whole:  `{"index":0,"message":{"role":"assistant","reasoning_content":"hm","content":"Done."},"finish_reason":"stop"}`,
			chunks: []string{`{"index":0,"delta":{"reasoning_content":"hm"}}`, `{"index":0,"delta":{"content":"Done."},"finish_reason":"stop"}`},
			want:   []string{"reasoning completed", "message completed"},
		},
	} {
		statuses := func(r responses.Response) []string {
			var s []string
			for _, it := range r.Output {
				s = append(s, it.Type+" "+it.Status)
			}
			return s
		}
		check := func(t *testing.T, r responses.Response) {
			t.Helper()
			wantStatus := "completed"
			if tc.reason != "" {
				wantStatus = "incomplete"
			}
			if string(r.Status) != wantStatus || r.IncompleteDetails.Reason != tc.reason ||
				fmt.Sprint(statuses(r)) != fmt.Sprint(tc.want) {
				t.Errorf("got %s %q %v, want %s %q %v", r.Status, r.IncompleteDetails.Reason, statuses(r),
					wantStatus, tc.reason, tc.want)
			}
		}
		t.Run(tc.name+"/whole", func(t *testing.T) {
			g, up := oneTarget(t)
			up.set(wholeHandler(tc.whole))
			c := sdkClient(g, "unused")
			r, err := c.Responses.New(context.Background(),
				responses.ResponseNewParams{Model: "r", Input: inputString("go")})
			if err != nil {
				t.Fatal(err)
			}
			check(t, *r)
		})
		t.Run(tc.name+"/streamed", func(t *testing.T) {
			g, up := oneTarget(t)
			up.set(streamHandler(tc.chunks...))
			evs, err := streamAll(t, g, responses.ResponseNewParams{Model: "r", Input: inputString("go")})
			if err != nil {
				t.Fatal(err)
			}
			checkEvents(t, evs) // output_item.done gave each item as the final response has it
			last := evs[len(evs)-1]
			wantType := "response.completed"
			if tc.reason != "" {
				wantType = "response.incomplete"
			}
			if last.Type != wantType {
				t.Errorf("last event %s, want %s", last.Type, wantType)
			}
			check(t, last.Response)
		})
	}
}

// TestResponsesStreamFailureForTheSDK: what openai-go gives a client whose bridged stream breaks
// off. The gateway sends OpenAI's documented error event, flat ({"type":"error","code",
// "message","param","sequence_number"}), then response.failed. openai-go's ssestream sets Err()
// only for an event with a top-level "error" member, which no documented Responses event has, so
// Err() stays nil: a client learns of the failure from the error event (AsError) and from the
// last event, response.failed, whose response has status failed and an error, its cut message
// incomplete. CONFORMANCE.md says so.
func TestResponsesStreamFailureForTheSDK(t *testing.T) {
	g, up := oneTarget(t)
	up.set(func(w http.ResponseWriter, _ *http.Request) {
		resetConn(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+
			`data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"Once"}}]}`+"\n\n")
	})
	evs, err := streamAll(t, g, responses.ResponseNewParams{Model: "r", Input: inputString("go")})
	if err != nil {
		t.Fatalf("Err() %v: openai-go sets none for a documented Responses error event", err)
	}
	checkEvents(t, evs)
	var errEv *responses.ResponseErrorEvent
	for _, ev := range evs {
		if ev.Type == "error" {
			e := ev.AsError()
			errEv = &e
		}
	}
	if errEv == nil || errEv.Code != "stream_interrupted" || errEv.Message == "" {
		t.Fatalf("no error event with code stream_interrupted: %v", evs)
	}
	last := evs[len(evs)-1].AsResponseFailed()
	r := last.Response
	if last.Type != "response.failed" || r.Status != responses.ResponseStatusFailed || r.Error.Code != "server_error" ||
		r.Error.Message == "" || r.OutputText() != "Once" || r.Output[0].Status != "incomplete" {
		t.Errorf("last event %s", evs[len(evs)-1].RawJSON())
	}
}
