package server_test

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesStreamTextMidCallKeepsArguments: text or reasoning that a chat stream
// sends between two fragments of a call's arguments does not close the call half-way. The bridge
// closed the call on it (one item at a time) and dropped the arguments' rest as a fragment after
// whole arguments: the call's done events and response.completed both carried {"city": , JSON
// no client can run. The text waits until the call's arguments are whole, then streams as an
// item of its own after the call.
func TestResponsesStreamTextMidCallKeepsArguments(t *testing.T) {
	for _, tc := range []struct {
		name, delta, rest, args string
		want                    streamedItem
	}{
		{"text", `{"content":"Checking."}`, `"P"}`, `{"city":"P"}`, streamedItem{Type: "message", Text: "Checking."}},
		{"reasoning", `{"reasoning_content":"hm"}`, `"P"}`, `{"city":"P"}`, streamedItem{Type: "reasoning", Text: "hm"}},
		// Arguments that never close: the text still streams, after the call, at the end.
		{"never whole", `{"content":"Checking."}`, ``, `{"city":`, streamedItem{Type: "message", Text: "Checking."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, up := oneTarget(t)
			up.set(wholeOrStream(`{}`,
				`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"wx","arguments":"{\"city\":"}}]}}`,
				`{"index":0,"delta":`+tc.delta+`}`,
				`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":`+strconv.Quote(tc.rest)+`}}]},"finish_reason":"tool_calls"}`,
				`usage{"prompt_tokens":4,"completion_tokens":9,"total_tokens":13}`))
			evs, err := streamAll(t, g, responses.ResponseNewParams{Model: "r", Input: inputString("weather?")})
			if err != nil {
				t.Fatal(err)
			}
			streamed := checkEvents(t, evs)
			last := evs[len(evs)-1]
			if last.Type != "response.completed" {
				t.Fatalf("last event %s", last.RawJSON())
			}
			want := []streamedItem{{Type: "function_call", Text: tc.args}, tc.want}
			noIDs := cmp.Transformer("noIDs", func(it streamedItem) streamedItem { it.ID = ""; return it })
			if d := cmp.Diff(want, streamed, noIDs); d != "" {
				t.Errorf("items as streamed (-want +got):\n%s", d)
			}
			out := outputItems(last.Response)
			if d := cmp.Diff(want, out, noIDs); d != "" {
				t.Errorf("response.completed's output (-want +got):\n%s", d)
			}
			for _, ev := range evs {
				if ev.Type == "response.function_call_arguments.done" && ev.Arguments != tc.args {
					t.Errorf("function_call_arguments.done says %s", ev.Arguments)
				}
			}
		})
	}
}
