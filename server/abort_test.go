package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// abortGateway is a gateway with targets a (h) and b (okHandler), route ab trying a then b and
// route a trying a alone, logging to logs.
func abortGateway(t *testing.T, logs *syncBuffer, h http.HandlerFunc) (*gateway, *fake) {
	t.Helper()
	a, b := newFake(t, "a"), newFake(t, "b")
	a.set(h)
	return newGateway(t, target("a", a.url(), "private")+target("b", b.url(), "private")+
		"[routes.ab]\ntargets = [\"a\", \"b\"]\n[routes.a]\ntargets = [\"a\"]\n", nil, withLog(logs)), b
}

// sseAnswer answers the events given, then [DONE].
func sseAnswer(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range events {
			_, _ = io.WriteString(w, "data: "+ev+"\n\n")
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
}

// jsonAnswer answers body, 200.
func jsonAnswer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

func abortedWhole(message string) string {
	return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":` + message +
		`,"finish_reason":"abort"}],"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}}`
}

// pathLine is the log's first request line for path.
func pathLine(t *testing.T, logs *syncBuffer, path string) string {
	t.Helper()
	lines := logLines(logs, 1, func(l string) bool {
		return strings.Contains(l, "msg=request ") && strings.Contains(l, "path="+path+" ")
	})
	if len(lines) == 0 {
		t.Fatalf("no request line for %s in:\n%s", path, logs.String())
	}
	return lines[0]
}

// TestAbortBeforeAnythingMovesOn: vLLM and SGLang end an answer their engine gave up (preemption,
// an engine error, a shutdown) with finish_reason "abort", and a 200. One that has said nothing
// yet, a stream whose first event is the abort with no content or call, or a whole answer whose
// choice is empty and aborted, is that target's failure: the chain moves on to b, as for any
// answer broken before its first byte went out (it was relayed as a complete, empty answer).
// With no target left, the client gets an OpenAI-shaped 502 naming the failure.
func TestAbortBeforeAnythingMovesOn(t *testing.T) {
	ctx := context.Background()
	params := func(model string) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	}
	streams := map[string]http.HandlerFunc{
		"role and empty content": sseAnswer(quirkChunk(`{"role":"assistant","content":""}`, `"abort"`)),
		"empty delta":            sseAnswer(quirkChunk(`{}`, `"abort"`), quirkUsage),
	}
	for name, h := range streams {
		t.Run("stream "+name, func(t *testing.T) {
			var logs syncBuffer
			g, b := abortGateway(t, &logs, h)
			acc, err := sdkStream(g, params("ab"))
			if err != nil || b.hits.Load() != 1 || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "hello from b" {
				t.Fatalf("err %v, b hits %d, choices %+v: want b's answer", err, b.hits.Load(), acc.Choices)
			}
			if line := pathLine(t, &logs, "/v1/chat/completions"); !strings.Contains(line, "chain=a→b") || strings.Contains(line, "stream=") {
				t.Errorf("request line %q: want chain a→b and a whole stream", line)
			}
			_, err = sdkStream(g, params("a"))
			if apiErr, ok := errors.AsType[*openai.Error](err); !ok || apiErr.StatusCode != http.StatusBadGateway ||
				!strings.Contains(apiErr.Message, "abort") {
				t.Errorf("a alone: %v, want a 502 that says the upstream aborted", err)
			}
		})
	}
	wholes := map[string]string{
		"empty content": abortedWhole(`{"role":"assistant","content":""}`),
		"null content":  abortedWhole(`{"role":"assistant","content":null}`),
	}
	for name, body := range wholes {
		t.Run("whole "+name, func(t *testing.T) {
			var logs syncBuffer
			g, b := abortGateway(t, &logs, jsonAnswer(body))
			c := sdkClient(g, "unused")
			var hr *http.Response
			got, err := c.Chat.Completions.New(ctx, params("ab"), option.WithResponseInto(&hr))
			if err != nil || b.hits.Load() != 1 || len(got.Choices) != 1 || got.Choices[0].Message.Content != "hello from b" {
				t.Fatalf("err %v, b hits %d: want b's answer", err, b.hits.Load())
			}
			if chain := hr.Header.Get("X-Hayula-Chain"); chain != "a→b (served by b)" {
				t.Errorf("x-hayula-chain %q", chain)
			}
			_, err = c.Chat.Completions.New(ctx, params("a"))
			if apiErr, ok := errors.AsType[*openai.Error](err); !ok || apiErr.StatusCode != http.StatusBadGateway ||
				!strings.Contains(apiErr.Message, "abort") {
				t.Errorf("a alone: %v, want a 502 that says the upstream aborted", err)
			}
		})
	}
}

// TestAbortAfterContentIsCut: an abort after the answer began goes out as the upstream sent it
// (the client reads the text so far and finish_reason "abort"), but it is no whole answer: the
// request line says stream=aborted (a whole answer's cut=aborted), hayula_stream_ends_total
// counts it under end "aborted", not "done", and the Responses bridge ends it with an error event
// and response.failed, as it ends a stream that broke off, never response.completed.
func TestAbortAfterContentIsCut(t *testing.T) {
	params := openai.ChatCompletionNewParams{Model: "ab", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	stream := sseAnswer(quirkChunk(`{"role":"assistant","content":""}`, "null"), quirkChunk(`{"content":"Hel"}`, "null"),
		quirkChunk(`{}`, `"abort"`))

	t.Run("chat stream", func(t *testing.T) {
		var logs syncBuffer
		g, b := abortGateway(t, &logs, stream)
		acc, err := sdkStream(g, params)
		if err != nil || b.hits.Load() != 0 || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hel" ||
			acc.Choices[0].FinishReason != "abort" {
			t.Fatalf("err %v, b hits %d, choices %+v: want a's Hel, finish_reason abort", err, b.hits.Load(), acc.Choices)
		}
		if line := pathLine(t, &logs, "/v1/chat/completions"); !strings.Contains(line, "status=200") || !strings.Contains(line, "stream=aborted") {
			t.Errorf("request line %q: want status=200 stream=aborted", line)
		}
		settleStreamEnds(t, g, []string{`hayula_stream_ends_total{endpoint="chat",route="ab",target="a",end="aborted"} 1`})
	})

	t.Run("responses stream", func(t *testing.T) {
		var logs syncBuffer
		g, _ := abortGateway(t, &logs, stream)
		c := sdkClient(g, "unused")
		rs := c.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
			Model: "ab", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
		var types []string
		var last responses.Response
		for rs.Next() {
			ev := rs.Current()
			types = append(types, ev.Type)
			if strings.HasPrefix(ev.Type, "response.") && ev.Response.ID != "" {
				last = ev.Response
			}
		}
		if err := rs.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		n := len(types)
		if n == 0 || !slices.Contains(types, "error") || slices.Contains(types, "response.completed") ||
			types[n-1] != "response.failed" || last.Status != "failed" {
			t.Errorf("events %q, status %q: want an error event, response.failed and no response.completed", types, last.Status)
		}
		if len(last.Output) != 1 || last.Output[0].Content[0].Text != "Hel" {
			t.Errorf("output %+v: want the text so far", last.Output)
		}
		if line := pathLine(t, &logs, "/v1/responses"); !strings.Contains(line, "stream=aborted") {
			t.Errorf("request line %q: want stream=aborted", line)
		}
		settleStreamEnds(t, g, []string{`hayula_stream_ends_total{endpoint="responses",route="ab",target="a",end="aborted"} 1`})
	})

	t.Run("whole answer", func(t *testing.T) {
		var logs syncBuffer
		g, b := abortGateway(t, &logs, jsonAnswer(abortedWhole(`{"role":"assistant","content":"Hel"}`)))
		c := sdkClient(g, "unused")
		got, err := c.Chat.Completions.New(context.Background(), params)
		if err != nil || b.hits.Load() != 0 || len(got.Choices) != 1 || got.Choices[0].Message.Content != "Hel" ||
			got.Choices[0].FinishReason != "abort" {
			t.Fatalf("err %v, b hits %d: want a's answer as it came", err, b.hits.Load())
		}
		if line := pathLine(t, &logs, "/v1/chat/completions"); !strings.Contains(line, "cut=aborted") {
			t.Errorf("request line %q: want cut=aborted", line)
		}
	})
}

// TestAbortResponsesWholeIsFailed: a whole answer the upstream aborted after it began reaches a
// Responses client as the stream does: a response that failed, with what the upstream had sent,
// never a completed one.
func TestAbortResponsesWholeIsFailed(t *testing.T) {
	var logs syncBuffer
	g, _ := abortGateway(t, &logs, jsonAnswer(abortedWhole(`{"role":"assistant","content":"Hel"}`)))
	c := sdkClient(g, "unused")
	r, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "ab", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "failed" || r.Error.Code != "server_error" || len(r.Output) != 1 || r.Output[0].Content[0].Text != "Hel" ||
		r.Output[0].Status != "incomplete" {
		t.Errorf("status %q, error %+v, output %+v: want failed with the text so far", r.Status, r.Error, r.Output)
	}
	if line := pathLine(t, &logs, "/v1/responses"); !strings.Contains(line, "cut=aborted") {
		t.Errorf("request line %q: want cut=aborted", line)
	}
}

// TestResponsesOverLongEventIsBrokeOff: a Responses stream the bridge ends because one of its
// events would be longer than a client reads (TestSSELinesWithinSDKLimit) is a stream that broke
// off, as its client is told (the error event, response.failed): the request line says
// stream=broke_off, a "stream broke off" warn line says why, and hayula_stream_ends_total counts
// it under broke_off. It was logged and counted as a stream that ended with its [DONE].
func TestResponsesOverLongEventIsBrokeOff(t *testing.T) {
	t.Parallel()
	hel, fin := quirkChunk(`{"role":"assistant","content":"Hel"}`, "null"), quirkChunk(`{}`, `"stop"`)
	half := sizedChunk(3<<20, "<")
	for name, middle := range map[string]string{
		// A delta the encoder's escapes make too long.
		"delta": "data: " + sizedChunk(6<<20, "<") + "\n\n",
		// Deltas that go out, and a .done event, at [DONE], that repeats their whole text.
		"done at the end": "data: " + half + "\n\ndata: " + half + "\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var logs syncBuffer
			g := newGateway(t, hostileConfig("openai", quirkUpstream(t, "data: "+hel+"\n\n"+middle+"data: "+fin+"\n\ndata: [DONE]\n\n")),
				nil, withLog(&logs))
			rep := g.post(t, "/v1/responses", `{"model":"up","stream":true,"input":"hi"}`)
			if rep.status != 200 || !strings.Contains(string(rep.body), "response.failed") {
				t.Fatalf("%d, want 200 and response.failed", rep.status)
			}
			if line := pathLine(t, &logs, "/v1/responses"); !strings.Contains(line, "stream=broke_off") {
				t.Errorf("request line %q: want stream=broke_off", line)
			}
			if !strings.Contains(logs.String(), `msg="stream broke off" target=up`) {
				t.Errorf("no stream broke off warn line:\n%s", logs.String())
			}
			settleStreamEnds(t, g, []string{`hayula_stream_ends_total{endpoint="responses",route="up",target="up",end="broke_off"} 1`})
		})
	}
}
