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
	"github.com/openai/openai-go/v3/responses"
)

// r1OpenScript is an OpenAI-compatible upstream serving an R1 distill whose chat template opens
// the think block in the prompt (vLLM without --reasoning-parser, llama-server): its output
// starts inside the block, and its stream splits </think> across chunks. /v1/completions gets a
// text completion of the same text.
func r1OpenScript(w http.ResponseWriter, r *http.Request, body map[string]any) {
	const text = "3 < 5.\n</think>\n\n5 is larger."
	b, _ := json.Marshal(text)
	if strings.HasSuffix(r.URL.Path, "/completions") && !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"cmpl-r","object":"text_completion","created":1,"model":"r1","choices":[{"index":0,"text":%s,"logprobs":null,"finish_reason":"stop"}]}`, b)
		return
	}
	if body["stream"] != true {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"r","object":"chat.completion","created":1,"model":"r1","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":%s},"finish_reason":"stop"}]}`, b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i := 0; i < len(text); i += 4 {
		b, _ := json.Marshal(text[i:min(i+4, len(text))])
		fmt.Fprintf(w, "data: {\"id\":\"r\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"r1\","+
			"\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", b)
	}
	_, _ = io.WriteString(w, "data: {\"id\":\"r\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"r1\","+
		"\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
}

const thinkOpenConfig = `
[targets.r1-distill]
adapter   = "openai"
url       = "%s/v1"
reasoning = "think-open"

[routes.r1-distill]
targets = ["r1-distill"]
`

// TestSDKThinkOpen: through a think-open target, the SDK reads the reasoning from
// reasoning_content and the answer alone from the content, whole and streamed, though the
// upstream never wrote <think>; /v1/completions is relayed as the upstream wrote it.
func TestSDKThinkOpen(t *testing.T) {
	up := newAdUpstream(t, r1OpenScript)
	c := adClient(t, fmt.Sprintf(thinkOpenConfig, up.srv.URL))
	ctx := context.Background()
	ask := openai.ChatCompletionNewParams{Model: "r1-distill",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("3 or 5?")}}

	got, err := c.Chat.Completions.New(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "5 is larger." ||
		rawField(got.RawJSON(), "choices", "0", "message", "reasoning_content") != "3 < 5." {
		t.Fatalf("non-stream %s", got.RawJSON())
	}

	st := c.Chat.Completions.NewStreaming(ctx, ask)
	var acc openai.ChatCompletionAccumulator
	var reasoning strings.Builder
	for st.Next() {
		ch := st.Current()
		acc.AddChunk(ch)
		reasoning.WriteString(rawField(ch.RawJSON(), "choices", "0", "delta", "reasoning_content"))
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != "5 is larger." || reasoning.String() != "3 < 5." {
		t.Fatalf("stream: content %q, reasoning %q", acc.Choices[0].Message.Content, reasoning.String())
	}

	tc, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "r1-distill",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("3 or 5?")}})
	if err != nil {
		t.Fatal(err)
	}
	if tc.Choices[0].Text != "3 < 5.\n</think>\n\n5 is larger." {
		t.Fatalf("completions: text %q, want it as the upstream wrote it", tc.Choices[0].Text)
	}
}

// TestResponsesThinkOpen: a think-open target's reasoning is a reasoning item before the
// message, whose text is the answer alone, whole and streamed, as for think-tags.
func TestResponsesThinkOpen(t *testing.T) {
	up := newAdUpstream(t, r1OpenScript)
	c := adClient(t, fmt.Sprintf(thinkOpenConfig, up.srv.URL))
	params := responses.ResponseNewParams{Model: "r1-distill", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("3 or 5?")}}
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
