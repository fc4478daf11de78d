package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
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

// TestOllamaReasoningSwitches: OpenRouter's reasoning object's exclude, which the ollama adapter
// did not read, has the model think as the rest of the request asks and keeps its thinking from
// the client: no reasoning_content, whole or streamed, whether Ollama split the thinking out
// itself or the target's reasoning setting splits it from the content. The answer is left whole.
// (The object's enabled and max_tokens are TestOllamaParams' rows.)
func TestOllamaReasoningSwitches(t *testing.T) {
	for _, tt := range []struct {
		name      string
		reasoning core.Reasoning
		lines     []string // what Ollama answers streamed; the whole answer is their sum
	}{
		{"Ollama's thinking", core.ReasoningPassthrough, []string{
			`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"","thinking":"Hm, "},"done":false}`,
			`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"","thinking":"sun."},"done":false}`,
			`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"Sunny."},"done":false}`,
			`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":3}`,
		}},
		{"think-tags", core.ReasoningThinkTags, []string{
			`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"<think>Hm"},"done":false}`,
			`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"</thi"},"done":false}`,
			`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"nk>Sunny."},"done":false}`,
			`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":3}`,
		}},
		{"think-open", core.ReasoningThinkOpen, []string{
			`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"Hm"},"done":false}`,
			`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"</think>"},"done":false}`,
			`{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"Sunny."},"done":true,"done_reason":"stop","prompt_eval_count":1,"eval_count":3}`,
		}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: "/whole", true: "/stream"}[stream], func(t *testing.T) {
				var sent []byte
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					sent, _ = io.ReadAll(r.Body)
					if stream {
						_, _ = io.WriteString(w, strings.Join(tt.lines, "\n")+"\n")
						return
					}
					_, _ = io.WriteString(w, wholeOf(t, tt.lines))
				}))
				defer srv.Close()
				tg := ollamaTarget(srv.URL)
				tg.Reasoning = tt.reasoning
				body := `{"messages":[{"role":"user","content":"Weather?"}],"reasoning":{"effort":"high","exclude":true},"stream":` +
					map[bool]string{false: "false", true: "true"}[stream] + `}`
				resp, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, body))
				if err != nil {
					t.Fatal(err)
				}
				var out []byte
				if stream {
					for {
						ev, err := resp.Stream.Next()
						if errors.Is(err, io.EOF) {
							break
						}
						if err != nil {
							t.Fatal(err)
						}
						out = append(append(out, ev...), '\n')
					}
					resp.Stream.Close()
				} else {
					out = resp.Body
				}
				if !strings.Contains(string(sent), `"think":"high"`) {
					t.Errorf("Ollama was sent %s, want think high", sent)
				}
				if strings.Contains(string(out), "reasoning") || strings.Contains(string(out), "Hm") {
					t.Errorf("the client got the thinking:\n%s", out)
				}
				if !strings.Contains(string(out), "Sunny.") {
					t.Errorf("the client lost the answer:\n%s", out)
				}
			})
		}
	}
}

// TestOllamaOlderThinkLevelIsTheTargets: an Ollama older than its thinking budgets refuses think
// "max" or "minimal" (which the gateway sends as the client wrote them) with a 400 of its JSON
// decoding. That is the target's failure, as a model that cannot think is: the chain moves on to
// a newer Ollama, and alone, the client gets Ollama's 400 as it came.
func TestOllamaOlderThinkLevelIsTheTargets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid think value: \"max\" (must be \"high\", \"medium\", \"low\", true, or false)"}`)
	}))
	defer srv.Close()
	tg := ollamaTarget(srv.URL)
	_, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"think":"max"}`))
	var unmet *core.UnmetError
	var se *core.StatusError
	if !errors.As(err, &unmet) || !errors.As(err, &se) || se.Status != http.StatusBadRequest || !strings.Contains(se.Message, "invalid think value") {
		t.Fatalf("err = %#v, want Ollama's 400 as the target's failure", err)
	}
}
