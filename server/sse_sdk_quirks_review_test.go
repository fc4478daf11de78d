package server_test

// The SSE quirks review, read by the official SDK: upstream streams in shapes real
// OpenAI-compatible servers send, which the gateway must relay so that openai-go reads every
// content byte, in order, and ends the stream as the upstream did.

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
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
	sdkReadsUsage(t, g, 5)
}

// sdkReadsUsage is sdkReads for a stream whose usage says total tokens (0: no usage chunk).
func sdkReadsUsage(t *testing.T, g *gateway, total int64) {
	t.Helper()
	acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "up",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	if err != nil {
		t.Fatalf("chat stream: %v", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hello" || acc.Choices[0].FinishReason != "stop" || acc.Usage.TotalTokens != total {
		t.Errorf("chat stream accumulated %+v, usage %+v", acc.Choices, acc.Usage)
	}
	c := sdkClient(g, "unused")
	rs := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "up", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	types, text, last := collect(t, rs)
	if end := types[len(types)-1]; end != "response.completed" || text != "Hello" || last.Usage.TotalTokens != total {
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

// An upstream that closes its stream right after its last event's data, without the event's line
// end (nor [DONE]), has sent all of it when the data is a whole JSON object: nothing of an object
// can be missing after its closing brace. CONFIG.md has a stream whose body simply ends, once a
// chunk carried a finish_reason, finish with the client's [DONE]; such a last event (the usage
// chunk, or the finishing chunk itself) instead ended it with stream_interrupted, and the SDK
// failed a complete answer. A stream that has no finish_reason by then broke off all the same,
// and its first event being that last one, the chain still moves on.
func TestSSEFinishedStreamLastEventWithoutLineEnd(t *testing.T) {
	hel, lo := quirkChunk(`{"role":"assistant","content":"Hel"}`, "null"), quirkChunk(`{"content":"lo"}`, "null")
	fin, loFin := quirkChunk(`{}`, `"stop"`), quirkChunk(`{"content":"lo"}`, `"stop"`)
	cut := strings.Index(loFin, `"created"`) // between members: the data's line break is JSON whitespace
	for _, tc := range []struct {
		name  string
		wire  string
		total int64
	}{
		{"usage chunk", "data: " + hel + "\n\ndata: " + lo + "\n\ndata: " + fin + "\n\ndata: " + quirkUsage, 5},
		{"usage chunk, crlf", "data: " + hel + "\r\n\r\ndata: " + lo + "\r\n\r\ndata: " + fin + "\r\n\r\ndata: " + quirkUsage, 5},
		{"finishing chunk", ": keep-alive\n\ndata: " + hel + "\n\ndata: " + loFin, 0},
		{"finishing chunk, multi-line", "data: " + hel + "\n\ndata: " + loFin[:cut] + "\ndata: " + loFin[cut:], 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sdkReadsUsage(t, newGateway(t, hostileConfig("openai", quirkUpstream(t, tc.wire)), nil), tc.total)
		})
	}
	t.Run("unfinished moves on", func(t *testing.T) {
		g, b := openaiGateway(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: "+hel)
		})
		acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "a",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		if err != nil || b.hits.Load() != 1 || len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "stop" {
			t.Errorf("err %v, b hits %d, accumulated %+v", err, b.hits.Load(), acc.Choices)
		}
	})
}

// Some servers put "finish_reason": "" on every chunk where OpenAI has null (SGLang 0.4.3,
// Ollama's /v1 in 2024, SenseNova). An empty reason is no finish: a stream of them that ends
// without [DONE] broke off, and the client must not get a [DONE] that passes its half answer off
// as a whole one. The relay took any string for a finish_reason and ended such a stream with
// [DONE]; the same stream with its real finish_reason, then closed, still ends with it.
func TestSSEEmptyFinishReasonIsNoFinish(t *testing.T) {
	hel, lo := quirkChunk(`{"role":"assistant","content":"Hel"}`, `""`), quirkChunk(`{"content":"lo"}`, `""`)
	for _, tc := range []struct {
		name, wire string
		finished   bool
	}{
		{"broken off", "data: " + hel + "\n\ndata: " + lo + "\n\n", false},
		{"finished", "data: " + hel + "\n\ndata: " + lo + "\n\ndata: " + quirkChunk(`{}`, `"stop"`) + "\n\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, hostileConfig("openai", quirkUpstream(t, tc.wire)), nil)
			acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "up",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			if tc.finished != (err == nil) || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hello" {
				t.Errorf("finished %v: err %v, accumulated %+v", tc.finished, err, acc.Choices)
			}
			if err != nil && !strings.Contains(err.Error(), "stream_interrupted") {
				t.Errorf("err %v, want the gateway's stream_interrupted", err)
			}
		})
	}
}

// One stream with every framing quirk the SSE spec allows and real upstreams send (a UTF-8 BOM,
// comments before and between events, event/id/retry fields, "data:" without its space, data in
// two lines, LF, CRLF, a lone CR and mixes of them for line ends, a chunk with an empty delta, the
// usage chunk, "[DONE]" with trailing spaces and CRLF, an event after it), its chunked body cut
// into two chunks at every byte (inside the BOM, a UTF-8 character, "data:", a CRLF, the blank
// line) and written in two writes cut elsewhere (inside a size line or its CRLF too): openai-go
// reads the same content, finish and usage every time, and nothing after [DONE].
func TestSDKEveryChunkBoundary(t *testing.T) {
	t.Parallel()
	multi := quirkChunk(`{"content":"👋"}`, "null")
	at := strings.Index(multi, `"created"`)
	wire := "\xef\xbb\xbf: keep-alive\r\n\r\nevent: message\r\nid: 1\r\nretry: 10\r\ndata:" +
		quirkChunk(`{"role":"assistant","content":"Hé"}`, "null") + "\r\n\r\n" +
		": keep-alive\r\r" + "data: " + multi[:at] + "\r\ndata: " + multi[at:] + "\n\n" +
		"data: " + quirkChunk(`{}`, "null") + "\r\r" +
		"data: " + quirkChunk(`{"content":"lo"}`, `"stop"`) + "\n\r\n" + "data: " + quirkUsage + "\r\n\r\n" +
		"data: [DONE]  \r\n\r\n" + "data: " + quirkChunk(`{"content":" late"}`, "null") + "\n\n"
	var n atomic.Int64
	url := rawServe(t, func(c net.Conn, _ string, _ <-chan struct{}) {
		k := int(n.Add(1)-1) % (len(wire) + 1)
		enc := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
		for _, p := range []string{wire[:k], wire[k:]} {
			if p != "" {
				enc += relayWireChunk(p)
			}
		}
		enc += "0\r\n\r\n"
		j := k * 7919 % len(enc)
		if _, err := io.WriteString(c, enc[:j]); err == nil {
			_, _ = io.WriteString(c, enc[j:])
		}
	})
	g := newGateway(t, hostileConfig("openai", url), nil)
	for k := 0; k <= len(wire); k++ {
		acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "up",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		if err != nil || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hé👋lo" || acc.Choices[0].FinishReason != "stop" ||
			acc.Usage.TotalTokens != 5 {
			t.Fatalf("chunks cut at %d (%q|%q): err %v, accumulated %+v usage %+v", k, wire[max(0, k-6):k], wire[k:min(len(wire), k+6)],
				err, acc.Choices, acc.Usage)
		}
	}
}

// Ollama's NDJSON the same way: blank lines (LF, CRLF, spaces) between the lines, a line cut at
// every byte into two chunks (inside a UTF-8 character, before its LF), and the done line last
// without its newline, which is whole: openai-go reads the content, finish and usage every time.
func TestSDKEveryChunkBoundaryOllama(t *testing.T) {
	t.Parallel()
	line := func(c string) string {
		return `{"model":"m","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":"` + c + `"},"done":false}`
	}
	wire := line("Hé") + "\n\n\r\n" + line("👋") + "\n  \n" + line("lo") + "\n" +
		`{"model":"m","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":""},"done":true,` +
		`"done_reason":"stop","prompt_eval_count":3,"eval_count":2}`
	var n atomic.Int64
	url := rawServe(t, func(c net.Conn, _ string, _ <-chan struct{}) {
		k := int(n.Add(1)-1) % (len(wire) + 1)
		enc := "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
		for _, p := range []string{wire[:k], wire[k:]} {
			if p != "" {
				enc += relayWireChunk(p)
			}
		}
		_, _ = io.WriteString(c, enc+"0\r\n\r\n")
	})
	g := newGateway(t, hostileConfig("ollama", url), nil)
	for k := 0; k <= len(wire); k++ {
		acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "up",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		if err != nil || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hé👋lo" || acc.Choices[0].FinishReason != "stop" ||
			acc.Usage.TotalTokens != 5 {
			t.Fatalf("cut at %d: err %v, accumulated %+v usage %+v", k, err, acc.Choices, acc.Usage)
		}
	}
}

// KoboldCpp puts the string "null" where OpenAI has JSON null on every chunk before the last
// (`"finish_reason": "null"`). It is no finish, by the rule every finish check keeps
// (upstream.SaysFinish): a stream of such chunks that ends without [DONE] broke off, and the
// client gets the error event (a Responses client response.failed), not a [DONE] that passes the
// half answer off as whole. Plain or through think-tags' splitter (which flushed the bytes it
// held for a tag at each such chunk), every relayed chunk says null where KoboldCpp said "null":
// openai-go reads the string as a finish reason, and a client that stops at the first non-empty
// one stopped at the first token. The same stream with its real finish_reason still ends whole.
func TestSSENullStringFinishReasonIsNoFinish(t *testing.T) {
	hel, lo := quirkChunk(`{"role":"assistant","content":"Hel"}`, `"null"`), quirkChunk(`{"content":"lo"}`, `"null"`)
	for _, tc := range []struct {
		name, wire string
		finished   bool
	}{
		{"broken off", "data: " + hel + "\n\ndata: " + lo + "\n\n", false},
		{"finished", "data: " + hel + "\n\ndata: " + lo + "\n\ndata: " + quirkChunk(`{}`, `"stop"`) + "\n\n", true},
		{"finished, spaced", "data: " + strings.ReplaceAll(hel, `:"null"`, ` : "null" `) + "\n\ndata: " + lo + "\n\ndata: " +
			quirkChunk(`{}`, `"stop"`) + "\n\n", true},
	} {
		for _, think := range []bool{false, true} {
			name := tc.name
			cfg := hostileConfig("openai", quirkUpstream(t, tc.wire))
			if think {
				name += ", think-tags"
				cfg = strings.Replace(cfg, "max_retries = 0\n", "max_retries = 0\nreasoning = \"think-tags\"\n", 1)
			}
			t.Run(name, func(t *testing.T) {
				g := newGateway(t, cfg, nil)
				c := sdkClient(g, "unused")
				s := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
					Model: "up", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
				var acc openai.ChatCompletionAccumulator
				var reasons []string
				for s.Next() {
					ch := s.Current()
					acc.AddChunk(ch)
					for _, c := range ch.Choices {
						reasons = append(reasons, string(c.FinishReason))
					}
				}
				err := s.Err()
				_ = s.Close()
				if tc.finished != (err == nil) || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hello" {
					t.Errorf("finished %v: err %v, accumulated %+v", tc.finished, err, acc.Choices)
				}
				if err != nil && !strings.Contains(err.Error(), "stream_interrupted") {
					t.Errorf("err %v, want the gateway's stream_interrupted", err)
				}
				if len(reasons) < 2 || reasons[0] != "" || reasons[1] != "" {
					t.Errorf("finish reasons the SDK read %q, want \"\" for the chunks that said \"null\"", reasons)
				}
				rs := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
					Model: "up", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
				types, text, _ := collect(t, rs)
				want := "response.completed"
				if !tc.finished {
					want = "response.failed"
				}
				if end := types[len(types)-1]; end != want || text != "Hello" {
					t.Errorf("responses stream: end %s, text %q, want %s", end, text, want)
				}
			})
		}
	}
}
