package server_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestAbortWithOnlyHiddenReasoningMovesOn: a request whose reasoning object says exclude: true
// gets none of the model's reasoning. An answer the upstream aborted after it had only reasoned
// has, for that client, said nothing: the whole answer would be an empty message and the stream
// an empty delta with finish_reason "abort". As for an abort before anything
// (TestAbortBeforeAnythingMovesOn), the chain moves on to b.
func TestAbortWithOnlyHiddenReasoningMovesOn(t *testing.T) {
	params := openai.ChatCompletionNewParams{Model: "ab", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	exclude := option.WithJSONSet("reasoning", map[string]any{"exclude": true})

	t.Run("whole", func(t *testing.T) {
		var logs syncBuffer
		g, b := abortGateway(t, &logs, jsonAnswer(abortedWhole(`{"role":"assistant","content":"","reasoning_content":"Let me think"}`)))
		c := sdkClient(g, "unused")
		got, err := c.Chat.Completions.New(context.Background(), params, exclude)
		if err != nil || b.hits.Load() != 1 || len(got.Choices) != 1 || got.Choices[0].Message.Content != "hello from b" {
			t.Fatalf("err %v, b hits %d: want b's answer", err, b.hits.Load())
		}
	})

	t.Run("stream", func(t *testing.T) {
		var logs syncBuffer
		g, b := abortGateway(t, &logs, sseAnswer(quirkChunk(`{"reasoning_content":"Let me"}`, "null"),
			quirkChunk(`{"reasoning_content":" think"}`, "null"), quirkChunk(`{}`, `"abort"`)))
		acc, err := sdkStream(g, params, exclude)
		if err != nil || b.hits.Load() != 1 || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "hello from b" {
			t.Fatalf("err %v, b hits %d, choices %+v: want b's answer", err, b.hits.Load(), acc.Choices)
		}
	})
}
