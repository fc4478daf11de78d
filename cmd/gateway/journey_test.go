//go:build unix

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// journeyUpstream is a fake model server of one protocol on loopback: Ollama's native API
// ("ollama") or the OpenAI API under /v1 ("openai"). It answers "hi from NAME", or 500 while
// failing is set, and records the chat requests: the Authorization each came with, the model it
// named and, for Ollama, the num_ctx of its options.
type journeyUpstream struct {
	*httptest.Server
	name    string
	failing atomic.Bool

	mu    sync.Mutex
	chats []journeyChat
}

// journeyChat is one chat request a journeyUpstream was sent.
type journeyChat struct {
	auth, model string
	stream      bool
	numCtx      int // options.num_ctx; 0 when not sent
}

func newJourneyUpstream(t *testing.T, protocol, name string) *journeyUpstream {
	u := &journeyUpstream{name: name}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model   string `json:"model"`
			Stream  *bool  `json:"stream"`
			Options struct {
				NumCtx int `json:"num_ctx"`
			} `json:"options"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		chat := r.Method == http.MethodPost && (protocol == "ollama" && r.URL.Path == "/api/chat" ||
			protocol == "openai" && r.URL.Path == "/v1/chat/completions")
		if !chat {
			if r.Method == http.MethodGet && (r.URL.Path == "/api/tags" || r.URL.Path == "/v1/models") {
				fmt.Fprint(w, `{"models":[],"object":"list","data":[]}`)
				return
			}
			http.NotFound(w, r)
			return
		}
		u.mu.Lock()
		streamed := body.Stream != nil && *body.Stream || protocol == "ollama" && body.Stream == nil
		u.chats = append(u.chats, journeyChat{auth: r.Header.Get("Authorization"), model: body.Model,
			stream: streamed, numCtx: body.Options.NumCtx})
		u.mu.Unlock()
		if u.failing.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"message":"engine died","type":"server_error"}}`)
			return
		}
		text := "hi from " + name
		switch {
		case protocol == "ollama":
			// Ollama streams unless told not to.
			done := `{"model":%q,"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":5,"eval_count":3}`
			if body.Stream == nil || *body.Stream {
				w.Header().Set("Content-Type", "application/x-ndjson")
				fmt.Fprintf(w, `{"model":%q,"message":{"role":"assistant","content":%q},"done":false}`+"\n", body.Model, text)
				fmt.Fprintf(w, done+"\n", body.Model)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"model":%q,"message":{"role":"assistant","content":%q},"done":true,"done_reason":"stop","prompt_eval_count":5,"eval_count":3}`, body.Model, text)
		case body.Stream != nil && *body.Stream:
			w.Header().Set("Content-Type", "text/event-stream")
			chunk := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":%q,"choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`
			fmt.Fprintf(w, "data: "+chunk+"\n\n", body.Model, fmt.Sprintf(`{"role":"assistant","content":%q}`, text), "null")
			fmt.Fprintf(w, "data: "+chunk+"\n\n", body.Model, "{}", `"stop"`)
			fmt.Fprint(w, "data: [DONE]\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`, body.Model, text)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *journeyUpstream) chatAuths() []string {
	var auths []string
	for _, c := range u.chatList() {
		auths = append(auths, c.auth)
	}
	return auths
}

func (u *journeyUpstream) chatList() []journeyChat {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]journeyChat(nil), u.chats...)
}

// serveJourney checks the file as the user would (check-config), then runs gateway serve with it
// until the test ends, and returns the gateway's base URL and its log.
func serveJourney(t *testing.T, cfg string) (string, *syncBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCmd(t, "check-config", path); code != 0 {
		t.Fatalf("check-config: exit %d\n%s%s", code, out, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", path}, io.Discard, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Errorf("serve did not stop")
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs)
		}
	})
	addrRE := regexp.MustCompile(`hayula gateway listening"? addr=(\S+)`)
	var base string
	waitFor(t, "the gateway to listen", func() bool {
		if m := addrRE.FindStringSubmatch(logs.String()); m != nil {
			base = "http://" + m[1]
		}
		return base != ""
	})
	return base, logs
}

func sha256Hex(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func journeyClient(base, key string) openai.Client {
	// No retries: each call below is one request, as the upstreams' counts assume.
	return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func hello(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}
}

// TestJourneyFromLiteLLM is the homelab that moves LiteLLM's proxy over, as CONFIG.md's LiteLLM
// section says to: an Ollama model, a vLLM server and an OpenRouter model (LiteLLM's
// model_list), router fallbacks as route chains, a master key and a virtual key held to one
// model (its models and rpm_limit), request timeouts. The config is checked and served by the
// gateway's own commands, and the official SDK is the client.
func TestJourneyFromLiteLLM(t *testing.T) {
	ollama := newJourneyUpstream(t, "ollama", "ollama")
	vllm := newJourneyUpstream(t, "openai", "vllm")
	openrouter := newJourneyUpstream(t, "openai", "openrouter")
	t.Setenv("OPENROUTER_API_KEY", "sk-or-journey")
	const adminKey, kidKey = "hk-journey-admin", "hk-journey-kid"
	base, logs := serveJourney(t, fmt.Sprintf(`listen = "127.0.0.1:0"

[[keys]]
name   = "admin"                 # LiteLLM's master_key
sha256 = %q

[[keys]]
name   = "kid"                   # a virtual key: models = ["llama3"], rpm_limit = 20
sha256 = %q
routes = ["llama3"]
rpm    = 20

[targets.ollama-llama]
adapter        = "ollama"
url            = %q
model          = "llama3.1:8b"
context_window = 8192
timeout        = "60s"           # LiteLLM's timeout

[targets.vllm-qwen]
adapter        = "openai"
url            = "%s/v1"
model          = "Qwen/Qwen2.5-7B-Instruct"
timeout        = "60s"

[targets.openrouter]
adapter     = "openai"
url         = "%s/v1"
model       = "openai/gpt-4o-mini"
class       = "public"
api_key_env = "OPENROUTER_API_KEY"

[routes.llama3]
targets = ["ollama-llama", "openrouter"]   # fallbacks: [{"llama3": ["gpt-4o-mini"]}]

[routes.qwen]
targets = ["vllm-qwen", "ollama-llama"]

[routes."gpt-4o-mini"]
targets = ["openrouter"]
`, sha256Hex(adminKey), sha256Hex(kidKey), ollama.URL, vllm.URL, openrouter.URL))
	ctx := context.Background()
	admin, kid := journeyClient(base, adminKey), journeyClient(base, kidKey)

	models := func(c openai.Client) []string {
		t.Helper()
		page, err := c.Models.List(ctx)
		if err != nil {
			t.Fatalf("models: %v", err)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		return ids
	}
	if got := strings.Join(models(admin), " "); got != "gpt-4o-mini llama3 qwen" {
		t.Errorf("the master key's models: %s", got)
	}
	if got := strings.Join(models(kid), " "); got != "llama3" {
		t.Errorf("the kid's models: %s", got)
	}

	for route, want := range map[string]string{"llama3": "ollama", "qwen": "vllm", "gpt-4o-mini": "openrouter"} {
		var resp *http.Response
		got, err := admin.Chat.Completions.New(ctx, hello(route), option.WithResponseInto(&resp))
		if err != nil {
			t.Fatalf("%s: %v", route, err)
		}
		if got.Choices[0].Message.Content != "hi from "+want || resp.Header.Get("X-Hayula-Chain") == "" {
			t.Errorf("%s: %q, chain %q; want %s's answer", route, got.Choices[0].Message.Content, resp.Header.Get("X-Hayula-Chain"), want)
		}
	}
	st := admin.Chat.Completions.NewStreaming(ctx, hello("llama3"))
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "hi from ollama" {
		t.Errorf("llama3 streamed: %+v, %v", acc.Choices, err)
	}

	// Ollama fails: llama3 falls back to OpenRouter, which gets the key from the environment.
	ollama.failing.Store(true)
	var resp *http.Response
	got, err := admin.Chat.Completions.New(ctx, hello("llama3"), option.WithResponseInto(&resp))
	if err != nil || got.Choices[0].Message.Content != "hi from openrouter" ||
		resp.Header.Get("X-Hayula-Chain") != "ollama-llama→openrouter (served by openrouter)" {
		t.Errorf("llama3 with Ollama failing: %v, chain %q", err, resp.Header.Get("X-Hayula-Chain"))
	}
	auths := openrouter.chatAuths()
	if len(auths) == 0 || auths[len(auths)-1] != "Bearer sk-or-journey" {
		t.Errorf("OpenRouter was sent Authorization %q", auths)
	}
	// A request that must stay private does not fall back to OpenRouter.
	before := len(openrouter.chatAuths())
	_, err = admin.Chat.Completions.New(ctx, hello("llama3"), option.WithHeader("x-hayula-privacy", "strict"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError || len(openrouter.chatAuths()) != before {
		t.Errorf("a strict request with Ollama failing: %v; OpenRouter asked %d more times", err, len(openrouter.chatAuths())-before)
	}
	ollama.failing.Store(false)

	// The virtual key may use its one model only.
	_, err = kid.Chat.Completions.New(ctx, hello("qwen"))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" {
		t.Errorf("the kid asking for qwen: %v", err)
	}
	if _, err := kid.Chat.Completions.New(ctx, hello("llama3")); err != nil {
		t.Errorf("the kid asking for llama3: %v", err)
	}
	// The key never reaches the log.
	if strings.Contains(logs.String(), "sk-or-journey") || strings.Contains(logs.String(), kidKey) {
		t.Errorf("a key in the log:\n%s", logs)
	}
}

// TestJourneyPrivacyStrict is a gateway run for privacy: every route strict, so that no prompt
// reaches a third party whatever fails. A rented server, class "public", is listed last in a
// route (for when the local ones fail, as its user hopes); the local ones fail, stream and
// whole, and the rented one is never asked.
func TestJourneyPrivacyStrict(t *testing.T) {
	ollama := newJourneyUpstream(t, "ollama", "ollama")
	vllm := newJourneyUpstream(t, "openai", "vllm")
	rented := newJourneyUpstream(t, "openai", "rented")
	base, _ := serveJourney(t, fmt.Sprintf(`listen = "127.0.0.1:0"

[targets.llama]
adapter        = "ollama"
url            = %q
model          = "llama3.1:8b"
context_window = 8192

[targets.qwen]
adapter        = "openai"
url            = "%s/v1"
model          = "Qwen/Qwen2.5-7B-Instruct"

[targets.rented-gpu]
adapter = "openai"
url     = "%s/v1"
model   = "Qwen/Qwen2.5-72B-Instruct"
class   = "public"

[routes.chat]
targets = ["qwen", "llama", "rented-gpu"]
strict  = true

[routes.llama]
targets = ["llama"]
strict  = true
`, ollama.URL, vllm.URL, rented.URL))
	ctx := context.Background()
	c := journeyClient(base, "unused") // an open gateway on loopback: any key, as the SDK needs one
	for route, want := range map[string]string{"chat": "vllm", "llama": "ollama"} {
		got, err := c.Chat.Completions.New(ctx, hello(route))
		if err != nil || got.Choices[0].Message.Content != "hi from "+want {
			t.Errorf("%s: %v %v", route, got, err)
		}
	}
	ollama.failing.Store(true)
	vllm.failing.Store(true)
	var resp *http.Response
	_, err := c.Chat.Completions.New(ctx, hello("chat"), option.WithResponseInto(&resp))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError {
		t.Errorf("chat with every private target failing: %v", err)
	}
	st := c.Chat.Completions.NewStreaming(ctx, hello("chat"))
	for st.Next() {
		t.Errorf("an event with every private target failing: %+v", st.Current())
	}
	if !errors.As(st.Err(), &apiErr) || apiErr.StatusCode != http.StatusInternalServerError {
		t.Errorf("chat streamed with every private target failing: %v", st.Err())
	}
	if n := len(rented.chatAuths()); n != 0 {
		t.Errorf("the public target was asked %d times", n)
	}
}
