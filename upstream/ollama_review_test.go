package upstream

// The Ollama review: the adapter against the answers Ollama's /api/chat really sends (server/routes.go
// ChatHandler, streamResponse; openai/openai.go for how Ollama's own OpenAI endpoint reads them).

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

// Ollama answers a chat request with no messages by loading the model (done_reason "load"), or,
// with keep_alive 0, by unloading it ("unload"): one object written with c.JSON, no newline and
// no Content-Type of NDJSON, whether or not streaming was asked for. Nothing was generated; passed
// on, it is an empty completion with finish_reason "stop" the client takes for the model's
// answer. It must fall through, whole or streamed, as any other 2xx that answers nothing does.
func TestOllamaLoadIsNoAnswer(t *testing.T) {
	for _, reason := range []string{"load", "unload"} {
		body := `{"model":"llama3.2","created_at":"2026-01-02T15:04:05.123456Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"` + reason + `"}`
		for _, stream := range []bool{false, true} {
			name := reason + "/whole"
			if stream {
				name = reason + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json; charset=utf-8")
					_, _ = io.WriteString(w, body)
				})
				tg := ollamaTarget(srv.URL)
				req := chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`)
				req.Stream = stream
				resp, err := newSet(t, tg).Chat(context.Background(), tg, req)
				if !stream {
					if !errors.As(err, new(*core.ProtocolError)) {
						t.Fatalf("Chat = %v (%T), want a *core.ProtocolError; answer %s", err, err, bodyOf(resp))
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Stream.Close()
				ev, err := resp.Stream.Next()
				if !errors.As(err, new(*core.StreamError)) {
					t.Fatalf("first Next = %s, %v; want a *core.StreamError before any chunk", ev, err)
				}
			})
		}
	}
}

func bodyOf(r *Response) string {
	if r == nil {
		return "(none)"
	}
	return string(r.Body)
}

// ollamaLine is one line of /api/chat as Ollama writes it (api.ChatResponse): created_at with
// nanoseconds, the model's tag, and on the done line its counts.
func ollamaLine(msg string, done bool, extra string) string {
	l := `{"model":"qwen3:8b","created_at":"2026-01-02T15:04:05.123456789Z","message":` + msg + `,"done":` + strconv.FormatBool(done)
	if extra != "" {
		l += "," + extra
	}
	return l + "}"
}

// ollamaAnswer is what a client reads of an answer, whole or streamed.
type ollamaAnswer struct {
	Content, Reasoning string
	ContentNull        bool // whole: message.content is null
	Calls              []toolCallJSON
	Finish             string
	Usage              *usageJSON
	UsageChunkLast     bool // stream: usage came alone, in the last chunk
}

// TestOllamaRealAnswers checks, against the lines Ollama's ChatHandler writes, what the client
// reads whole and streamed: finish_reason from done_reason (tool calls win, as in Ollama's own
// OpenAI endpoint), tool calls with index (streamed only), id, type and their arguments object as
// a JSON string with its keys' order and characters kept, message.thinking as reasoning_content,
// usage from prompt_eval_count and eval_count (whole always; streamed in a last chunk of its own
// only with include_usage), and one id, created and model on every chunk.
func TestOllamaRealAnswers(t *testing.T) {
	const args = `{"city":"Fès","unit":"c","q":{"z":1,"a":"\u003cb\u003e"}}` // Go's encoder escapes <>
	twoCalls := `{"role":"assistant","content":"","tool_calls":[` +
		`{"id":"call_x1y2z3w4","function":{"index":0,"name":"get_weather","arguments":` + args + `}},` +
		`{"id":"call_k9m8n7p6","function":{"index":1,"name":"get_time","arguments":{}}}]}`
	wantTwo := []toolCallJSON{toolCall(0, "call_x1y2z3w4", "get_weather", args), toolCall(1, "call_k9m8n7p6", "get_time", "{}")}
	tests := []struct {
		name  string
		lines []string
		want  ollamaAnswer
	}{
		{"stop", []string{
			ollamaLine(`{"role":"assistant","content":"Hel"}`, false, ""),
			ollamaLine(`{"role":"assistant","content":"lo"}`, false, ""),
			ollamaLine(`{"role":"assistant","content":""}`, true, `"done_reason":"stop","total_duration":1,"load_duration":1,"prompt_eval_count":12,"prompt_eval_duration":1,"eval_count":3,"eval_duration":1`),
		}, ollamaAnswer{Content: "Hello", Finish: "stop", Usage: newUsage(12, 3)}},
		{"length", []string{
			ollamaLine(`{"role":"assistant","content":"Once upon"}`, false, ""),
			ollamaLine(`{"role":"assistant","content":""}`, true, `"done_reason":"length","prompt_eval_count":5,"eval_count":2`),
		}, ollamaAnswer{Content: "Once upon", Finish: "length", Usage: newUsage(5, 2)}},
		{"two tool calls in one line", []string{
			ollamaLine(twoCalls, false, ""),
			ollamaLine(`{"role":"assistant","content":""}`, true, `"done_reason":"stop","prompt_eval_count":40,"eval_count":30`),
		}, ollamaAnswer{ContentNull: true, Calls: wantTwo, Finish: "tool_calls", Usage: newUsage(40, 30)}},
		{"tool calls on separate lines, without ids (before v0.12)", []string{
			ollamaLine(`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"a","arguments":{"x":1}}}]}`, false, ""),
			ollamaLine(`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"b","arguments":{"y":"ü"}}}]}`, false, ""),
			ollamaLine(`{"role":"assistant","content":""}`, true, `"done_reason":"stop","prompt_eval_count":1,"eval_count":2`),
		}, ollamaAnswer{ContentNull: true, Calls: []toolCallJSON{toolCall(0, "call_?", "a", `{"x":1}`), toolCall(1, "call_?", "b", `{"y":"ü"}`)},
			Finish: "tool_calls", Usage: newUsage(1, 2)}},
		{"a tool call on the done line, after text (a parser flushed at the end)", []string{
			ollamaLine(`{"role":"assistant","content":"Checking."}`, false, ""),
			ollamaLine(`{"role":"assistant","content":"","tool_calls":[{"id":"call_q1","function":{"index":0,"name":"a","arguments":{}}}]}`, true,
				`"done_reason":"stop","prompt_eval_count":3,"eval_count":4`),
		}, ollamaAnswer{Content: "Checking.", Calls: []toolCallJSON{toolCall(0, "call_q1", "a", "{}")}, Finish: "tool_calls", Usage: newUsage(3, 4)}},
		{"thinking, then the answer", []string{
			ollamaLine(`{"role":"assistant","content":"","thinking":"The user "}`, false, ""),
			ollamaLine(`{"role":"assistant","content":"","thinking":"greets."}`, false, ""),
			ollamaLine(`{"role":"assistant","content":"Hi!"}`, false, ""),
			ollamaLine(`{"role":"assistant","content":""}`, true, `"done_reason":"stop","prompt_eval_count":9,"eval_count":8`),
		}, ollamaAnswer{Content: "Hi!", Reasoning: "The user greets.", Finish: "stop", Usage: newUsage(9, 8)}},
		{"thinking cut by num_predict", []string{
			ollamaLine(`{"role":"assistant","content":"","thinking":"Hmm"}`, false, ""),
			ollamaLine(`{"role":"assistant","content":""}`, true, `"done_reason":"length","prompt_eval_count":9,"eval_count":1`),
		}, ollamaAnswer{Reasoning: "Hmm", Finish: "length", Usage: newUsage(9, 1)}},
	}
	for _, tt := range tests {
		for _, mode := range []string{"whole", "stream", "stream+usage"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
					if mode == "whole" {
						w.Header().Set("Content-Type", "application/json; charset=utf-8")
						_, _ = io.WriteString(w, wholeOf(t, tt.lines))
						return
					}
					w.Header().Set("Content-Type", "application/x-ndjson")
					for _, l := range tt.lines {
						_, _ = io.WriteString(w, l+"\n")
					}
				})
				tg := ollamaTarget(srv.URL)
				body := `{"messages":[{"role":"user","content":"x"}]}`
				if mode == "stream+usage" {
					body = `{"messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`
				}
				req := chatRequestOf(t, body)
				req.Stream = mode != "whole"
				resp, err := newSet(t, tg).Chat(context.Background(), tg, req)
				if err != nil {
					t.Fatal(err)
				}
				want := tt.want
				var got ollamaAnswer
				if mode == "whole" {
					got = readWhole(t, resp.Body)
				} else {
					got = readStream(t, resp.Stream)
					if mode == "stream" {
						want.Usage = nil
					} else {
						want.UsageChunkLast = true
					}
					want.ContentNull = false
				}
				for i := range got.Calls {
					if i < len(want.Calls) && want.Calls[i].ID == "call_?" && strings.HasPrefix(got.Calls[i].ID, "call_") {
						got.Calls[i].ID = "call_?"
					}
					if mode == "whole" {
						if got.Calls[i].Index != nil {
							t.Errorf("whole answer: tool call %d has an index", i)
						}
						got.Calls[i].Index = new(i)
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				for _, c := range got.Calls {
					if !json.Valid([]byte(c.Function.Arguments)) {
						t.Errorf("arguments %q are not JSON", c.Function.Arguments)
					}
				}
			})
		}
	}
}

func toolCall(index int, id, name, args string) toolCallJSON {
	c := toolCallJSON{Index: &index, ID: id, Type: "function"}
	c.Function.Name, c.Function.Arguments = name, args
	return c
}

// wholeOf is the answer Ollama gives without streaming: its lines merged (ChatHandler's
// stream:false path), the content and thinking joined, the tool calls gathered, the done
// line's counts and done_reason.
func wholeOf(t *testing.T, lines []string) string {
	t.Helper()
	var content, thinking strings.Builder
	var calls []json.RawMessage
	var last map[string]json.RawMessage
	for _, l := range lines {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		var msg struct {
			Content, Thinking string
			ToolCalls         []json.RawMessage `json:"tool_calls"`
		}
		_ = json.Unmarshal(m["message"], &msg)
		content.WriteString(msg.Content)
		thinking.WriteString(msg.Thinking)
		calls = append(calls, msg.ToolCalls...)
		last = m
	}
	msg := map[string]any{"role": "assistant", "content": content.String()}
	if thinking.Len() > 0 {
		msg["thinking"] = thinking.String()
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	last["message"] = mustJSON(msg)
	return string(mustJSON(last))
}

func readWhole(t *testing.T, body []byte) ollamaAnswer {
	t.Helper()
	var c struct {
		completionJSON
		Choices []struct {
			Message struct {
				Content          *string        `json:"content"`
				ReasoningContent string         `json:"reasoning_content"`
				ToolCalls        []toolCallJSON `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if c.ID == "" || c.Object != "chat.completion" || c.Created != 1767366245 || c.Model != "qwen3:8b" || len(c.Choices) != 1 {
		t.Errorf("envelope %s", body)
	}
	m := c.Choices[0].Message
	a := ollamaAnswer{Reasoning: m.ReasoningContent, Calls: m.ToolCalls, Finish: c.Choices[0].FinishReason, Usage: c.Usage}
	if m.Content == nil {
		a.ContentNull = true
	} else {
		a.Content = *m.Content
	}
	return a
}

func readStream(t *testing.T, s Stream) ollamaAnswer {
	t.Helper()
	defer s.Close()
	evs, end := drain(s)
	if end != "EOF" {
		t.Fatalf("stream ended %s", end)
	}
	var a ollamaAnswer
	var id, model string
	for i, e := range evs {
		var c chunkJSON
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("%v: %s", err, e)
		}
		if i == 0 {
			id, model = c.ID, c.Model
			if len(c.Choices) != 1 || c.Choices[0].Delta.Role != "assistant" {
				t.Errorf("first chunk without the role: %s", e)
			}
		}
		if c.ID != id || c.ID == "" || c.Model != model || model != "qwen3:8b" || c.Created != 1767366245 || c.Object != "chat.completion.chunk" {
			t.Errorf("chunk %d's envelope differs: %s", i, e)
		}
		if c.Usage != nil {
			a.Usage = c.Usage
			a.UsageChunkLast = i == len(evs)-1 && len(c.Choices) == 0
		}
		for _, ch := range c.Choices {
			if a.Finish != "" {
				t.Errorf("a chunk after the finishing one: %s", e)
			}
			if ch.Delta.Content != nil {
				a.Content += *ch.Delta.Content
			}
			a.Reasoning += ch.Delta.ReasoningContent
			a.Calls = append(a.Calls, ch.Delta.ToolCalls...)
			if ch.FinishReason != nil {
				a.Finish = *ch.FinishReason
			}
		}
	}
	return a
}

// newUsage is the usage object of an answer with the counts prompt and completion.
func newUsage(prompt, completion int) *usageJSON {
	return &usageJSON{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}
