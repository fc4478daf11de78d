package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// clientGateway serves routes "openai", "ollama" and "saif", one target each, in front of
// upstreams that answer every request with a short text.
func clientGateway(t *testing.T) *live {
	t.Helper()
	oa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if streamed(r) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,`+
				`"delta":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/embeddings") {
			_, _ = io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AAAAPw=="}],"model":"m"}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	ol := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = streamed(r) // one object is also a whole NDJSON stream
		if strings.HasSuffix(r.URL.Path, "/api/embed") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"model":"m","embeddings":[[0.5]],"prompt_eval_count":1}`)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"ok"},`+
			`"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":1}`)
	}))
	sa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if streamed(r) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"text\":\"ok\",\"specialist\":\"webapp\"}\n\n"+
				"data: {\"done\":true,\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"s1","specialist":"webapp","routed_by":"router","text":"ok","finish_reason":"stop",`+
			`"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	for _, s := range []*httptest.Server{oa, ol, sa} {
		t.Cleanup(s.Close)
	}
	c, err := config.Parse([]byte(fmt.Sprintf(`
[targets.oa]
adapter = "openai"
url     = %q
model   = "m"
tools   = true
vision  = true

[targets.ol]
adapter = "ollama"
url     = %q
model   = "m"
tools   = true
vision  = true

[targets.sa]
adapter = "saif"
url     = %q
tools   = false
vision  = false

[routes.openai]
targets = ["oa"]
[routes.ollama]
targets = ["ol"]
[routes.saif]
targets = ["sa"]
`, oa.URL, ol.URL, sa.URL)), "clients.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return serveLive(t, srv.Handler())
}

// streamed reads r's body and reports whether it asks for a stream.
func streamed(r *http.Request) bool {
	var b struct {
		Stream bool `json:"stream"`
	}
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &b)
	return b.Stream
}

// sdkBody is a chat body as the openai-go SDK writes it with the settings an application
// commonly sets, its model "MODEL".
func sdkBody(t *testing.T) string {
	p := openai.ChatCompletionNewParams{Model: "MODEL",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.DeveloperMessage("d"),
			{OfUser: &openai.ChatCompletionUserMessageParam{Name: openai.String("alice"),
				Content: openai.ChatCompletionUserMessageParamContentUnion{OfString: openai.String("hi")}}},
			openai.AssistantMessage("hello"),
			openai.UserMessage("again"),
		},
		N: openai.Int(1), User: openai.String("u"), Store: openai.Bool(false), Metadata: shared.Metadata{"k": "v"},
		Logprobs: openai.Bool(false), TopLogprobs: openai.Int(0), MaxTokens: param.Null[int64](),
		ReasoningEffort: shared.ReasoningEffortLow, Modalities: []string{"text"},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfText: &shared.ResponseFormatTextParam{}},
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Bodies shaped as real clients send them in normal use reach the upstream through every
// adapter that can serve them: the gateway refuses none of them itself.
func TestRealClientBodiesAreServed(t *testing.T) {
	g := clientGateway(t)
	const user = `{"role":"user","content":"hi"}`
	tests := []struct {
		client string
		body   string // "MODEL" stands for the route
		skip   string // a route whose targets truly cannot serve the body (declared capabilities)
	}{
		{"openai-python defaults", `{"model":"MODEL","messages":[` + user + `]}`, ""},
		{"LangChain ChatOpenAI", `{"model":"MODEL","messages":[` + user + `],"stream":false,"n":1,"temperature":0.7}`, ""},
		{"LangChain ChatOpenAI streaming", `{"model":"MODEL","messages":[` + user + `],"stream":true,"stream_options":{"include_usage":true}}`, ""},
		{"Open WebUI params", `{"model":"MODEL","messages":[{"role":"system","content":"s"},` + user + `],"stream":true,` +
			`"max_tokens":null,"seed":42,"stop":["\n\n"],"logit_bias":{},"reasoning_effort":"low","user":"u1"}`, ""},
		{"LibreChat", `{"model":"MODEL","messages":[` + user + `],"user":"6650f0","stream":true,"top_p":1,"presence_penalty":0,"frequency_penalty":0}`, ""},
		{"openai-go zero values", `{"model":"MODEL","messages":[` + user + `],"logprobs":false,"top_logprobs":0,"metadata":{},"store":false,` +
			`"response_format":{"type":"text"},"modalities":["text"],"parallel_tool_calls":true,"tool_choice":"auto","functions":[],"tools":[]}`, ""},
		{"Vercel AI SDK tool round", `{"model":"MODEL","messages":[` + user + `,{"role":"assistant","content":"",` +
			`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"42"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],` +
			`"tool_choice":"auto"}`, "saif"},
		{"LangChain tool history, content null and parts", `{"model":"MODEL","messages":[` + user + `,{"role":"assistant","content":null,` +
			`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"42"}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`, "saif"},
		{"OpenAI Python message echoed back", `{"model":"MODEL","messages":[` + user + `,{"role":"assistant","content":"hello","refusal":null,` +
			`"annotations":[],"audio":null,"function_call":null,"tool_calls":null},` + user + `]}`, ""},
		{"names and developer role", `{"model":"MODEL","messages":[{"role":"developer","content":"d"},{"role":"user","name":"alice","content":"hi"}]}`, ""},
		{"Continue text parts", `{"model":"MODEL","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":4096,"stream":true}`, ""},
		{"Open WebUI image with detail", `{"model":"MODEL","messages":[{"role":"user","content":[{"type":"text","text":"what?"},` +
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"}}]}]}`, "saif"},
		{"json_schema structured output", `{"model":"MODEL","messages":[` + user + `],"response_format":{"type":"json_schema",` +
			`"json_schema":{"name":"x","strict":true,"schema":{"type":"object","properties":{}}}}}`, "saif"},
		{"json_object", `{"model":"MODEL","messages":[` + user + `],"response_format":{"type":"json_object"}}`, "saif"},
		{"audio off", `{"model":"MODEL","messages":[` + user + `],"modalities":["text"],"audio":null}`, ""},
		{"LangChain legacy OpenAI completions", `{"model":"MODEL","prompt":["hi"],"temperature":0.7,"top_p":1,"frequency_penalty":0,` +
			`"presence_penalty":0,"n":1,"logit_bias":{},"max_tokens":256,"seed":null,"logprobs":null,"best_of":1,"echo":false,"suffix":null}`, "ollama"},
		{"openai-python embeddings default", `{"model":"MODEL","input":"hi","encoding_format":"base64"}`, "saif"},
		{"Vercel AI SDK toolChoice none", `{"model":"MODEL","messages":[` + user + `],` +
			`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"none"}`, ""},
		{"Continue legacy completions", `{"model":"MODEL","prompt":"def f(","max_tokens":128,"temperature":0.01,"stop":["\n\n"],"stream":true}`, "ollama"},
		{"Cline", `{"model":"MODEL","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"<task>hi</task>"}]}],` +
			`"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`, ""},
		{"openai-go typical", sdkBody(t), ""},
	}
	for _, tt := range tests {
		path := "/v1/chat/completions"
		switch {
		case strings.Contains(tt.body, `"prompt"`):
			path = "/v1/completions"
		case strings.Contains(tt.body, `"input"`):
			path = "/v1/embeddings"
		}
		for _, route := range []string{"openai", "ollama", "saif"} {
			if route == tt.skip {
				continue
			}
			t.Run(tt.client+"/"+route, func(t *testing.T) {
				body := strings.Replace(tt.body, "MODEL", route, 1)
				resp, err := g.client.Post(g.URL+path, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", resp.StatusCode, got)
				}
			})
		}
	}
}

// An openai target declared without tools may serve a request whose tools come with
// tool_choice "none" (a text answer), and then never receives them: an upstream without tool
// support (llama-server without --jinja) refuses a body that has them, as a request error that
// would stop the chain.
func TestToolsWithChoiceNoneNotSentToATargetWithout(t *testing.T) {
	up := newFake(t, "plain")
	g := newGateway(t, target("plain", up.url(), "private", "tools = false")+"[routes.r]\ntargets = [\"plain\"]\n", nil)
	const tools = `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
	rep := g.post(t, "/v1/chat/completions", `{"model":"r",`+tools+`,"tool_choice":"none","parallel_tool_calls":false,"messages":[{"role":"user","content":"x"}]}`)
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "plain" {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	up.mu.Lock()
	sent := string(up.bodies[len(up.bodies)-1])
	up.mu.Unlock()
	for _, k := range []string{`"tools"`, `"tool_choice"`, `"parallel_tool_calls"`} {
		if strings.Contains(sent, k) {
			t.Errorf("the upstream got %s: %s", k, sent)
		}
	}
	if !strings.Contains(sent, `"messages"`) || !strings.Contains(sent, `"model":"plain"`) {
		t.Errorf("the rest of the body did not go through: %s", sent)
	}
	// An allowed_tools that lists no tool offers none, as "none" does: the target serves it,
	// without the tools (TestToolsWithChoiceNoneNotSentToATargetWithout's allowed_tools requests
	// were refused 400 first, the target dropped by the tools filter). One that lists a custom
	// tool alone offers it (TestAllowedCustomToolIsOffered).
	for _, choice := range []string{
		`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`,
		`{"type":"allowed_tools","mode":"auto","tools":[]}`,
	} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"r",`+tools+`,"tool_choice":`+choice+`,"messages":[{"role":"user","content":"x"}]}`)
		if rep.status != 200 || rep.header.Get("x-hayula-chain") != "plain" {
			t.Fatalf("tool_choice %s: %d %s", choice, rep.status, rep.body)
		}
		up.mu.Lock()
		sent := string(up.bodies[len(up.bodies)-1])
		up.mu.Unlock()
		if strings.Contains(sent, `"tools"`) || strings.Contains(sent, `"tool_choice"`) {
			t.Errorf("tool_choice %s: the upstream got the tools: %s", choice, sent)
		}
	}
	// One that lists a function tool is passed by, as "auto" is.
	if rep := g.post(t, "/v1/chat/completions", `{"model":"r",`+tools+`,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f"}}]}},"messages":[{"role":"user","content":"x"}]}`); rep.status != 400 {
		t.Errorf("allowed_tools listing f on a target without tools: %d %s", rep.status, rep.body)
	}
	// With tool_choice "auto" the target is passed by: it cannot serve what is asked.
	if rep := g.post(t, "/v1/chat/completions", `{"model":"r",`+tools+`,"tool_choice":"auto","messages":[{"role":"user","content":"x"}]}`); rep.status != 400 {
		t.Errorf("tool_choice auto on a target without tools: %d %s", rep.status, rep.body)
	}
}
