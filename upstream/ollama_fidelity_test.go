package upstream

// The Ollama fidelity review: what the adapter sends /api/chat against Ollama's current API
// (api/types.go Message and ToolCall; openai/openai.go FromChatRequest, which is how Ollama's own
// OpenAI endpoint fills them), each case against an httptest Ollama that keeps the request.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
)

// TestOllamaToolIDsSent: Ollama's Message carries tool_call_id and its ToolCall an id (its own
// OpenAI endpoint fills both from the client's tool_call_id and tool_calls[].id), and the
// templates and renderers that pair a result with its call by id (and llama.cpp's Jinja
// templates, which Ollama now runs for some models) read them. The adapter sent neither: a
// result reached the model as the tool's name alone, and two calls of one tool were told apart
// by position only.
func TestOllamaToolIDsSent(t *testing.T) {
	const client = `{"messages":[{"role":"user","content":"Weather in Fès and Rabat?"},` +
		`{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Fès\"}"}},` +
		`{"id":"call_b","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rabat\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_a","content":"sunny"},` +
		`{"role":"tool","tool_call_id":"call_b","content":"rain"},` +
		`{"role":"tool","name":"weather","content":"no id"}]}`
	var sent struct {
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				ID       *string `json:"id"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolName   string  `json:"tool_name"`
			ToolCallID *string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(sentToOllama(t, client), &sent); err != nil {
		t.Fatal(err)
	}
	type result struct{ Name, ID string }
	var calls, results []result
	for _, m := range sent.Messages {
		for _, c := range m.ToolCalls {
			r := result{Name: c.Function.Name, ID: "(none)"}
			if c.ID != nil {
				r.ID = *c.ID
			}
			calls = append(calls, r)
		}
		if m.Role == "tool" {
			r := result{Name: m.ToolName, ID: "(none)"}
			if m.ToolCallID != nil {
				r.ID = *m.ToolCallID
			}
			results = append(results, r)
		}
	}
	if diff := cmp.Diff([]result{{"weather", "call_a"}, {"weather", "call_b"}}, calls); diff != "" {
		t.Errorf("assistant tool_calls sent (-want +got):\n%s", diff)
	}
	// A result without an id is sent without one (omitted, not ""), as before.
	if diff := cmp.Diff([]result{{"weather", "call_a"}, {"weather", "call_b"}, {"weather", "(none)"}}, results); diff != "" {
		t.Errorf("tool results sent (-want +got):\n%s", diff)
	}
}

// TestOllamaChatNotTruncated: /api/chat's truncate defaults to true (server/routes.go ChatHandler,
// req.Truncate == nil || *req.Truncate): a prompt longer than num_ctx loses its oldest messages,
// and a runner cuts the rest from its start, and the answer says nothing of it. The context filter
// lets a prompt through by a lower bound of its tokens, so one that passed can still be longer
// than the window; OpenAI refuses such a prompt, and so does Ollama when asked not to cut: 400
// "the input length exceeds the context length" (the runner's errorInputTooLong; llama.cpp's
// exceed_context_size_error where Ollama runs llama-server), an overflow that moves the chain on
// to a target with a larger window, streamed or not.
func TestOllamaChatNotTruncated(t *testing.T) {
	for _, client := range []string{
		`{"messages":[{"role":"user","content":"x"}]}`,
		`{"messages":[{"role":"user","content":"x"}],"stream":true}`,
	} {
		var sent map[string]json.RawMessage
		if err := json.Unmarshal(sentToOllama(t, client), &sent); err != nil {
			t.Fatal(err)
		}
		if got := string(sent["truncate"]); got != "false" {
			t.Errorf("%s: /api/chat truncate = %q, want false", client, got)
		}
	}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"the input length exceeds the context length"}`)
	})
	for _, stream := range []bool{false, true} {
		tg := ollamaTarget(srv.URL)
		req := chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}]}`)
		req.Stream = stream
		_, err := newSet(t, tg).Chat(context.Background(), tg, req)
		if d := errmap.Classify(err); d.Class != core.ClassOverflow || d.Status != http.StatusBadRequest {
			t.Errorf("stream %v: Ollama's refusal classified %v %d (%v), want overflow 400", stream, d.Class, d.Status, err)
		}
	}
}

// sentToOllama serves /api/chat one done line, which answers a whole or a streamed request, and
// returns the request body the adapter sent.
func sentToOllama(t *testing.T, client string) []byte {
	t.Helper()
	got := make(chan []byte, 1)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, ollamaLine(`{"role":"assistant","content":"ok"}`, true, `"done_reason":"stop"`)+"\n")
	})
	tg := ollamaTarget(srv.URL)
	resp, err := newSet(t, tg).Chat(context.Background(), tg, chatRequestOf(t, client))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Stream != nil {
		_ = resp.Stream.Close()
	}
	return <-got
}

// TestOllamaEmbedNaNIsTheTargets: /api/embed answers 400 for every failure that is not an
// api.StatusError (server/routes.go EmbedHandler), among them normalize's "embedding contains NaN
// or Inf values", which is the model's answer to that input (bge-m3 on some token sequences), not
// the request's fault. As a 400 it was class request: the chain stopped there and the client was
// told its request was wrong. It is an embedding no client can use, the target's failure as a
// null or a NaN-less broken vector is (class endpoint: the chain moves on, nothing is retried, the
// target's health is not blamed), and alone the client gets 502 bad_upstream_response.
func TestOllamaEmbedNaNIsTheTargets(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"embedding contains NaN or Inf values"}`)
	})
	tg := ollamaTarget(srv.URL)
	req := clientRequest(t, []byte(`{"model":"m","input":["a","b"]}`))
	req.Op = core.OpEmbeddings
	_, err := newSet(t, tg).Chat(context.Background(), tg, req)
	d := errmap.Classify(err)
	se, _ := errors.AsType[*core.StatusError](err)
	if d.Class != core.ClassEndpoint || d.Status != http.StatusBadGateway || se == nil || se.Code != "bad_upstream_response" {
		t.Fatalf("Ollama's NaN embedding: class %v, status %d, %#v; want endpoint, 502 bad_upstream_response", d.Class, d.Status, err)
	}
	if !strings.Contains(se.Message, "NaN or Inf") {
		t.Errorf("the 502 says %q, not what Ollama said", se.Message)
	}
}
