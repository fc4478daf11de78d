package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
)

// twoChoiceThinkScript streams two choices whose chunks interleave, each with a think block cut
// across chunks, each finishing on its own, then the usage chunk.
func twoChoiceThinkScript(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(choices string) {
		fmt.Fprintf(w, "data: {\"id\":\"r\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"r1\",\"choices\":[%s]}\n\n", choices)
	}
	chunk(`{"index":0,"delta":{"role":"assistant","content":"<thi"},"finish_reason":null}`)
	chunk(`{"index":1,"delta":{"role":"assistant","content":"<think>b1</th"},"finish_reason":null}`)
	chunk(`{"index":0,"delta":{"content":"nk>a1</think>A"},"finish_reason":null},{"index":1,"delta":{"content":"ink>B"},"finish_reason":null}`)
	chunk(`{"index":1,"delta":{"content":"b"},"finish_reason":"length"}`)
	chunk(`{"index":0,"delta":{"content":"a"},"finish_reason":null}`)
	chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`)
	_, _ = io.WriteString(w, "data: {\"id\":\"r\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"r1\",\"choices\":[],"+
		"\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7,\"total_tokens\":12}}\n\ndata: [DONE]\n\n")
}

// openai-go's ChatCompletionAccumulator gets each of n = 2 streamed choices whole, with its own
// finish_reason, and the usage once, through a think-tags target, whose splitter rewrites each
// chunk, and through one relayed as it is.
func TestSDKAccumulatesTwoChoices(t *testing.T) {
	up := newAdUpstream(t, twoChoiceThinkScript)
	c := adClient(t, fmt.Sprintf(`
[targets.tags]
adapter   = "openai"
url       = "%s/v1"
reasoning = "think-tags"

[targets.raw]
adapter = "openai"
url     = "%s/v1"

[routes.tags]
targets = ["tags"]

[routes.raw]
targets = ["raw"]
`, up.srv.URL, up.srv.URL))
	for _, tc := range []struct{ route, a, b string }{
		{"tags", "Aa", "Bb"},
		{"raw", "<think>a1</think>Aa", "<think>b1</think>Bb"},
	} {
		t.Run(tc.route, func(t *testing.T) {
			st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: tc.route,
				N: openai.Int(2), StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
			var acc openai.ChatCompletionAccumulator
			for st.Next() {
				if !acc.AddChunk(st.Current()) {
					t.Fatalf("chunk refused: %s", st.Current().RawJSON())
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Choices) != 2 {
				t.Fatalf("%d choices", len(acc.Choices))
			}
			a, b := acc.Choices[0], acc.Choices[1]
			if a.Index != 0 || a.Message.Content != tc.a || a.FinishReason != "stop" ||
				b.Index != 1 || b.Message.Content != tc.b || b.FinishReason != "length" {
				t.Errorf("choices %+v %+v", a, b)
			}
			if acc.Usage.TotalTokens != 12 || acc.Usage.PromptTokens != 5 {
				t.Errorf("usage %+v", acc.Usage)
			}
		})
	}
}
