package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// wireGateway serves routes "openai", "ollama" and "saif", one target each, in front of
// upstreams that keep what they were sent and answer whole or streamed as their protocol says;
// the openai one sends a usage chunk only when asked for it, as OpenAI does.
func wireGateway(t *testing.T) (*gateway, map[string]*adUpstream) {
	t.Helper()
	const chunk = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":%s%s}` + "\n\n"
	oa := newAdUpstream(t, func(w http.ResponseWriter, _ *http.Request, body map[string]any) {
		if body["stream"] == true {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, chunk, `[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]`, "")
			fmt.Fprintf(w, chunk, `[{"index":0,"delta":{},"finish_reason":"stop"}]`, "")
			if so, _ := body["stream_options"].(map[string]any); so["include_usage"] == true {
				fmt.Fprintf(w, chunk, `[]`, `,"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}`)
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	})
	ol := newAdUpstream(t, func(w http.ResponseWriter, _ *http.Request, body map[string]any) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		if body["stream"] == true {
			fmt.Fprint(w, `{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"ok"},"done":false}`+"\n")
			fmt.Fprint(w, `{"model":"m","created_at":"2026-01-02T15:04:06Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":1}`+"\n")
			return
		}
		fmt.Fprint(w, `{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"ok"},"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":1}`)
	})
	sa := newAdUpstream(t, saifScript)
	g := newGateway(t, fmt.Sprintf(`
[targets.oa]
adapter = "openai"
url     = %q
model   = "m"
class   = "private"

[targets.ol]
adapter = "ollama"
url     = %q
model   = "m"
class   = "private"

[targets.sa]
adapter = "saif"
url     = %q
class   = "private"
tools   = false
vision  = false

[routes.openai]
targets = ["oa"]
[routes.ollama]
targets = ["ol"]
[routes.saif]
targets = ["sa"]
`, oa.srv.URL+"/v1", ol.srv.URL, sa.srv.URL), nil)
	return g, map[string]*adUpstream{"openai": oa, "ollama": ol, "saif": sa}
}

// TestClientRequestsThroughEveryAdapter sends each popular client's typical chat request, whole
// and streamed, as the client writes it, to a route on each adapter, and checks what the client
// reads of the answer: a whole answer's id, object, created, model, message and usage; on every
// chunk of a stream id (the same throughout), object, created and model; the usage chunk last
// (choices empty) when the client asked for include_usage, and none when it did not; data:
// [DONE] at the end. A request a target cannot serve (tools, or format "json", on SAIF) is refused 400
// unsupported_request, never answered without what it asked. Each client's thinking setting
// reaches Ollama as think: Open WebUI's reasoning object, its "think (Ollama)" parameter and a
// chat_template_kwargs enable_thinking were dropped, and a client that turned thinking off got a
// model that thought.
func TestClientRequestsThroughEveryAdapter(t *testing.T) {
	const tools = `"tools":[{"type":"function","function":{"name":"read_file","description":"Read a file",` +
		`"parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"strict":true}}]`
	tests := []struct {
		client string
		body   string // "MODEL" stands for the route; "STREAM" for true or false
		usage  bool   // the client asks for include_usage when it streams
		noSAIF bool   // the request offers tools, or asks Ollama's format for JSON: SAIF cannot serve it
		think  any    // the think Ollama must get; nil for none
	}{
		// Open WebUI's openai router: a system message with the date, stream_options always
		// asked when streaming, cache_control on the last message's last part, reasoning_effort
		// sent as OpenRouter's reasoning object, metadata taken off before sending.
		{"Open WebUI chat", `{"model":"MODEL","messages":[{"role":"system","content":"Current Date: 2026-12-02 (UTC)"},` +
			`{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],` +
			`"stream":STREAM,"stream_options":{"include_usage":true},"reasoning":{"effort":"none"}}`, true, false, false},
		// A model's advanced parameters, applied to the body of an OpenAI connection as they are
		// named, Ollama's among them at the top.
		{"Open WebUI model parameters", `{"model":"MODEL","messages":[{"role":"user","content":"hi"}],"stream":STREAM,` +
			`"stream_options":{"include_usage":true},"temperature":0.6,"top_p":0.95,"max_tokens":1024,"seed":7,"stop":["\n\nUser:"],` +
			`"num_ctx":8192,"top_k":40,"min_p":0.05,"repeat_penalty":1.1,"mirostat":0,"num_gpu":99,"use_mmap":true,` +
			`"num_thread":8,"keep_alive":"5m","think":false}`, true, false, false},
		// A custom parameter, JSON in Open WebUI's form, goes into the body as an object: here
		// vLLM's and llama-server's switch for Qwen3's thinking.
		{"Open WebUI custom parameter", `{"model":"MODEL","messages":[{"role":"user","content":"hi"}],"stream":STREAM,` +
			`"stream_options":{"include_usage":true},"chat_template_kwargs":{"enable_thinking":false}}`, true, false, false},
		// Its title and tags generation: one user message, not streamed.
		{"Open WebUI title", `{"model":"MODEL","messages":[{"role":"user","content":"### Task:\nGenerate a concise title"}],"stream":STREAM}`,
			false, false, nil},
		{"Open WebUI native tools", `{"model":"MODEL","messages":[{"role":"user","content":"read a.txt"}],"stream":STREAM,` +
			`"stream_options":{"include_usage":true},` + tools + `,"tool_choice":"auto"}`, true, true, nil},
		{"LibreChat", `{"model":"MODEL","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"stream":STREAM,` +
			`"user":"6650f0aa","temperature":1,"top_p":1,"presence_penalty":0,"frequency_penalty":0,"stream_options":{"include_usage":true}}`, true, false, nil},
		{"Continue chat", `{"model":"MODEL","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]}],` +
			`"max_tokens":4096,"stream":STREAM,"stream_options":{"include_usage":true}}`, true, false, nil},
		{"Continue agent", `{"model":"MODEL","messages":[{"role":"user","content":"read a.txt"},{"role":"assistant","content":"",` +
			`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"42"}],"max_tokens":4096,"stream":STREAM,` + tools + `}`, false, true, nil},
		{"Cline", `{"model":"MODEL","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"<task>hi</task>"}]}],` +
			`"temperature":0,"stream":STREAM,"stream_options":{"include_usage":true}}`, true, false, nil},
		// Roo Code's OpenAI-compatible provider (src/api/providers/openai.ts): temperature 0,
		// stream_options, cache_control on the system prompt's part and on the last text part of
		// the last two user messages when the model is set to cache prompts, parallel_tool_calls
		// false with native tools, max_completion_tokens when a limit is set.
		{"Roo Code native tools", `{"model":"MODEL","messages":[{"role":"system","content":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"user","content":[{"type":"text","text":"<task>hi</task>"},{"type":"text","text":"<environment_details>","cache_control":{"type":"ephemeral"}}]}],` +
			`"temperature":0,"stream":STREAM,"stream_options":{"include_usage":true},"max_completion_tokens":8192,` +
			`"parallel_tool_calls":false,"tool_choice":"auto",` + tools + `}`, true, true, nil},
		{"Roo Code without tools", `{"model":"MODEL","messages":[{"role":"system","content":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],` +
			`"temperature":0,"stream":STREAM,"stream_options":{"include_usage":true}}`, true, false, nil},
		{"aider through litellm", `{"model":"MODEL","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],` +
			`"temperature":0,"stream":STREAM}`, false, false, nil},
		{"openai-python newer parameters", `{"model":"MODEL","messages":[{"role":"developer","content":"d"},{"role":"user","content":"hi"}],` +
			`"max_completion_tokens":100,"reasoning_effort":"minimal","parallel_tool_calls":false,"service_tier":"auto","store":false,` +
			`"metadata":{"a":"b"},"prediction":{"type":"content","content":"x"},"modalities":["text"],"web_search_options":{},` +
			`"verbosity":"low","stream":STREAM,"stream_options":{"include_usage":true,"include_obfuscation":false}}`, true, false, "low"},
		// LiteLLM's extra_body, or a script moved from OpenRouter and /api/chat: OpenRouter's
		// reasoning switches, Ollama's own options and format.
		{"OpenRouter reasoning off", `{"model":"MODEL","messages":[{"role":"user","content":"hi"}],"stream":STREAM,` +
			`"reasoning":{"enabled":false}}`, false, false, false},
		{"extra_body with Ollama's options", `{"model":"MODEL","messages":[{"role":"user","content":"hi"}],"stream":STREAM,` +
			`"reasoning":{"max_tokens":2000,"exclude":true},"options":{"num_ctx":8192,"repeat_last_n":64},"format":"json",` +
			`"chat_template_kwargs":{"thinking":false}}`, false, true, true},
		{"openai-node without usage", `{"model":"MODEL","messages":[{"role":"user","content":"hi"}],"stream":STREAM}`, false, false, nil},
	}
	g, ups := wireGateway(t)
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			for _, route := range []string{"openai", "ollama", "saif"} {
				t.Run(fmt.Sprintf("%s/stream=%v/%s", tt.client, stream, route), func(t *testing.T) {
					body := strings.Replace(strings.Replace(tt.body, "MODEL", route, 1), "STREAM", fmt.Sprint(stream), 1)
					req, err := http.NewRequest(http.MethodPost, g.ts.URL+"/v1/chat/completions", strings.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Content-Type", "application/json")
					resp, err := g.ts.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					if tt.noSAIF && route == "saif" {
						var e struct{ Error struct{ Code string } }
						if resp.StatusCode != http.StatusBadRequest || json.NewDecoder(resp.Body).Decode(&e) != nil ||
							e.Error.Code != "unsupported_request" {
							t.Fatalf("tools or format on SAIF: status %d, code %q; want 400 unsupported_request", resp.StatusCode, e.Error.Code)
						}
						return
					}
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("status %d", resp.StatusCode)
					}
					if stream {
						checkClientStream(t, resp, tt.usage)
					} else {
						checkClientWhole(t, resp)
					}
					if route == "ollama" {
						sent := ups["ollama"].last()
						if got := sent["think"]; got != tt.think {
							t.Errorf("Ollama got think %v, want %v", got, tt.think)
						}
					}
				})
			}
		}
	}
}

// checkClientWhole checks a whole chat answer for the members clients read.
func checkClientWhole(t *testing.T, resp *http.Response) {
	t.Helper()
	var a struct {
		ID, Object, Model string
		Created           int64
		Choices           []struct {
			Message struct {
				Role    string
				Content *string
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage *struct {
			TotalTokens int `json:"total_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if a.ID == "" || a.Object != "chat.completion" || a.Created <= 0 || a.Model == "" || len(a.Choices) != 1 ||
		a.Choices[0].Message.Role != "assistant" || a.Choices[0].Message.Content == nil || a.Choices[0].FinishReason != "stop" ||
		a.Usage == nil || a.Usage.TotalTokens <= 0 {
		t.Errorf("answer %+v", a)
	}
}

// checkClientStream checks a chat stream for the members clients read on each chunk, and for
// the usage chunk last when usage was asked for.
func checkClientStream(t *testing.T, resp *http.Response, usage bool) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q", ct)
	}
	type chunk struct {
		ID, Object, Model string
		Created           int64
		Choices           []json.RawMessage
		Usage             *struct {
			TotalTokens int `json:"total_tokens"`
		}
	}
	var chunks []chunk
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		if done {
			t.Errorf("an event after [DONE]: %s", line)
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			done = true
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		if c.ID == "" || c.Object != "chat.completion.chunk" || c.Created <= 0 || c.Model == "" {
			t.Errorf("chunk without what clients read: %s", data)
		}
		if len(chunks) > 0 && c.ID != chunks[0].ID {
			t.Errorf("chunk id %q after %q", c.ID, chunks[0].ID)
		}
		chunks = append(chunks, c)
	}
	if !done || len(chunks) == 0 {
		t.Fatalf("stream without [DONE] or chunks: %d chunks", len(chunks))
	}
	last := chunks[len(chunks)-1]
	if usage && (last.Usage == nil || last.Usage.TotalTokens <= 0 || len(last.Choices) != 0) {
		t.Errorf("asked for usage, the last chunk is %+v", last)
	}
	for i, c := range chunks {
		if c.Usage != nil && (!usage || i != len(chunks)-1) {
			t.Errorf("usage on chunk %d of %d (asked: %v)", i, len(chunks), usage)
		}
	}
}
