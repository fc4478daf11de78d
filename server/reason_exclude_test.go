package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// vllmReasoningScript answers as vLLM (or llama-server) with a reasoning parser does: the
// reasoning beside the content, under both names servers use, whole or streamed, with chunks
// that carry reasoning alone.
func vllmReasoningScript(w http.ResponseWriter, _ *http.Request, body map[string]any) {
	if body["stream"] != true {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"v","object":"chat.completion","created":1,"model":"q","choices":[{"index":0,`+
			`"message":{"role":"assistant","reasoning_content":"Hm, sun.","reasoning":"Hm, sun.","content":"Sunny."},"finish_reason":"stop"}]}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, d := range []string{`{"role":"assistant","content":""}`, `{"reasoning_content":"Hm, ","reasoning":"Hm, "}`,
		`{"reasoning":"sun."}`, `{"content":"Sunny."}`} {
		fmt.Fprintf(w, "data: {\"id\":\"v\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"q\","+
			"\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
	}
	_, _ = io.WriteString(w, "data: {\"id\":\"v\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"q\","+
		"\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
}

// saifThinkScript answers as a SAIF specialist whose model writes a <think> block.
func saifThinkScript(w http.ResponseWriter, _ *http.Request, body map[string]any) {
	if body["stream"] == true {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, s := range []string{"<think>Hm, ", "sun.</think>", "Sunny."} {
			fmt.Fprintf(w, "data: {\"text\":%q,\"specialist\":\"webapp\"}\n\n", s)
		}
		_, _ = io.WriteString(w, "data: {\"done\":true,\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"s1","specialist":"webapp","routed_by":"router","text":"<think>Hm, sun.</think>Sunny.","finish_reason":"stop",`+
		`"usage":{"prompt_tokens":9,"completion_tokens":3}}`)
}

// ollamaThinkScript answers as Ollama with think on: the thinking in its own field.
func ollamaThinkScript(w http.ResponseWriter, _ *http.Request, body map[string]any) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	lines := []string{
		`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"","thinking":"Hm, sun."},"done":false}`,
		`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"Sunny."},"done":false}`,
		`{"model":"m","created_at":"2026-01-02T15:04:06Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":3}`,
	}
	if body["stream"] == true {
		_, _ = io.WriteString(w, strings.Join(lines, "\n")+"\n")
		return
	}
	_, _ = io.WriteString(w, `{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"Sunny.","thinking":"Hm, sun."},`+
		`"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":3}`)
}

// TestReasoningExcludeEveryAdapter: OpenRouter's reasoning {"exclude": true} (the model thinks,
// the client gets none of it) was honoured for ollama targets only. An OpenAI-compatible local
// server (vLLM, llama-server, SGLang) does not know the field and answered its reasoning_content
// and reasoning, whole and in every streamed chunk; a think-tags target's split put the block
// there too, and so did a SAIF target's. Now no target's answer carries reasoning to a client that
// excluded it, a chunk that carried reasoning alone is not sent as an empty one, and the answer
// is whole; without exclude the reasoning still arrives. Through the openai-go SDK.
func TestReasoningExcludeEveryAdapter(t *testing.T) {
	vllm, r1 := newAdUpstream(t, vllmReasoningScript), newAdUpstream(t, r1Script)
	saif, ol := newAdUpstream(t, saifThinkScript), newAdUpstream(t, ollamaThinkScript)
	c := adClient(t, fmt.Sprintf(`
[targets.vllm]
adapter = "openai"
url     = "%s/v1"

[targets.r1]
adapter   = "openai"
url       = "%s/v1"
reasoning = "think-tags"

[targets.saif]
adapter   = "saif"
url       = %q
tools     = false
vision    = false
reasoning = "think-tags"

[targets.ol]
adapter = "ollama"
url     = %q
model   = "m"

[routes.vllm]
targets = ["vllm"]
[routes.r1]
targets = ["r1"]
[routes.saif]
targets = ["saif"]
[routes.ollama]
targets = ["ol"]
`, vllm.srv.URL, r1.srv.URL, saif.srv.URL, ol.srv.URL))
	ctx := context.Background()
	answers := map[string]string{"vllm": "Sunny.", "r1": "5 is larger.", "saif": "Sunny.", "ollama": "Sunny."}
	thought := map[string]string{"vllm": "Hm", "r1": "3 <", "saif": "Hm", "ollama": "Hm"}
	for _, route := range []string{"vllm", "r1", "saif", "ollama"} {
		for _, exclude := range []bool{true, false} {
			ask := openai.ChatCompletionNewParams{Model: openai.ChatModel(route),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather?")}}
			var opts []option.RequestOption
			if exclude {
				opts = append(opts, option.WithJSONSet("reasoning", map[string]any{"exclude": true}))
			}
			t.Run(fmt.Sprintf("%s/exclude=%v/whole", route, exclude), func(t *testing.T) {
				got, err := c.Chat.Completions.New(ctx, ask, opts...)
				if err != nil {
					t.Fatal(err)
				}
				raw := got.RawJSON()
				if got.Choices[0].Message.Content != answers[route] {
					t.Errorf("content %q, want %q: %s", got.Choices[0].Message.Content, answers[route], raw)
				}
				if hid := !strings.Contains(raw, thought[route]); hid != exclude {
					t.Errorf("reasoning hidden %v, want %v: %s", hid, exclude, raw)
				}
				if exclude && strings.Contains(raw, `"reasoning`) {
					t.Errorf("a reasoning member reached the client: %s", raw)
				}
			})
			t.Run(fmt.Sprintf("%s/exclude=%v/stream", route, exclude), func(t *testing.T) {
				st := c.Chat.Completions.NewStreaming(ctx, ask, opts...)
				var acc openai.ChatCompletionAccumulator
				var all strings.Builder
				for st.Next() {
					ch := st.Current()
					acc.AddChunk(ch)
					raw := ch.RawJSON()
					all.WriteString(raw + "\n")
					if exclude && saysNothing(raw) {
						t.Errorf("a chunk with nothing to say: %s", raw)
					}
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				if acc.Choices[0].Message.Content != answers[route] {
					t.Errorf("content %q, want %q:\n%s", acc.Choices[0].Message.Content, answers[route], all.String())
				}
				if hid := !strings.Contains(all.String(), thought[route]); hid != exclude {
					t.Errorf("reasoning hidden %v, want %v:\n%s", hid, exclude, all.String())
				}
				if exclude && strings.Contains(all.String(), `"reasoning`) {
					t.Errorf("a reasoning member reached the client:\n%s", all.String())
				}
			})
		}
	}
}

// saysNothing reports a chunk whose every choice has an empty delta and no finish_reason, and
// that has no usage: what a chunk that carried reasoning alone becomes with its reasoning taken
// out.
func saysNothing(raw string) bool {
	var ch struct {
		Choices []struct {
			Delta        map[string]json.RawMessage `json:"delta"`
			FinishReason *string                    `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	if json.Unmarshal([]byte(raw), &ch) != nil || len(ch.Choices) == 0 {
		return false
	}
	for _, c := range ch.Choices {
		if len(c.Delta) > 0 || c.FinishReason != nil {
			return false
		}
	}
	return len(ch.Usage) == 0 || string(ch.Usage) == "null"
}
