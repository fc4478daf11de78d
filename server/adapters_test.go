package server_test

// End-to-end tests of the translating adapters: the official SDK talks to the real server, built
// from config text, in front of scripted Ollama, SAIF and R1 upstreams on loopback.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// adUpstream is a scripted upstream that keeps the bodies it was sent.
type adUpstream struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newAdUpstream(t *testing.T, h func(w http.ResponseWriter, r *http.Request, body map[string]any)) *adUpstream {
	t.Helper()
	u := &adUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.mu.Unlock()
		h(w, r, body)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *adUpstream) last() map[string]any {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bodies[len(u.bodies)-1]
}

// adClient builds the gateway from cfg and returns an SDK client for it.
func adClient(t *testing.T, cfg string) openai.Client {
	t.Helper()
	c, err := config.Parse([]byte(cfg), "adapters.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := serveLive(t, srv.Handler())
	return openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("unused"),
		option.WithHTTPClient(ts.Client()), option.WithMaxRetries(0))
}

// rawField reads a top-level-path string from raw JSON; "" when absent.
func rawField(raw string, path ...string) string {
	var v any
	_ = json.Unmarshal([]byte(raw), &v)
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			if len(x) == 0 {
				return ""
			}
			v = x[0] // paths here only ever need the first choice
		default:
			return ""
		}
	}
	s, _ := v.(string)
	return s
}

// ollamaScript answers /api/chat: a tool call when the last message is the user's, a text that
// quotes the tool result when it is the tool's. It checks the shape Ollama needs on the way.
func ollamaScript(t *testing.T) func(w http.ResponseWriter, r *http.Request, body map[string]any) {
	return func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		if r.URL.Path != "/api/chat" {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		msgs, _ := body["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		w.Header().Set("Content-Type", "application/x-ndjson")
		var lines []string
		if last["role"] == "tool" {
			if last["tool_name"] != "get_weather" {
				t.Errorf("tool result sent without its tool_name: %v", last)
			}
			text := "It is " + fmt.Sprint(last["content"]) + "."
			lines = []string{
				fmt.Sprintf(`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":%q},"done":false}`, text[:6]),
				fmt.Sprintf(`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":%q},"done":false}`, text[6:]),
			}
		} else {
			lines = []string{`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"",` +
				`"tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Fez"}}}]},"done":false}`}
		}
		done := `{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":""},` +
			`"done":true,"done_reason":"stop","prompt_eval_count":11,"eval_count":4}`
		if body["stream"] == false {
			// One object: the lines merged, as Ollama answers without streaming.
			var m map[string]any
			_ = json.Unmarshal([]byte(lines[0]), &m)
			if len(lines) > 1 {
				msg := m["message"].(map[string]any)
				var m2 map[string]any
				_ = json.Unmarshal([]byte(lines[1]), &m2)
				msg["content"] = fmt.Sprint(msg["content"]) + fmt.Sprint(m2["message"].(map[string]any)["content"])
			}
			m["done"], m["done_reason"], m["prompt_eval_count"], m["eval_count"] = true, "stop", 11, 4
			_ = json.NewEncoder(w).Encode(m)
			return
		}
		for _, l := range append(lines, done) {
			_, _ = io.WriteString(w, l+"\n")
		}
	}
}

func TestSDKThroughOllama(t *testing.T) {
	up := newAdUpstream(t, ollamaScript(t))
	c := adClient(t, fmt.Sprintf(`
[targets.averroes-q]
adapter = "ollama"
url     = %q
model   = "averroes-q:7b"

[routes.averroes-q]
targets = ["averroes-q"]
`, up.srv.URL))
	ctx := context.Background()
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name: "get_weather", Parameters: openai.FunctionParameters{"type": "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}}}})}
	question := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Fez?")}

	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			ask := func(msgs []openai.ChatCompletionMessageParamUnion) openai.ChatCompletion {
				p := openai.ChatCompletionNewParams{Model: "averroes-q", Messages: msgs, Tools: tools,
					Temperature: openai.Float(0.1), MaxTokens: openai.Int(64)}
				if !stream {
					got, err := c.Chat.Completions.New(ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					return *got
				}
				p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				st := c.Chat.Completions.NewStreaming(ctx, p)
				var acc openai.ChatCompletionAccumulator
				for st.Next() {
					acc.AddChunk(st.Current())
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				return acc.ChatCompletion
			}

			first := ask(question)
			calls := first.Choices[0].Message.ToolCalls
			if first.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].ID == "" ||
				calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Fez"}` {
				t.Fatalf("first answer %+v", first.Choices[0])
			}
			sent := up.last()
			opts, _ := sent["options"].(map[string]any)
			if sent["model"] != "averroes-q:7b" || opts["num_predict"] != 64.0 || opts["temperature"] != 0.1 || sent["stream"] != stream {
				t.Errorf("sent to Ollama: %v", sent)
			}

			history := append(question, first.Choices[0].Message.ToParam(), openai.ToolMessage("sunny, 31°C", calls[0].ID))
			second := ask(history)
			if second.Choices[0].Message.Content != "It is sunny, 31°C." || second.Choices[0].FinishReason != "stop" ||
				second.Usage.PromptTokens != 11 || second.Usage.CompletionTokens != 4 {
				t.Fatalf("second answer %+v usage %+v", second.Choices[0], second.Usage)
			}
			msgs, _ := up.last()["messages"].([]any)
			assistant, _ := msgs[1].(map[string]any)
			tc, _ := assistant["tool_calls"].([]any)
			fn, _ := tc[0].(map[string]any)["function"].(map[string]any)
			if args, _ := fn["arguments"].(map[string]any); args["city"] != "Fez" {
				t.Errorf("the assistant's tool call went back with arguments %v, want an object", fn["arguments"])
			}
		})
	}
}

// saifScript answers the SAIF protocol: loading on "loading", otherwise the hint's specialist
// (or "webapp" from the router), as JSON or SSE.
func saifScript(w http.ResponseWriter, r *http.Request, body map[string]any) {
	prompt, _ := body["prompt"].(string)
	if strings.Contains(prompt, "loading") {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"status":"loading"}`)
		return
	}
	spec, routedBy := "webapp", "router"
	if s, ok := body["specialist"].(string); ok {
		spec, routedBy = s, "hint"
	}
	if body["stream"] == true {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"text\":\"Use \",\"specialist\":%q}\n\n", spec)
		fmt.Fprintf(w, "data: {\"text\":\"a CSP.\",\"specialist\":%q}\n\n", spec)
		_, _ = io.WriteString(w, "data: {\"done\":true,\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"s1","specialist":%q,"routed_by":%q,"confidence":0.9,"text":"Use a CSP.","finish_reason":"stop",`+
		`"usage":{"prompt_tokens":9,"completion_tokens":3}}`, spec, routedBy)
}

func TestSDKThroughSAIF(t *testing.T) {
	up := newAdUpstream(t, saifScript)
	c := adClient(t, fmt.Sprintf(`
[targets.saif]
adapter = "saif"
url     = %q
tools   = false
vision  = false

[routes.saif]
targets = ["saif"]
`, up.srv.URL))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "saif",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Stop XSS?")}}

	t.Run("non-stream with a hint", func(t *testing.T) {
		var resp *http.Response
		got, err := c.Chat.Completions.New(ctx, params, option.WithHeader("x-route-hint", "rev_eng"), option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nStop XSS?<|im_end|>\n<|im_start|>assistant\n"
		if sent := up.last(); sent["prompt"] != want || sent["specialist"] != "rev_eng" {
			t.Errorf("sent to SAIF: %v", sent)
		}
		if got.Choices[0].Message.Content != "Use a CSP." || resp.Header.Get("x-hayula-specialist") != "rev_eng" ||
			rawField(got.RawJSON(), "hayula", "routed_by") != "hint" || got.Usage.TotalTokens != 12 {
			t.Fatalf("answer %s, specialist header %q", got.RawJSON(), resp.Header.Get("x-hayula-specialist"))
		}
	})

	t.Run("stream through the router", func(t *testing.T) {
		var resp *http.Response
		st := c.Chat.Completions.NewStreaming(ctx, params, option.WithResponseInto(&resp))
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if sent := up.last(); sent["specialist"] != nil {
			t.Errorf("no hint, yet specialist %v was sent", sent["specialist"])
		}
		if acc.Choices[0].Message.Content != "Use a CSP." || acc.Choices[0].FinishReason != "stop" ||
			resp.Header.Get("x-hayula-specialist") != "webapp" {
			t.Fatalf("streamed %+v, specialist header %q", acc.Choices[0], resp.Header.Get("x-hayula-specialist"))
		}
	})

	t.Run("loading with nothing else to serve is a 503 with SAIF's Retry-After", func(t *testing.T) {
		p := params
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("loading")}
		_, err := c.Chat.Completions.New(ctx, p)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Response.Header.Get("Retry-After") != "7" {
			t.Fatalf("error %v", err)
		}
	})
}

// r1Script is an OpenAI-compatible upstream whose answers start with a think block; its stream
// splits both tags across chunks.
func r1Script(w http.ResponseWriter, _ *http.Request, body map[string]any) {
	const text = "<think>\n3 < 5.\n</think>\n\n5 is larger."
	if body["stream"] != true {
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(text)
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

func TestSDKThinkTags(t *testing.T) {
	up := newAdUpstream(t, r1Script)
	c := adClient(t, fmt.Sprintf(`
[targets.deepseek-r1]
adapter   = "openai"
url       = "%s/v1"
reasoning = "think-tags"

[targets.raw]
adapter = "openai"
url     = "%s/v1"

[routes.deepseek-r1]
targets = ["deepseek-r1"]

[routes.raw]
targets = ["raw"]
`, up.srv.URL, up.srv.URL))
	ctx := context.Background()
	ask := openai.ChatCompletionNewParams{Model: "deepseek-r1",
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

	// The same upstream without the option: the think block stays in the content.
	ask.Model = "raw"
	got, err = c.Chat.Completions.New(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Choices[0].Message.Content, "<think>") {
		t.Fatalf("passthrough changed the content: %q", got.Choices[0].Message.Content)
	}
}

// A route name as x-route-hint steers model "auto" and is spent there: it never reaches SAIF as
// a specialist; a specialist hint does. The auto-router matches a route name in any case, and
// "SAIF" went on to SAIF as a specialist that does not exist: 400 unknown_specialist.
func TestAutoHintNamingARouteIsSpent(t *testing.T) {
	up := newAdUpstream(t, saifScript)
	other := newAdUpstream(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	})
	c := adClient(t, fmt.Sprintf(`
[targets.saif]
adapter = "saif"
url     = %q
tools   = false
vision  = false

[targets.general]
adapter = "openai"
url     = "%s/v1"

[routes.saif]
targets = ["saif"]

[routes.deepseek-r1]
targets = ["general"]

[routes.averroes-q]
targets = ["general"]

[auto]
`, up.srv.URL, other.srv.URL))
	params := openai.ChatCompletionNewParams{Model: "auto",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Write a poem about the sea.")}}
	for hint, wantSpecialist := range map[string]any{"saif": nil, "SAIF": nil, "Saif": nil, "webapp": "webapp", "WebApp": "webapp"} {
		if _, err := c.Chat.Completions.New(context.Background(), params, option.WithHeader("x-route-hint", hint)); err != nil {
			t.Fatalf("hint %q: %v", hint, err)
		}
		if got := up.last()["specialist"]; got != wantSpecialist {
			t.Errorf("hint %q: SAIF got specialist %v, want %v", hint, got, wantSpecialist)
		}
	}
}

// An Ollama that answers a chat with its load-only object (done_reason "load", as it answers a
// request with no messages, written whole even when streaming was asked for) has generated
// nothing: the chain moves on to the next target, whole or streamed, instead of the client
// getting an empty completion that says "stop" (TestOllamaLoadIsNoAnswer in upstream).
func TestSDKOllamaLoadFallsThrough(t *testing.T) {
	load := newAdUpstream(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, `{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"load"}`)
	})
	ok := newAdUpstream(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		line := `{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"It is sunny."},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":4}`
		_, _ = io.WriteString(w, line+"\n")
	})
	c := adClient(t, fmt.Sprintf(`
[targets.ol-load]
adapter = "ollama"
url     = %q
model   = "m"

[targets.ol-ok]
adapter = "ollama"
url     = %q
model   = "m"

[routes.local]
targets = ["ol-load", "ol-ok"]
`, load.srv.URL, ok.srv.URL))
	ctx := context.Background()
	p := openai.ChatCompletionNewParams{Model: "local", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("Weather?")}}
	got, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "It is sunny." {
		t.Fatalf("whole answer %+v", got.Choices[0])
	}
	st := c.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != "It is sunny." || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("streamed answer %+v", acc.Choices[0])
	}
	load.mu.Lock()
	asked := len(load.bodies)
	load.mu.Unlock()
	if asked != 2 {
		t.Fatalf("the loading target was asked %d times, want 2", asked)
	}
}

// What openai-go makes of Ollama's real answers through the gateway: two tool calls in one
// NDJSON line (ids and arguments objects, keys in the model's order) accumulate into two calls,
// streamed or not, finish_reason "tool_calls" and usage from Ollama's counts; an {"error":…}
// line after content ends the stream with an error the SDK's stream reports (Err), not a
// clean end that passes half an answer off as whole.
func TestSDKOllamaToolCallsAndStreamError(t *testing.T) {
	const calls = `{"model":"qwen3:8b","created_at":"2026-01-02T15:04:05.1Z","message":{"role":"assistant","content":"","tool_calls":[` +
		`{"id":"call_x1y2z3w4","function":{"index":0,"name":"get_weather","arguments":{"city":"Fès","unit":"c"}}},` +
		`{"id":"call_k9m8n7p6","function":{"index":1,"name":"get_time","arguments":{"tz":"Africa/Casablanca"}}}]},"done":false}`
	const done = `{"model":"qwen3:8b","created_at":"2026-01-02T15:04:05.2Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":40,"eval_count":30}`
	up := newAdUpstream(t, func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		msgs, _ := body["messages"].([]any)
		first, _ := msgs[0].(map[string]any)
		if first["content"] == "crash" {
			w.Header().Set("Content-Type", "application/x-ndjson")
			_, _ = io.WriteString(w, `{"model":"qwen3:8b","created_at":"2026-01-02T15:04:05.1Z","message":{"role":"assistant","content":"Half an"},"done":false}`+"\n")
			_, _ = io.WriteString(w, `{"error":"an error was encountered while running the model: unexpected EOF"}`+"\n")
			return
		}
		if body["stream"] == false {
			var m map[string]any
			_ = json.Unmarshal([]byte(calls), &m)
			var d map[string]any
			_ = json.Unmarshal([]byte(done), &d)
			d["message"] = m["message"]
			_ = json.NewEncoder(w).Encode(d)
			return
		}
		_, _ = io.WriteString(w, calls+"\n"+done+"\n")
	})
	c := adClient(t, fmt.Sprintf(`
[targets.qwen]
adapter = "ollama"
url     = %q
model   = "qwen3:8b"

[routes.local]
targets = ["qwen"]
`, up.srv.URL))
	ctx := context.Background()
	tools := []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather"}),
		openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_time"}),
	}
	p := openai.ChatCompletionNewParams{Model: "local", Tools: tools,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather and time in Fès?")}}
	check := func(t *testing.T, got openai.ChatCompletion) {
		t.Helper()
		ch := got.Choices[0]
		tc := ch.Message.ToolCalls
		if ch.FinishReason != "tool_calls" || len(tc) != 2 ||
			tc[0].ID != "call_x1y2z3w4" || tc[0].Type != "function" || tc[0].Function.Name != "get_weather" ||
			tc[0].Function.Arguments != `{"city":"Fès","unit":"c"}` ||
			tc[1].ID != "call_k9m8n7p6" || tc[1].Function.Name != "get_time" || tc[1].Function.Arguments != `{"tz":"Africa/Casablanca"}` {
			t.Fatalf("answer %+v", ch)
		}
		if got.Usage.PromptTokens != 40 || got.Usage.CompletionTokens != 30 || got.Model != "qwen3:8b" {
			t.Fatalf("usage %+v, model %q", got.Usage, got.Model)
		}
	}
	t.Run("whole", func(t *testing.T) {
		got, err := c.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		check(t, *got)
	})
	t.Run("stream", func(t *testing.T) {
		sp := p
		sp.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		st := c.Chat.Completions.NewStreaming(ctx, sp)
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			if !acc.AddChunk(st.Current()) {
				t.Fatalf("the accumulator refused chunk %s", st.Current().RawJSON())
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		check(t, acc.ChatCompletion)
	})
	t.Run("error line mid-stream", func(t *testing.T) {
		sp := p
		sp.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("crash")}
		st := c.Chat.Completions.NewStreaming(ctx, sp)
		var text string
		for st.Next() {
			for _, ch := range st.Current().Choices {
				text += ch.Delta.Content
			}
		}
		err := st.Err()
		if err == nil || !strings.Contains(err.Error(), "stream_interrupted") || !strings.Contains(err.Error(), "unexpected EOF") {
			t.Fatalf("stream Err() = %v after %q; want the upstream's error surfaced", err, text)
		}
		if text != "Half an" {
			t.Fatalf("content before the error %q", text)
		}
	})
}
