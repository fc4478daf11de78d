package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ollamaAnswer answers /api/chat with one whole Ollama answer.
func ollamaAnswer(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"model":"o","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":"ok"},"done":true,"done_reason":"stop"}`)
}

// ollamaAndOpenAI is a gateway with route "olla" on an Ollama target and route "oai" on an
// OpenAI-compatible one.
func ollamaAndOpenAI(t *testing.T) (g *gateway, oll, oai *fake) {
	t.Helper()
	oll, oai = newFake(t, "oll"), newFake(t, "oai")
	oll.set(ollamaAnswer)
	g = newGateway(t, "[targets.oll]\nadapter = \"ollama\"\nurl = \""+oll.srv.URL+"\"\nclass = \"private\"\nmodel = \"o\"\n\n"+
		target("oai", oai.url(), "private", `model = "m"`)+
		"[routes.olla]\ntargets = [\"oll\"]\n\n[routes.oai]\ntargets = [\"oai\"]\n", nil)
	return g, oll, oai
}

// TestOllamaReplaysReasoning: an assistant message's reasoning_content (or reasoning), which
// some clients send back with the history, reaches Ollama as the message's thinking, whichever
// decoder read the body; before, it was dropped. An OpenAI-compatible target gets the body as the
// client wrote it.
func TestOllamaReplaysReasoning(t *testing.T) {
	g, oll, oai := ollamaAndOpenAI(t)
	const history = `"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"42","reasoning_content":"6 times 7"},` +
		`{"role":"assistant","content":"43","reasoning":"one more"},{"role":"user","content":"why?"}]`
	for _, body := range []string{
		`{"model":"olla",` + history + `}`,
		`{"model":"olla","temperatur\u0065":1,` + history + `}`, // encoding/json's path
	} {
		rep := g.post(t, "/v1/chat/completions", body)
		if rep.status != 200 {
			t.Fatalf("%d %s", rep.status, rep.body)
		}
		want := []any{
			map[string]any{"role": "user", "content": "q"},
			map[string]any{"role": "assistant", "content": "42", "thinking": "6 times 7"},
			map[string]any{"role": "assistant", "content": "43", "thinking": "one more"},
			map[string]any{"role": "user", "content": "why?"},
		}
		if diff := cmp.Diff(want, oll.lastBody(t)["messages"]); diff != "" {
			t.Errorf("%s: messages (-want +got):\n%s", body, diff)
		}
	}
	if rep := g.post(t, "/v1/chat/completions", `{"model":"oai",`+history+`}`); rep.status != 200 {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	var sent struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	oai.mu.Lock()
	err := json.Unmarshal(oai.bodies[len(oai.bodies)-1], &sent)
	oai.mu.Unlock()
	if err != nil || len(sent.Messages) != 4 || string(sent.Messages[1]["reasoning_content"]) != `"6 times 7"` ||
		string(sent.Messages[2]["reasoning"]) != `"one more"` {
		t.Errorf("the OpenAI target got %+v (%v)", sent.Messages, err)
	}
}

// TestOllamaSamplingOptions: the sampling fields Ollama adds, which homelab clients moving off
// LiteLLM send in the body, reach Ollama (top_k, min_p and repeat_penalty in options, keep_alive
// at the top) where before they were dropped without a word; a client's num_ctx is not sent, the
// target's context_window is. An OpenAI-compatible target (llama-server, vLLM) reads them from the
// body as the client wrote it. A top_k that is no integer, or a min_p that is no number, is
// refused naming it, whichever the target, and nothing is asked; so, on an ollama target, is a
// keep_alive Ollama cannot read.
func TestOllamaSamplingOptions(t *testing.T) {
	g, oll, oai := ollamaAndOpenAI(t)
	const fields = `"top_k":20,"min_p":0.05,"repeat_penalty":1.1,"keep_alive":"30m","num_ctx":2048,"temperature":0.7`
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	rep := g.post(t, "/v1/chat/completions", `{"model":"olla",`+fields+`,`+msgs+`}`)
	if rep.status != 200 {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	got := oll.lastBody(t)
	want := map[string]any{"temperature": 0.7, "top_k": 20.0, "min_p": 0.05, "repeat_penalty": 1.1}
	if diff := cmp.Diff(want, got["options"]); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if got["keep_alive"] != "30m" {
		t.Errorf("keep_alive %v", got["keep_alive"])
	}
	if rep := g.post(t, "/v1/chat/completions", `{"model":"oai",`+fields+`,`+msgs+`}`); rep.status != 200 {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	sent := oai.lastBody(t)
	for k, v := range map[string]any{"top_k": 20.0, "min_p": 0.05, "repeat_penalty": 1.1, "keep_alive": "30m", "num_ctx": 2048.0} {
		if sent[k] != v {
			t.Errorf("the OpenAI target got %s %v, want %v", k, sent[k], v)
		}
	}

	before := oll.hits.Load() + oai.hits.Load()
	for _, tt := range []struct{ route, field, param, code string }{
		{"olla", `"top_k":"40"`, "top_k", "invalid_type"},
		{"oai", `"top_k":40.5`, "top_k", "invalid_type"},
		{"olla", `"min_p":"low"`, "min_p", "invalid_type"},
		{"oai", `"repeat_penalty":true`, "repeat_penalty", "invalid_type"},
		{"olla", `"keep_alive":"a while"`, "keep_alive", "invalid_value"},
		{"olla", `"keep_alive":false`, "keep_alive", "invalid_type"},
	} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"`+tt.route+`",`+tt.field+`,`+msgs+`}`)
		if rep.status != 400 || rep.errorField(t, "param") != tt.param || rep.errorField(t, "code") != tt.code {
			t.Errorf("%s on %s: %d %s", tt.field, tt.route, rep.status, rep.body)
		}
	}
	if after := oll.hits.Load() + oai.hits.Load(); after != before {
		t.Errorf("a refused request reached an upstream (%d asks)", after-before)
	}
}

// TestOllamaTopKWholeNumber: a top_k written as a whole number with a fraction or an exponent
// (40.0, as a Python client that computed it sends it; 1e2) is read as that integer by Ollama
// (its options take any JSON number for an integer), vLLM (pydantic's lax int) and llama-server
// alike, so the gateway serves it on either adapter, and sends Ollama the integer; before, it
// was refused as no integer. A fraction (40.5), which Ollama would cut without a word and vLLM
// refuses, is still refused naming top_k.
func TestOllamaTopKWholeNumber(t *testing.T) {
	g, oll, _ := ollamaAndOpenAI(t)
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, tt := range []struct {
		value string
		want  float64
	}{{"40.0", 40}, {"1e2", 100}, {"-1.0", -1}, {"4.0E1", 40}} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"olla","top_k":`+tt.value+`,`+msgs+`}`)
		if rep.status != 200 {
			t.Fatalf("top_k %s on ollama: %d %s", tt.value, rep.status, rep.body)
		}
		if diff := cmp.Diff(map[string]any{"top_k": tt.want}, oll.lastBody(t)["options"]); diff != "" {
			t.Errorf("top_k %s: options (-want +got):\n%s", tt.value, diff)
		}
		if rep := g.post(t, "/v1/chat/completions", `{"model":"oai","top_k":`+tt.value+`,`+msgs+`}`); rep.status != 200 {
			t.Errorf("top_k %s on openai: %d %s", tt.value, rep.status, rep.body)
		}
	}
	for _, route := range []string{"olla", "oai"} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"`+route+`","top_k":40.5,`+msgs+`}`)
		if rep.status != 400 || rep.errorField(t, "param") != "top_k" || rep.errorField(t, "code") != "invalid_type" {
			t.Errorf("top_k 40.5 on %s: %d %s", route, rep.status, rep.body)
		}
	}
}
