// Package demo owns `gateway demo`: simulated backends that speak the upstream protocols on
// loopback, and the embedded configuration that puts the gateway in front of them. Every
// simulated reply says plainly that it is simulated; no model runs.
package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// OpenAISim is a simulated OpenAI-compatible backend. A user message containing "[fail:NAME]"
// makes the backend called NAME answer 503, and "[overflow:NAME]" makes it answer a
// context_length_exceeded 400, so the demo can show fallback.
type OpenAISim struct {
	// Name appears in every reply.
	Name string
	// ChunkDelay spaces streamed chunks, so streaming is visible; 0 sends them at once.
	ChunkDelay time.Duration
	// Now stamps replies; nil means time.Now.
	Now func() time.Time

	seq atomic.Int64
}

type simRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens int `json:"max_tokens"`
}

// ServeHTTP serves /v1/chat/completions and /v1/models.
func (s *OpenAISim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/models" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","created":%d,"owned_by":"hayula-demo"}]}`,
			s.Name, s.now().Unix())
	case r.URL.Path == "/v1/chat/completions" && r.Method == http.MethodPost:
		s.chat(w, r)
	default:
		simError(w, http.StatusNotFound, "not_found_error", "unknown_url", "no such endpoint on the "+s.Name+" simulator")
	}
}

func (s *OpenAISim) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *OpenAISim) chat(w http.ResponseWriter, r *http.Request) {
	var req simRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		simError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", err.Error())
		return
	}
	last := lastUser(req.Messages)
	switch {
	case strings.Contains(last, "[fail:"+s.Name+"]"):
		simError(w, http.StatusServiceUnavailable, "server_error", "simulated_failure", s.Name+" simulator: simulated outage")
		return
	case strings.Contains(last, "[overflow:"+s.Name+"]"):
		simError(w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
			"This model's maximum context length is 4096 tokens. However, you requested more (simulated).")
		return
	}
	reply := Reply(s.Name, last)
	id := fmt.Sprintf("chatcmpl-%s-%d", s.Name, s.seq.Add(1))
	created := s.now().Unix()
	words := strings.Fields(reply)
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(strings.Fields(string(m.Content)))
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": reply}}},
			"usage": map[string]int{"prompt_tokens": prompt, "completion_tokens": len(words),
				"total_tokens": prompt + len(words)},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": req.Model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		_ = rc.Flush()
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for i, word := range words {
		if i > 0 {
			word = " " + word
		}
		if s.ChunkDelay > 0 {
			select {
			case <-time.After(s.ChunkDelay):
			case <-r.Context().Done():
				return
			}
		}
		chunk(map[string]any{"content": word}, nil)
	}
	chunk(map[string]any{}, "stop")
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": req.Model, "choices": []any{},
			"usage": map[string]int{"prompt_tokens": prompt, "completion_tokens": len(words), "total_tokens": prompt + len(words)}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// Reply is the simulated answer text of backend name to a prompt.
func Reply(name, prompt string) string {
	p := strings.Join(strings.Fields(prompt), " ")
	if r := []rune(p); len(r) > 80 {
		p = string(r[:80]) + "…"
	}
	return fmt.Sprintf("[simulated %s] This is a simulated reply from the Hayula demo; no model ran. You asked: %q", name, p)
}

func lastUser(msgs []struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return contentText(msgs[i].Content)
		}
	}
	return ""
}

// contentText flattens a message content (a string or an array of parts) to its text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func simError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": code}})
}
