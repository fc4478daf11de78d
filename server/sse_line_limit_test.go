package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// sdkLine is the longest line openai-go's SSE reader takes: its bufio.Scanner is given a buffer
// of at most bufio.MaxScanTokenSize<<9 bytes (32 MiB, packages/ssestream), and a line must fit in
// it with its LF; a longer one fails the stream with "token too long", and the client never
// reads the error event after it.
const sdkLine = bufio.MaxScanTokenSize<<9 - 1

// sizedChunk is a chunk of n bytes: its content, fill repeated, pads it out.
func sizedChunk(n int, fill string) string {
	base := len(quirkChunk(`{"content":""}`, "null"))
	return quirkChunk(`{"content":"`+strings.Repeat(fill, (n-base)/len(fill))+`"}`, "null")
}

// TestSSELinesWithinSDKLimit: no line the gateway writes is longer than openai-go reads. The
// gateway's own SSE reader takes an upstream event of up to 32 MiB, so one of 32 MiB less 5 bytes
// went out as a "data: " line the SDK failed on with "token too long", where it should read the
// gateway's stream_interrupted error event; a stream's first event that long moves the chain on,
// as any first event the gateway cannot relay does. An event of 32 MiB less 6 bytes, whose line
// the SDK reads, still goes out as it came. The Responses bridge's events are its own JSON: a
// delta whose text the encoder escapes (each "<" six bytes) grows past the limit from a chunk far
// below it, and its client must read the error event and response.failed instead.
func TestSSELinesWithinSDKLimit(t *testing.T) {
	t.Parallel()
	hel, fin := quirkChunk(`{"role":"assistant","content":"Hel"}`, "null"), quirkChunk(`{}`, `"stop"`)
	chat := func(g *gateway) (openai.ChatCompletionAccumulator, error) {
		return sdkStream(g, openai.ChatCompletionNewParams{Model: "up",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	}
	t.Run("at the limit", func(t *testing.T) {
		t.Parallel()
		big := sizedChunk(sdkLine-len("data: "), "x")
		g := newGateway(t, hostileConfig("openai", quirkUpstream(t, "data: "+hel+"\n\ndata: "+big+"\n\ndata: "+fin+"\n\ndata: [DONE]\n\n")), nil)
		acc, err := chat(g)
		if err != nil || len(acc.Choices) != 1 || len(acc.Choices[0].Message.Content) != len(big)-len(quirkChunk(`{"content":""}`, "null"))+3 {
			t.Errorf("err %v, %d choices", err, len(acc.Choices))
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		t.Parallel()
		big := sizedChunk(sdkLine-len("data: ")+1, "x")
		g := newGateway(t, hostileConfig("openai", quirkUpstream(t, "data: "+hel+"\n\ndata: "+big+"\n\ndata: "+fin+"\n\ndata: [DONE]\n\n")), nil)
		acc, err := chat(g)
		if err == nil || !strings.Contains(err.Error(), "stream_interrupted") || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hel" {
			t.Errorf("err %v, accumulated %d choices, want Hel and the gateway's stream_interrupted", err, len(acc.Choices))
		}
	})
	t.Run("first event over the limit moves on", func(t *testing.T) {
		t.Parallel()
		big := sizedChunk(sdkLine-len("data: ")+1, "x")
		g, b := openaiGateway(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: "+big+"\n\ndata: "+fin+"\n\ndata: [DONE]\n\n")
		})
		acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "a",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		if err != nil || b.hits.Load() != 1 || len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "stop" {
			t.Errorf("err %v, b hits %d, %d choices", err, b.hits.Load(), len(acc.Choices))
		}
	})
	t.Run("responses event grown past the limit", func(t *testing.T) {
		t.Parallel()
		big := sizedChunk(6<<20, "<")
		g := newGateway(t, hostileConfig("openai", quirkUpstream(t, "data: "+hel+"\n\ndata: "+big+"\n\ndata: "+fin+"\n\ndata: [DONE]\n\n")), nil)
		c := sdkClient(g, "unused")
		rs := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
			Model: "up", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
		var types []string
		var failed responses.Response
		for rs.Next() {
			ev := rs.Current()
			types = append(types, ev.Type)
			if ev.Type == "response.failed" {
				failed = ev.Response
			}
		}
		if err := rs.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		n := len(types)
		if n < 2 || types[n-2] != "error" || types[n-1] != "response.failed" || failed.Error.Code != "server_error" {
			t.Errorf("events end %q, error %+v, want error and response.failed", types[max(0, n-3):], failed.Error)
		}
	})
}
