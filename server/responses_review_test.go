package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// wholeOrStream answers a stream request with chunks (each a choice, or "usage…"), and any other
// with whole, a chat completion.
func wholeOrStream(whole string, chunks ...string) http.HandlerFunc {
	st := streamHandler(chunks...)
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Stream {
			st(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, whole)
	}
}

var generatedID = regexp.MustCompile(`"(resp|msg|fc|rs)_[a-z0-9]+"`)

// normalized is a response's JSON with generated ids and created_at left out, for comparing a
// streamed answer's final response with the whole one.
func normalized(t *testing.T, raw string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(generatedID.ReplaceAllString(raw, `"${1}_x"`)), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "created_at")
	return m
}

// TestResponsesStreamEqualsWhole: the response a stream completes with is the response the same
// answer gets whole (ids aside), and every item's events name it consistently.
func TestResponsesStreamEqualsWhole(t *testing.T) {
	usage := `"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}`
	tests := []struct {
		name   string
		whole  string
		chunks []string
	}{
		{"empty answer",
			`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}],` + usage + `}`,
			[]string{`{"index":0,"delta":{"role":"assistant","content":""}}`, `{"index":0,"delta":{},"finish_reason":"stop"}`,
				`usage{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}`}},
		{"name after the first fragment",
			`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],` + usage + `}`,
			[]string{`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}`,
				`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"1}"}}]},"finish_reason":"tool_calls"}`,
				`usage{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}`}},
		{"two calls interleaved",
			`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
				`{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},` +
				`{"id":"call_2","type":"function","function":{"name":"g","arguments":"{\"b\":2}"}}]},"finish_reason":"tool_calls"}],` + usage + `}`,
			[]string{`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}`,
				`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"g","arguments":"{\"b\":"}}]}}`,
				`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}},{"index":1,"function":{"arguments":"2}"}}]}}`,
				`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}`,
				`usage{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}`}},
		{"two calls without their index",
			`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
				`{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},` +
				`{"id":"call_2","type":"function","function":{"name":"g","arguments":"{\"b\":2}"}}]},"finish_reason":"tool_calls"}],` + usage + `}`,
			[]string{`{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},` +
				`{"id":"call_2","type":"function","function":{"name":"g","arguments":"{\"b\":2}"}}]},"finish_reason":"tool_calls"}`,
				`usage{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}`}},
		{"a call never named",
			`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok","tool_calls":[{"id":"call_1","type":"function","function":{"name":"","arguments":"{}"}}]},"finish_reason":"tool_calls"}],` + usage + `}`,
			[]string{`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","function":{"arguments":"{}"}}]}}`,
				`{"index":0,"delta":{"content":"ok"},"finish_reason":"tool_calls"}`,
				`usage{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}`}},
		{"reasoning",
			`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"5.","reasoning_content":"3 < 5."},"finish_reason":"stop"}],` + usage + `}`,
			[]string{`{"index":0,"delta":{"role":"assistant","reasoning_content":"3 <"}}`, `{"index":0,"delta":{"reasoning_content":" 5."}}`,
				`{"index":0,"delta":{"content":"5."},"finish_reason":"stop"}`,
				`usage{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}`}},
		{"reasoning then a call",
			`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"use f","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],` + usage + `}`,
			[]string{`{"index":0,"delta":{"role":"assistant","reasoning_content":"use f"}}`,
				`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}`,
				`usage{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}`}},
		{"text and refusal",
			`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"no","refusal":"I can't"},"finish_reason":"stop"}],` + usage + `}`,
			[]string{`{"index":0,"delta":{"role":"assistant","content":"no"}}`, `{"index":0,"delta":{"refusal":"I "}}`,
				`{"index":0,"delta":{"refusal":"can't"},"finish_reason":"stop"}`,
				`usage{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, up := oneTarget(t)
			up.set(wholeOrStream(tc.whole, tc.chunks...))
			c := sdkClient(g, "unused")
			params := responses.ResponseNewParams{Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
			whole, err := c.Responses.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			st := c.Responses.NewStreaming(context.Background(), params)
			items := map[int64]string{} // output_index → item id, from output_item.added
			calls := map[int64]string{} // output_index → a function call's name, from output_item.added
			var last responses.Response
			for st.Next() {
				ev := st.Current()
				switch ev.Type {
				case "response.output_item.added":
					items[ev.OutputIndex] = ev.Item.ID
					calls[ev.OutputIndex] = ev.Item.Name
					if ev.Item.Type == "function_call" && (ev.Item.Name == "" && tc.name != "a call never named" || ev.Item.CallID == "") {
						t.Errorf("function_call added without its name or call_id: %s", ev.RawJSON())
					}
				case "response.output_text.delta", "response.output_text.done", "response.content_part.added",
					"response.content_part.done", "response.function_call_arguments.delta",
					"response.function_call_arguments.done", "response.refusal.delta", "response.refusal.done",
					"response.reasoning_text.delta", "response.reasoning_text.done":
					if items[ev.OutputIndex] != ev.ItemID {
						t.Errorf("%s names item %q at %d, added as %q", ev.Type, ev.ItemID, ev.OutputIndex, items[ev.OutputIndex])
					}
					var done struct {
						Name string `json:"name"`
					}
					_ = json.Unmarshal([]byte(ev.RawJSON()), &done)
					if ev.Type == "response.function_call_arguments.done" && done.Name != calls[ev.OutputIndex] {
						t.Errorf("%s names function %q, added as %q", ev.RawJSON(), done.Name, calls[ev.OutputIndex])
					}
				case "response.output_item.done":
					if items[ev.OutputIndex] != ev.Item.ID {
						t.Errorf("%s names item %q at %d, added as %q", ev.Type, ev.Item.ID, ev.OutputIndex, items[ev.OutputIndex])
					}
				case "response.completed", "response.incomplete", "response.failed":
					last = ev.Response
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(normalized(t, whole.RawJSON()), normalized(t, last.RawJSON())); d != "" {
				t.Errorf("streamed final response (-whole +streamed):\n%s", d)
			}
		})
	}
}

// TestResponsesPrivacyAnyStrictCounts: a Responses body that says strict anywhere is strict, as
// a chat body is (TestPrivacyAnyStrictCounts): the bridge once decoded the body into a map, whose
// last value for a member sent twice let a "default" or null after "strict" reach a public target.
func TestResponsesPrivacyAnyStrictCounts(t *testing.T) {
	pub := newFake(t, "pub")
	g := newGateway(t, target("pub", pub.url(), "public")+"[routes.r]\ntargets = [\"pub\"]\n", nil)
	for _, body := range []string{
		`{"model":"r","x-hayula-privacy":"strict","x-hayula-privacy":"default","input":"x"}`,
		`{"model":"r","x-hayula-privacy":"strict","input":"x","x-hayula-privacy":null}`,
		`{"model":"r","x-hayula-privacy":"strict","X-Hayula-Privacy":"default","input":"x"}`,
		`{"model":"r","input":"x","x-hayula-privacy":"strict"}`,
	} {
		rep := g.post(t, "/v1/responses", body)
		if rep.status != http.StatusServiceUnavailable || rep.errorField(t, "code") != "no_private_target" {
			t.Errorf("%s: %d %s", body, rep.status, rep.body)
		}
	}
	if n := pub.hits.Load(); n != 0 {
		t.Fatalf("public target hit %d times", n)
	}
}

// TestResponsesBodyText: the bridge refuses a body the chat endpoint refuses for its text (invalid
// UTF-8, in a key too, which re-encoding would have turned into U+FFFD), at the client's offset.
func TestResponsesBodyText(t *testing.T) {
	g, up := oneTarget(t)
	for _, body := range []string{
		"{\"model\":\"r\",\"input\":\"x\xff\"}",
		"{\"model\":\"r\",\"input\":\"x\",\"u\xffser\":\"u\"}",
	} {
		rep := g.post(t, "/v1/responses", body)
		want := fmt.Sprintf("invalid byte at offset %d", strings.IndexByte(body, 0xff))
		if rep.status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(rep.errorField(t, "message")), want) {
			t.Errorf("%q: %d %s", body, rep.status, rep.body)
		}
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("upstream asked %d times", n)
	}
}

// TestResponsesThinkTags: a think-tags target's thinking is a reasoning item, before the message,
// whose text is the answer alone; whole and streamed alike.
func TestResponsesThinkTags(t *testing.T) {
	up := newAdUpstream(t, r1Script)
	c := adClient(t, fmt.Sprintf(`
[targets.deepseek-r1]
adapter   = "openai"
url       = "%s/v1"
reasoning = "think-tags"

[routes.deepseek-r1]
targets = ["deepseek-r1"]
`, up.srv.URL))
	params := responses.ResponseNewParams{Model: "deepseek-r1", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("3 or 5?")}}
	check := func(t *testing.T, r responses.Response) {
		t.Helper()
		if len(r.Output) != 2 || r.Output[0].Type != "reasoning" || r.OutputText() != "5 is larger." {
			t.Fatalf("response %s", r.RawJSON())
		}
		if rs := r.Output[0].AsReasoning(); len(rs.Content) != 1 || rs.Content[0].Text != "3 < 5." {
			t.Fatalf("reasoning %s", r.Output[0].RawJSON())
		}
	}
	whole, err := c.Responses.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	check(t, *whole)
	types, text, last := collect(t, c.Responses.NewStreaming(context.Background(), params))
	if text != "5 is larger." || !containsStr(types, "response.reasoning_text.delta") {
		t.Fatalf("events %v, text %q", types, text)
	}
	check(t, last)
}

// TestResponsesCallIDs: function_call and function_call_output items are tied by call_id (the
// model's call id, not the item's fc_ id); an output whose call is not in the input, or an item
// without a call_id, is refused before any upstream is asked, where the bridge once sent the
// upstream a tool message without its call (or with an empty id).
func TestResponsesCallIDs(t *testing.T) {
	g, up := oneTarget(t)
	const call = `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"}`
	tests := []struct {
		name, input, param string
	}{
		{"output without its call", `[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"call_1","output":"42"}]`, "input[1].call_id"},
		{"output naming the item id", `[` + call + `,{"type":"function_call_output","call_id":"fc_1","output":"42"}]`, "input[1].call_id"},
		{"call without call_id", `[{"type":"function_call","id":"fc_1","name":"f","arguments":"{}"}]`, "input[0].call_id"},
		{"output without call_id", `[` + call + `,{"type":"function_call_output","output":"42"}]`, "input[1].call_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", `{"model":"r","input":`+tc.input+`}`)
			if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != tc.param {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("upstream asked %d times", n)
	}
	rep := g.post(t, "/v1/responses", `{"model":"r","input":[{"role":"user","content":"hi"},`+call+
		`,{"type":"function_call_output","call_id":"call_1","output":"42"}]}`)
	if rep.status != http.StatusOK {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	want := []any{
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "f", "arguments": "{}"}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "42"},
	}
	if d := cmp.Diff(want, upstreamMessages(t, up)); d != "" {
		t.Errorf("upstream messages (-want +got):\n%s", d)
	}
}
