package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/responses"
)

// streamedItem is an output item as a stream gave it: its id, type, and the text its deltas
// streamed (a message's text, a call's arguments, reasoning's text).
type streamedItem struct {
	ID, Type, Text string
}

// itemsOneAtATime holds a Responses stream to OpenAI's item order: an item is opened
// (output_item.added), streamed and closed (its .done events, then output_item.done) before the
// next item is added; output_index grows by one per item and sequence_number by one per event.
// It returns the items in the order they were added, with what each streamed.
func itemsOneAtATime(t *testing.T, evs []responses.ResponseStreamEventUnion) []streamedItem {
	t.Helper()
	var items []streamedItem
	open := -1                 // the index in items of the item added and not yet done
	dones := map[string]bool{} // the open item's .done events so far, by type
	var text strings.Builder
	for i, ev := range evs {
		if i > 0 && ev.SequenceNumber != evs[i-1].SequenceNumber+1 {
			t.Errorf("event %d (%s) has sequence_number %d after %d", i, ev.Type, ev.SequenceNumber, evs[i-1].SequenceNumber)
		}
		switch ev.Type {
		case "response.created", "response.in_progress", "response.completed", "response.incomplete",
			"response.failed", "error":
			continue
		case "response.output_item.added":
			if open >= 0 {
				t.Errorf("item %s (%s) added while item %s (%s) is open", ev.Item.ID, ev.Item.Type, items[open].ID, items[open].Type)
			}
			if ev.OutputIndex != int64(len(items)) {
				t.Errorf("item %s added at output_index %d, the next is %d", ev.Item.ID, ev.OutputIndex, len(items))
			}
			items = append(items, streamedItem{ID: ev.Item.ID, Type: ev.Item.Type})
			open, dones = len(items)-1, map[string]bool{}
			text.Reset()
			continue
		}
		id := ev.ItemID
		if ev.Type == "response.output_item.done" {
			id = ev.Item.ID
		}
		if open < 0 || id != items[open].ID || ev.OutputIndex != int64(open) {
			t.Errorf("%s for item %s at %d, not the open item: %s", ev.Type, id, ev.OutputIndex, ev.RawJSON())
			continue
		}
		switch ev.Type {
		case "response.output_text.delta", "response.function_call_arguments.delta", "response.reasoning_text.delta",
			"response.refusal.delta":
			text.WriteString(ev.Delta)
		case "response.output_item.done":
			var want []string
			switch items[open].Type {
			case "message":
				want = []string{"response.output_text.done", "response.content_part.done"}
			case "function_call":
				want = []string{"response.function_call_arguments.done"}
			case "reasoning":
				want = []string{"response.reasoning_text.done", "response.content_part.done"}
			}
			for _, w := range want {
				if !dones[w] {
					t.Errorf("item %s (%s) done without its %s", id, items[open].Type, w)
				}
			}
			items[open].Text = text.String()
			open = -1
		default:
			if strings.HasSuffix(ev.Type, ".done") {
				dones[ev.Type] = true
			}
		}
	}
	if open >= 0 {
		t.Errorf("item %s never done", items[open].ID)
	}
	return items
}

// outputItems are a response's output items, each with its text (a message's, a call's
// arguments, reasoning's).
func outputItems(r responses.Response) []streamedItem {
	var items []streamedItem
	for _, o := range r.Output {
		it := streamedItem{ID: o.ID, Type: o.Type}
		switch o.Type {
		case "message":
			for _, c := range o.Content {
				it.Text += c.Text
			}
		case "function_call":
			it.Text = o.Arguments.OfString
		case "reasoning":
			for _, c := range o.Content {
				it.Text += c.Text
			}
		}
		items = append(items, it)
	}
	return items
}

// TestResponsesStreamItemsOneAtATime: a chat stream that gives text, a call in pieces, more text
// and another call is streamed as four items one after another, each closed (its .done events)
// before the next is added, as OpenAI's API streams them and as clients that render items as
// they arrive (Codex CLI, agents on openai-go's events) read them; the final response lists them
// in that order, with the ids and text each streamed. The bridge kept the first message open to
// the stream's end, the later text added to it, so that the calls were added while it was open.
// The whole answer, whose chat message has one content and its calls after, is its message then
// its calls, in the stream's order.
func TestResponsesStreamItemsOneAtATime(t *testing.T) {
	g, up := oneTarget(t)
	up.set(wholeOrStream(
		`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant",`+
			`"content":"Let me check.Also the time.","tool_calls":[`+
			`{"id":"call_a","type":"function","function":{"name":"wx","arguments":"{\"city\":\"P\"}"}},`+
			`{"id":"call_b","type":"function","function":{"name":"tz","arguments":"{\"z\":1}"}}]},"finish_reason":"tool_calls"}],`+
			`"usage":{"prompt_tokens":4,"completion_tokens":9,"total_tokens":13}}`,
		`{"index":0,"delta":{"role":"assistant","content":"Let me "}}`,
		`{"index":0,"delta":{"content":"check."}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"wx","arguments":""}}]}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"P\"}"}}]}}`,
		`{"index":0,"delta":{"content":"Also "}}`,
		`{"index":0,"delta":{"content":"the time."}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"tz","arguments":"{\"z\":"}}]}}`,
		`{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}`,
		`usage{"prompt_tokens":4,"completion_tokens":9,"total_tokens":13}`))
	params := responses.ResponseNewParams{Model: "r", Input: inputString("weather and time in Paris?")}
	evs, err := streamAll(t, g, params)
	if err != nil {
		t.Fatal(err)
	}
	streamed := checkEvents(t, evs)
	last := evs[len(evs)-1]
	if last.Type != "response.completed" {
		t.Fatalf("last event %s", last.RawJSON())
	}
	want := []streamedItem{{Type: "message", Text: "Let me check."}, {Type: "function_call", Text: `{"city":"P"}`},
		{Type: "message", Text: "Also the time."}, {Type: "function_call", Text: `{"z":1}`}}
	noIDs := cmp.Transformer("noIDs", func(it streamedItem) streamedItem { it.ID = ""; return it })
	if d := cmp.Diff(want, streamed, noIDs); d != "" {
		t.Errorf("items as streamed (-want +got):\n%s", d)
	}
	if d := cmp.Diff(streamed, outputItems(last.Response)); d != "" {
		t.Errorf("response.completed's output against the items streamed (-streamed +output):\n%s", d)
	}
	calls := func(r responses.Response) (got []string) {
		for _, o := range r.Output {
			if o.Type == "function_call" {
				got = append(got, o.CallID+" "+o.Name+" "+o.Arguments.OfString)
			}
		}
		return got
	}
	if d := cmp.Diff([]string{`call_a wx {"city":"P"}`, `call_b tz {"z":1}`}, calls(last.Response)); d != "" {
		t.Errorf("streamed calls (-want +got):\n%s", d)
	}

	c := sdkClient(g, "unused")
	whole, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	wantWhole := []streamedItem{{Type: "message", Text: "Let me check.Also the time."},
		{Type: "function_call", Text: `{"city":"P"}`}, {Type: "function_call", Text: `{"z":1}`}}
	if d := cmp.Diff(wantWhole, outputItems(*whole), noIDs); d != "" {
		t.Errorf("whole output (-want +got):\n%s", d)
	}
	if d := cmp.Diff(calls(last.Response), calls(*whole)); d != "" {
		t.Errorf("whole calls against streamed (-streamed +whole):\n%s", d)
	}
}
