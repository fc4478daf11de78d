package server_test

import (
	"context"
	"errors"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesDroppedFieldKinds: a Responses field the bridge reads and does not send on (store,
// metadata, include, top_logprobs, stream_options) is refused 400 invalid_type naming it when it
// is not of the kind OpenAI's API takes, as the chat endpoint refuses its own (passKinds) and
// OpenAI's Responses API refuses them; a metadata value that is not a string is named by its key.
// They were dropped unread, the request served, and metadata, which the response object echoes,
// came back as sent: a response whose metadata was a string or held a number, which no client
// generated from OpenAI's schema reads. The SDK reads each refusal's param. Values of their kind
// (and null) are served as before.
func TestResponsesDroppedFieldKinds(t *testing.T) {
	g, up := oneTarget(t)
	c := sdkClient(g, "unused")
	params := responses.ResponseNewParams{Model: "r", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
	for _, tc := range []struct {
		field string
		value any
		param string // "" when served
	}{
		{"store", "yes", "store"},
		{"metadata", "x", "metadata"},
		{"metadata", []any{"a"}, "metadata"},
		{"metadata", map[string]any{"a": "b", "n": 5}, "metadata.n"},
		{"include", "reasoning.encrypted_content", "include"},
		{"include", []any{5}, "include[0]"},
		{"top_logprobs", "3", "top_logprobs"},
		{"top_logprobs", 1.5, "top_logprobs"},
		{"stream_options", true, "stream_options"},
		{"store", true, ""},
		{"store", nil, ""},
		{"metadata", map[string]any{"a": "b"}, ""},
		{"metadata", nil, ""},
		{"include", []any{"reasoning.encrypted_content"}, ""},
		{"top_logprobs", 0, ""},
		{"stream_options", map[string]any{"include_obfuscation": false}, ""},
	} {
		before := up.hits.Load()
		got, err := c.Responses.New(context.Background(), params, option.WithJSONSet(tc.field, tc.value))
		if tc.param == "" {
			if err != nil {
				t.Errorf("%s %v: %v, want served", tc.field, tc.value, err)
			} else if tc.field == "metadata" && tc.value != nil && got.Metadata["a"] != "b" {
				t.Errorf("metadata %v echoed as %s", tc.value, got.JSON.Metadata.Raw())
			}
			continue
		}
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Param != tc.param || ae.Code != "invalid_type" || ae.Type != "invalid_request_error" {
			t.Errorf("%s %v: %v, want 400 invalid_type naming %s", tc.field, tc.value, err, tc.param)
		}
		if n := up.hits.Load() - before; n != 0 {
			t.Errorf("%s %v: the upstream was asked %d times", tc.field, tc.value, n)
		}
	}
}
