package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// sdkFunctions is the SDK's deprecated functions parameter, which clients still send.
//
//lint:ignore SA1019 the deprecated field's kind is checked all the same (kinds.go)
type sdkFunctions = []openai.ChatCompletionNewParamsFunction

// Every chat parameter the official Go SDK offers, as the SDK writes it (its nulls, its empty
// maps and slices, each union's every arm), reaches the upstream: the wrong-kind refusals
// (kinds.go) must never refuse what a real client sends in normal use. So do the extras an
// upstream-compatible client sends for Ollama, vLLM, llama.cpp or Azure.
func TestSDKEveryParamPasses(t *testing.T) {
	fn := shared.FunctionDefinitionParam{Name: "f", Parameters: shared.FunctionParameters{"type": "object"}}
	tests := []struct {
		name  string
		set   func(p *openai.ChatCompletionNewParams)
		extra []option.RequestOption
		want  []string // members the upstream must receive
	}{
		{name: "scalars", set: func(p *openai.ChatCompletionNewParams) {
			p.FrequencyPenalty, p.PresencePenalty = openai.Float(0.5), openai.Float(-1)
			p.Logprobs, p.TopLogprobs = openai.Bool(true), openai.Int(3)
			p.MaxCompletionTokens, p.MaxTokens, p.N = openai.Int(64), openai.Int(64), openai.Int(1)
			p.PromptCacheKey, p.SafetyIdentifier, p.User = openai.String("k"), openai.String("s"), openai.String("u")
			p.Seed, p.Store, p.Temperature, p.TopP = openai.Int(-7), openai.Bool(false), openai.Float(0), openai.Float(1)
			p.ParallelToolCalls = openai.Bool(true)
		}, want: []string{"frequency_penalty", "presence_penalty", "logprobs", "top_logprobs", "max_completion_tokens",
			"max_tokens", "n", "prompt_cache_key", "safety_identifier", "user", "seed", "store", "temperature", "top_p",
			"parallel_tool_calls"}},
		{name: "zero values set", set: func(p *openai.ChatCompletionNewParams) {
			p.Logprobs, p.TopLogprobs = openai.Bool(false), openai.Int(0)
			p.FrequencyPenalty, p.PresencePenalty, p.Seed = openai.Float(0), openai.Float(0), openai.Int(0)
			// Not MaxTokens: the SDK sends a 0 only when the caller sets it (an unset param.Opt is
			// left out), and OpenAI refuses it, as the gateway does (TestTokenLimitBelowOne).
			p.PromptCacheKey, p.User = openai.String(""), openai.String("")
			p.LogitBias, p.Metadata, p.Modalities = map[string]int64{}, shared.Metadata{}, []string{}
			p.Tools, p.Functions = []openai.ChatCompletionToolUnionParam{}, sdkFunctions{}
			p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{}}
		}, want: []string{"logprobs", "top_logprobs", "logit_bias", "metadata", "modalities", "tools", "functions", "stop"}},
		{name: "nulls", set: func(p *openai.ChatCompletionNewParams) {
			p.FrequencyPenalty, p.PresencePenalty = param.Null[float64](), param.Null[float64]()
			p.Logprobs, p.TopLogprobs, p.N = param.Null[bool](), param.Null[int64](), param.Null[int64]()
			p.MaxTokens, p.MaxCompletionTokens, p.Seed = param.Null[int64](), param.Null[int64](), param.Null[int64]()
			p.Temperature, p.TopP = param.Null[float64](), param.Null[float64]()
			p.Store, p.ParallelToolCalls = param.Null[bool](), param.Null[bool]()
			p.User, p.PromptCacheKey, p.SafetyIdentifier = param.Null[string](), param.Null[string](), param.Null[string]()
			p.LogitBias = param.NullMap[map[string]int64]()
			p.Metadata = param.NullMap[shared.Metadata]()
			p.Modalities = param.NullSlice[[]string]()
			p.Tools = param.NullSlice[[]openai.ChatCompletionToolUnionParam]()
			p.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: param.Null[string]()}
		}, want: []string{"frequency_penalty", "logprobs", "top_logprobs", "n", "store", "user", "logit_bias",
			"metadata", "modalities", "tools", "stop"}},
		{name: "objects and arrays", set: func(p *openai.ChatCompletionNewParams) {
			p.LogitBias = map[string]int64{"50256": -100}
			p.Metadata = shared.Metadata{"a": "b"}
			p.Modalities = []string{"text", "audio"}
			p.Audio = openai.ChatCompletionAudioParam{Format: openai.ChatCompletionAudioParamFormatWAV,
				Voice: openai.ChatCompletionAudioParamVoiceUnion{OfString: openai.String("alloy")}}
			p.Moderation = openai.ChatCompletionNewParamsModeration{Model: "omni-moderation-latest"}
			p.PromptCacheRetention = openai.ChatCompletionNewParamsPromptCacheRetention("24h")
			p.PromptCacheOptions = openai.ChatCompletionNewParamsPromptCacheOptions{Mode: "explicit", Ttl: "30m"}
			p.ReasoningEffort = shared.ReasoningEffortLow
			p.ServiceTier = openai.ChatCompletionNewParamsServiceTierAuto
			p.Verbosity = openai.ChatCompletionNewParamsVerbosityLow
			p.Prediction = openai.ChatCompletionPredictionContentParam{
				Content: openai.ChatCompletionPredictionContentContentUnionParam{OfString: openai.String("x")}}
			p.WebSearchOptions = openai.ChatCompletionNewParamsWebSearchOptions{SearchContextSize: "low"}
			p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"a", "b"}}
			p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
				OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name: "s", Strict: openai.Bool(true), Schema: map[string]any{"type": "object"}}}}
			p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(fn)}
			p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "f"})
		}, want: []string{"logit_bias", "metadata", "modalities", "audio", "moderation", "prompt_cache_retention",
			"prompt_cache_options", "reasoning_effort", "service_tier", "verbosity", "prediction", "web_search_options",
			"stop", "response_format", "tools", "tool_choice"}},
		{name: "string arms", set: func(p *openai.ChatCompletionNewParams) {
			p.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String("\n")}
			p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfText: &shared.ResponseFormatTextParam{}}
			p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(fn)}
			p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
			p.Functions = sdkFunctions{{Name: "g"}}
			p.FunctionCall = openai.ChatCompletionNewParamsFunctionCallUnion{OfFunctionCallMode: openai.String("auto")}
		}, want: []string{"stop", "response_format", "tool_choice", "functions", "function_call"}},
		{name: "other arms", set: func(p *openai.ChatCompletionNewParams) {
			p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
			p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(fn)}
			p.ToolChoice = openai.ToolChoiceOptionAllowedTools(openai.ChatCompletionAllowedToolsParam{
				Mode: "auto", Tools: []map[string]any{{"type": "function", "function": map[string]any{"name": "f"}}}})
			p.Functions = sdkFunctions{{Name: "g"}}
			p.FunctionCall = openai.ChatCompletionNewParamsFunctionCallUnion{
				OfFunctionCallOption: &openai.ChatCompletionFunctionCallOptionParam{Name: "g"}}
		}, want: []string{"response_format", "tool_choice", "function_call"}},
		{name: "upstream extras", extra: []option.RequestOption{
			// Ollama
			option.WithJSONSet("format", "json"), option.WithJSONSet("options", map[string]any{"num_ctx": 4096}),
			option.WithJSONSet("keep_alive", "5m"), option.WithJSONSet("think", true),
			// llama.cpp
			option.WithJSONSet("top_k", 40), option.WithJSONSet("min_p", 0.05), option.WithJSONSet("repeat_penalty", 1.1),
			option.WithJSONSet("mirostat", 2), option.WithJSONSet("grammar", "root ::= \"a\""),
			option.WithJSONSet("n_probs", 5), option.WithJSONSet("cache_prompt", true),
			// vLLM
			option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": false}),
			option.WithJSONSet("guided_json", map[string]any{"type": "object"}),
			// Azure
			option.WithJSONSet("data_sources", []any{map[string]any{"type": "azure_search"}}),
		}, want: []string{"format", "options", "keep_alive", "think", "top_k", "min_p", "repeat_penalty", "mirostat",
			"grammar", "n_probs", "cache_prompt", "chat_template_kwargs", "guided_json", "data_sources"}},
	}
	g, saif, _, _ := threeChain(t)
	c := sdkClient(g, "unused")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := openai.ChatCompletionNewParams{
				Model:    "saif",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
			}
			if tt.set != nil {
				tt.set(&p)
			}
			sent, _ := json.Marshal(p)
			if _, err := c.Chat.Completions.New(context.Background(), p, tt.extra...); err != nil {
				t.Fatalf("refused %s: %v", sent, err)
			}
			got := saif.lastBody(t)
			for _, k := range tt.want {
				if _, ok := got[k]; !ok {
					t.Errorf("upstream got no %q: %v", k, got)
				}
			}
		})
	}
	t.Run("stream", func(t *testing.T) {
		p := openai.ChatCompletionNewParams{
			Model:         "saif",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true), IncludeObfuscation: openai.Bool(false)},
			Logprobs:      openai.Bool(true), TopLogprobs: openai.Int(2),
		}
		st := c.Chat.Completions.NewStreaming(context.Background(), p)
		for st.Next() {
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if got := saif.lastBody(t); got["stream_options"] == nil || got["top_logprobs"] != 2.0 {
			t.Errorf("upstream got %v", got)
		}
	})
}
