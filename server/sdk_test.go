package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func sdkClient(g *gateway, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(g.ts.URL+"/v1/"), option.WithAPIKey(key),
		option.WithHTTPClient(g.ts.Client()), option.WithMaxRetries(0))
}

func TestSDK(t *testing.T) {
	g, saif, r1, _ := threeChain(t)
	c := sdkClient(g, "unused")
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "saif",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	}

	t.Run("non-stream", func(t *testing.T) {
		got, err := c.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Choices) != 1 || got.Choices[0].Message.Content != "hello from saif" || got.Usage.TotalTokens != 6 {
			t.Fatalf("completion %+v", got)
		}
	})

	t.Run("stream after fallback", func(t *testing.T) {
		saif.set(errHandler(503, "unavailable", "down"))
		defer saif.set(okHandler("saif"))
		st := c.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "hello from deepseek-r1" {
			t.Fatalf("accumulated %+v", acc.Choices)
		}
		if r1.hits.Load() == 0 {
			t.Fatal("deepseek-r1 not asked")
		}
	})

	t.Run("error", func(t *testing.T) {
		p := params
		p.Model = "no-such-route"
		_, err := c.Chat.Completions.New(ctx, p)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("error %T %v is not *openai.Error", err, err)
		}
		if apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" || apiErr.Type != "invalid_request_error" ||
			!strings.Contains(apiErr.Message, "no-such-route") {
			t.Fatalf("error %+v", apiErr)
		}
	})
}
