package upstream

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOllamaNativeOptions: Ollama's own top-level options, format and keep_alive, which clients
// moving from /api/chat, LiteLLM's extra_body and Open WebUI's custom parameters send in an
// OpenAI-shaped body, reach an Ollama target: the options merged with what the gateway sets from
// OpenAI's fields (which win where both name one; the runner's options, which reload the model for
// every client, are not sent), format when response_format asks for none, and truncate false
// still. Before, all three were dropped without a word. An openai target gets the body as the
// client wrote it.
func TestOllamaNativeOptions(t *testing.T) {
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.5,` +
		`"options":{"temperature":0.1,"num_ctx":16384,"repeat_last_n":64,"num_gpu":0},` +
		`"format":{"type":"object"},"keep_alive":"10m"}`
	ol := &recorder{answer: `{"model":"llama3.2","message":{"role":"assistant","content":"{}"},"done":true,"done_reason":"stop"}`}
	olSrv := httptest.NewServer(ol)
	defer olSrv.Close()
	tg := ollamaTarget(olSrv.URL)
	if _, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, body)); err != nil {
		t.Fatal(err)
	}
	got := ol.last(t)
	want := map[string]any{"temperature": 0.5, "num_ctx": 16384.0, "repeat_last_n": 64.0}
	if diff := cmp.Diff(want, got["options"]); diff != "" {
		t.Errorf("Ollama's options (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"type": "object"}, got["format"]); diff != "" {
		t.Errorf("Ollama's format (-want +got):\n%s", diff)
	}
	if got["keep_alive"] != "10m" || got["truncate"] != false {
		t.Errorf("keep_alive %v, truncate %v; want 10m and false", got["keep_alive"], got["truncate"])
	}

	oa := &recorder{answer: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}]}`}
	oaSrv := httptest.NewServer(oa)
	defer oaSrv.Close()
	otg := target(oaSrv.URL)
	if _, err := newSet(t, otg).Chat(context.Background(), otg, chatRequestOf(t, body)); err != nil {
		t.Fatal(err)
	}
	sent := oa.last(t)
	for k, v := range map[string]any{
		"options": map[string]any{"temperature": 0.1, "num_ctx": 16384.0, "repeat_last_n": 64.0, "num_gpu": 0.0},
		"format":  map[string]any{"type": "object"}, "keep_alive": "10m",
	} {
		if diff := cmp.Diff(v, sent[k]); diff != "" {
			t.Errorf("openai target's %s (-want +got):\n%s", k, diff)
		}
	}
}
