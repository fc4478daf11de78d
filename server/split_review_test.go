package server_test

// The split review, end to end: upstreams that send their stream as chunked transfer encoding
// written a few bytes at a time (chunk sizes, size lines, CRLFs, UTF-8 characters and SSE
// line ends all cut across writes), through each adapter, read by the official SDK and as raw
// bytes: the content arrives byte for byte, every event is JSON, and a stream cut mid-event ends
// with an error event, never [DONE].

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// pieceUpstream answers every POST with head, then body as chunked transfer encoding in chunks
// of odd sizes, the whole written a few bytes a write; with cut, the connection closes before
// the last chunk's end and the terminating chunk.
func pieceUpstream(t *testing.T, contentType, body string, cut bool) string {
	t.Helper()
	var enc strings.Builder
	sizes := []int{1, 2, 3, 5, 7, 13, 64, 4}
	for i, rest := 0, body; rest != ""; i++ {
		n := min(sizes[i%len(sizes)], len(rest))
		fmt.Fprintf(&enc, "%x\r\n%s\r\n", n, rest[:n])
		rest = rest[n:]
	}
	wire := enc.String()
	if cut {
		wire = wire[:len(wire)-3] // inside the last chunk: it never ends
	} else {
		wire += "0\r\n\r\n"
	}
	return rawServe(t, func(c net.Conn, _ string, _ <-chan struct{}) {
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: "+contentType+
			"\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"); err != nil {
			return
		}
		for i, rest := 0, wire; rest != ""; i++ {
			n := min(sizes[(i+3)%len(sizes)], len(rest))
			if _, err := io.WriteString(c, rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
	})
}

const (
	splitArabic = "مرحبا بالعالم، "
	splitEmoji  = "👋🏽 نعم café"
)

// openaiSplitStream is an OpenAI stream of the text's pieces as chunks (role first, the last
// piece beside the finish_reason, then the usage chunk), each event framed with nl, with a
// comment, event/id/retry fields and a blank event among them.
func openaiSplitStream(nl string, pieces []string) string {
	var b strings.Builder
	ev := func(data string) { b.WriteString("data: " + data + nl + nl) }
	b.WriteString(": ping" + nl + nl)
	ev(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	for i, p := range pieces {
		q, _ := json.Marshal(p)
		fin := "null"
		if i == len(pieces)-1 {
			fin = `"stop"`
		}
		if i == 1 {
			b.WriteString("event: message" + nl + "id: 2" + nl + "retry: 1000" + nl)
		}
		if i == 2 {
			b.WriteString("data:" + nl + nl) // a blank event
		}
		ev(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":` + string(q) + `},"finish_reason":` + fin + `}]}`)
	}
	ev(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
	ev("[DONE]")
	return b.String()
}

// splitWire is openaiSplitStream of splitPieces framed with nl; with cut, it ends inside the last
// content event, everything before it whole.
func splitWire(nl string, cut bool) string {
	wire := openaiSplitStream(nl, splitPieces())
	if cut {
		wire = wire[:strings.LastIndex(wire, `"stop"`)]
	}
	return wire
}

// sdkStream streams a chat completion from g through the official SDK and returns what its
// accumulator gathered and the stream's error.
func sdkStream(g *gateway, params openai.ChatCompletionNewParams, opts ...option.RequestOption) (openai.ChatCompletionAccumulator, error) {
	c := sdkClient(g, "unused")
	s := c.Chat.Completions.NewStreaming(context.Background(), params, opts...)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	_ = s.Close()
	return acc, s.Err()
}

func splitPieces() []string {
	return []string{splitArabic[:6], splitArabic[6:], "👋", "🏽", splitEmoji[len("👋🏽"):]}
}

// rawEvents reads the stream answer to body and checks its framing: every event one data line
// and a blank one, its payload JSON or [DONE].
func rawEvents(t *testing.T, g *gateway, path, body string) []string {
	t.Helper()
	resp, err := g.ts.Client().Post(g.ts.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	var out []string
	for _, block := range strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n") {
		lines := strings.Split(block, "\n")
		data, ok := strings.CutPrefix(lines[len(lines)-1], "data: ")
		if !ok || len(lines) > 2 || len(lines) == 2 && !strings.HasPrefix(lines[0], "event: ") {
			t.Fatalf("event %q is not framed as one data line: %q", block, raw)
		}
		if data != "[DONE]" && !json.Valid([]byte(data)) {
			t.Fatalf("event is not JSON: %q", data)
		}
		out = append(out, data)
	}
	return out
}

func TestSplitWireOpenAI(t *testing.T) {
	want := strings.Join(splitPieces(), "")
	for _, nl := range []string{"\n", "\r\n", "\r"} {
		for _, cut := range []bool{false, true} {
			t.Run(fmt.Sprintf("%q/cut=%v", nl, cut), func(t *testing.T) {
				url := pieceUpstream(t, "text/event-stream", splitWire(nl, cut), cut)
				g := newGateway(t, hostileConfig("openai", url), nil)

				ev := rawEvents(t, g, "/v1/chat/completions", usageBody("up", true))
				last := ev[len(ev)-1]
				if cut != strings.HasPrefix(last, `{"error":`) || !cut && last != "[DONE]" || strings.Count(strings.Join(ev, "\n"), "[DONE]") > 1 {
					t.Fatalf("cut=%v, the stream ends with %q: %q", cut, last, ev)
				}
				if got := gather(t, ev).content; !cut && got != want || cut && !strings.HasPrefix(want, got) {
					t.Errorf("content %q, want %q", got, want)
				}

				acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "up",
					Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
					StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
				if cut != (err != nil) {
					t.Fatalf("cut=%v: Err() = %v", cut, err)
				}
				if cut {
					return
				}
				if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != want || acc.Choices[0].FinishReason != "stop" ||
					acc.Usage.TotalTokens != 7 {
					t.Errorf("accumulated %+v usage %+v", acc.Choices, acc.Usage)
				}
			})
		}
	}
}

// Tool call deltas whose arguments arrive in fragments (a UTF-8 character's escapes and bytes
// cut between them), the finish_reason with the last fragment: the SDK's accumulator and a
// Responses client get the arguments whole.
func TestSplitWireToolCallFragments(t *testing.T) {
	args := `{"city":"القاهرة","note":"👋🏽 \"q\""}`
	var b strings.Builder
	ev := func(delta, fin string) {
		fmt.Fprintf(&b, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\r\n\r\n", delta, fin)
	}
	ev(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "null")
	for i, step := 0, 5; i < len(args); i += step {
		frag, _ := json.Marshal(args[i:min(i+step, len(args))])
		if !json.Valid(frag) || strings.Contains(string(frag), `\ufffd`) {
			// A fragment cut inside a character is not a JSON string; the upstream
			// cannot send it, so the step takes whole characters.
			continue
		}
		fin := "null"
		if i+step >= len(args) {
			fin = `"tool_calls"`
		}
		ev(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(frag)+`}}]}`, fin)
	}
	b.WriteString("data: [DONE]\r\n\r\n")
	wire := b.String()
	// Every fragment must carry whole characters: rebuild from what was sent.
	var sent strings.Builder
	for _, l := range strings.Split(wire, "\r\n") {
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Function struct{ Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if p, ok := strings.CutPrefix(l, "data: "); ok && json.Unmarshal([]byte(p), &c) == nil {
			for _, tc := range c.Choices[0].Delta.ToolCalls {
				sent.WriteString(tc.Function.Arguments)
			}
		}
	}
	want := sent.String()
	url := pieceUpstream(t, "text/event-stream", wire, false)
	g := newGateway(t, hostileConfig("openai", url), nil)

	acc, err := sdkStream(g, openai.ChatCompletionNewParams{Model: "up",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || len(acc.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("accumulated %+v", acc.Choices)
	}
	call := acc.Choices[0].Message.ToolCalls[0]
	if call.ID != "call_1" || call.Function.Name != "get_weather" || call.Function.Arguments != want || acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("call %+v finish %q, want arguments %q", call, acc.Choices[0].FinishReason, want)
	}

	c := sdkClient(g, "unused")
	rs := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "up", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("call")},
		Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object"}, false)}})
	_, _, last := collect(t, rs)
	if len(last.Output) != 1 || last.Output[0].AsFunctionCall().Arguments != want || last.Status != "completed" {
		t.Errorf("response %s", last.RawJSON())
	}
}

// The Responses bridge over the same wire: the text whole, and a cut stream failed.
func TestSplitWireResponses(t *testing.T) {
	want := strings.Join(splitPieces(), "")
	for _, nl := range []string{"\n", "\r\n", "\r"} {
		for _, cut := range []bool{false, true} {
			t.Run(fmt.Sprintf("%q/cut=%v", nl, cut), func(t *testing.T) {
				g := newGateway(t, hostileConfig("openai", pieceUpstream(t, "text/event-stream", splitWire(nl, cut), cut)), nil)
				c := sdkClient(g, "unused")
				rs := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
					Model: "up", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
				types, text, last := collect(t, rs)
				end := types[len(types)-1]
				switch {
				case !cut && (text != want || last.OutputText() != want || end != "response.completed" || last.Usage.TotalTokens != 7):
					t.Errorf("text %q, end %s, final %s", text, end, last.RawJSON())
				case cut && (end != "response.failed" || !strings.HasPrefix(want, text) || text == ""):
					t.Errorf("cut: text %q, events %v", text, types)
				}
			})
		}
	}
}

// Ollama's NDJSON and SAIF's events, cut across writes the same way.
func TestSplitWireTranslated(t *testing.T) {
	want := strings.Join(splitPieces(), "")
	ollama := func(cut bool) string {
		var b strings.Builder
		for _, p := range splitPieces() {
			q, _ := json.Marshal(p)
			fmt.Fprintf(&b, `{"model":"m","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":%s},"done":false}`+"\r\n", q)
		}
		if cut {
			b.WriteString(`{"model":"m","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":"x"`)
			return b.String()
		}
		b.WriteString(`{"model":"m","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":4}` + "\n")
		return b.String()
	}
	saif := func(cut bool) string {
		var b strings.Builder
		for _, p := range splitPieces() {
			q, _ := json.Marshal(p)
			fmt.Fprintf(&b, "data: {\"text\":%s,\"specialist\":\"webapp\"}\r\r", q)
		}
		if cut {
			b.WriteString(`data: {"text":"x"`)
			return b.String()
		}
		b.WriteString("data: {\"done\":true,\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\n\n")
		return b.String()
	}
	for _, tc := range []struct {
		adapter, ct string
		wire        func(bool) string
	}{{"ollama", "application/x-ndjson", ollama}, {"saif", "text/event-stream", saif}} {
		for _, cut := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cut=%v", tc.adapter, cut), func(t *testing.T) {
				url := pieceUpstream(t, tc.ct, tc.wire(cut), cut)
				g := newGateway(t, hostileConfig(tc.adapter, url), nil)
				ev := rawEvents(t, g, "/v1/chat/completions", usageBody("up", true))
				if !cut {
					checkChunks(t, ev, true)
				}
				last := ev[len(ev)-1]
				if cut != strings.HasPrefix(last, `{"error":`) {
					t.Fatalf("cut=%v, the stream ends with %q", cut, last)
				}
				if got := gather(t, ev).content; got != want {
					t.Errorf("content %q, want %q", got, want)
				}
			})
		}
	}
}
