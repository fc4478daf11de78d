package server_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// An upstream that answers the bridge more than one choice (it was sent no n, but a server's own
// default may ask for more) is read for its first, index 0, streamed as whole: a streamed chunk
// of choice 1 is not the answer's text, call or finish.
func TestResponsesStreamReadsChoiceZero(t *testing.T) {
	g, up := oneTarget(t)
	up.set(streamHandler(
		`{"index":0,"delta":{"role":"assistant","content":"Hel"}}`,
		`{"index":1,"delta":{"role":"assistant","content":"Oth"}}`,
		`{"index":0,"delta":{"content":"lo"}}`,
		`{"index":1,"delta":{"content":"er"},"finish_reason":"length"}`,
		`{"index":0,"delta":{},"finish_reason":"stop"},{"index":1,"delta":{"content":"!"}}`,
		`{"index":1,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}}`,
	))
	c := sdkClient(g, "unused")
	st := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	_, text, last := collect(t, st)
	if text != "Hello" || last.OutputText() != "Hello" || last.Status != "completed" || len(last.Output) != 1 {
		t.Errorf("text %q, final %s", text, last.RawJSON())
	}
}
