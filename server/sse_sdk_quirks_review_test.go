package server_test

// The SSE quirks review, read by the official SDK: upstream streams in shapes real
// OpenAI-compatible servers send, which the gateway must relay so that openai-go reads every
// content byte, in order, and ends the stream as the upstream did.

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// quirkUpstream answers every request with wire as one chunk of a chunked body, then closes.
func quirkUpstream(t *testing.T, wire string) string {
	t.Helper()
	return rawServe(t, func(c net.Conn, _ string, _ <-chan struct{}) {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"+
			"Connection: close\r\n\r\n"+relayWireChunk(wire)+"0\r\n\r\n")
	})
}

func quirkChunk(delta, finish string) string {
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta +
		`,"finish_reason":` + finish + `}]}`
}

const quirkUsage = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],` +
	`"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`

// sdkReads streams a chat completion (usage asked) and a Responses request from g through the
// official SDK and checks both read content "Hello" and the usage, and end without an error.
func sdkReads(t *testing.T, g *gateway) {
	t.Helper()
	acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "up",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	if err != nil {
		t.Fatalf("chat stream: %v", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hello" || acc.Choices[0].FinishReason != "stop" || acc.Usage.TotalTokens != 5 {
		t.Errorf("chat stream accumulated %+v, usage %+v", acc.Choices, acc.Usage)
	}
	c := sdkClient(g, "unused")
	rs := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "up", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	types, text, last := collect(t, rs)
	if end := types[len(types)-1]; end != "response.completed" || text != "Hello" || last.Usage.TotalTokens != 5 {
		t.Errorf("responses stream: end %s, text %q, final %s", end, text, last.RawJSON())
	}
}

// A chunk whose top-level "error" is null or "" is a chunk (the gateway reads no error in it),
// but openai-go ends a stream at any event with a top-level "error" member, whatever its value
// (ssestream.Stream.Next asks gjson whether it exists): relayed as it came, such a chunk failed
// the client's stream with "received error while streaming: " after the first token.
func TestSDKReadsChunksWithNullError(t *testing.T) {
	for _, v := range []string{"null", `""`, " null "} {
		t.Run(v, func(t *testing.T) {
			withErr := func(chunk string) string { return `{"error":` + v + `,` + chunk[1:] }
			wire := "data: " + withErr(quirkChunk(`{"role":"assistant","content":"Hel"}`, "null")) + "\n\n" +
				"data: " + quirkChunk(`{"content":"lo"}`, "null") + "\n\n" +
				"data: " + strings.Replace(quirkChunk(`{}`, `"stop"`), `"choices"`, `"error":`+v+`,"choices"`, 1) + "\n\n" +
				"data: " + withErr(quirkUsage) + "\n\ndata: [DONE]\n\n"
			sdkReads(t, newGateway(t, hostileConfig("openai", quirkUpstream(t, wire)), nil))
		})
	}
}
