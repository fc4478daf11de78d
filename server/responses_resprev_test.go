package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesMaxOutputTokensErrorsNameIt: a bad max_output_tokens is refused naming the
// parameter the client sent, not chat's max_tokens the bridge turned it into.
func TestResponsesMaxOutputTokensErrorsNameIt(t *testing.T) {
	g, _ := oneTarget(t)
	c := sdkClient(g, "unused")
	for _, v := range []any{-1, "x"} {
		_, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "r",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}},
			option.WithJSONSet("max_output_tokens", v))
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Param != "max_output_tokens" ||
			strings.Contains(oe.Message, "max_tokens") || !strings.Contains(oe.Message, "max_output_tokens") {
			t.Errorf("max_output_tokens %v: %v", v, err)
		}
	}
}
