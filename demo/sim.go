// Package demo owns `gateway demo`: simulated backends that speak the paper's three upstream
// protocols on loopback (SAIF's own protocol, Ollama's native API, and the OpenAI API with R1's
// <think> reasoning), a public tail, and the embedded configuration that puts the gateway in
// front of them. Every simulated reply says plainly that it is simulated; no model runs.
//
// Every simulator obeys the same triggers in the last user message, so that the demo can show
// fallback on demand: "[fail:NAME]" makes backend NAME fail with a 5xx, "[overflow:NAME]" makes
// it answer a context overflow, and "[loading:saif]" makes SAIF answer 503 loading with a
// Retry-After, as it does while it swaps a specialist in.
package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// OpenAISim is a simulated OpenAI-compatible backend (vLLM, llama-server, OpenRouter…).
type OpenAISim struct {
	// Name appears in every reply.
	Name string
	// Think makes replies start with an R1-style <think>…</think> block, streamed in small
	// pieces so that the tags arrive split across chunks, as a real R1 stream splits them.
	Think bool
	// ChunkDelay spaces streamed chunks, so streaming is visible; 0 sends them at once.
	ChunkDelay time.Duration
	// Now stamps replies; nil means time.Now.
	Now func() time.Time

	seq atomic.Int64
}

type simMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type simRequest struct {
	Model         string       `json:"model"`
	Stream        bool         `json:"stream"`
	Messages      []simMessage `json:"messages"`
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
			s.Name, now(s.Now).Unix())
	case r.URL.Path == "/v1/chat/completions" && r.Method == http.MethodPost:
		s.chat(w, r)
	default:
		simError(w, http.StatusNotFound, "not_found_error", "unknown_url", "no such endpoint on the "+s.Name+" simulator")
	}
}

func now(f func() time.Time) time.Time {
	if f != nil {
		return f()
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
	if s.Think {
		reply = Thought(last) + reply
	}
	id := fmt.Sprintf("chatcmpl-%s-%d", s.Name, s.seq.Add(1))
	created := now(s.Now).Unix()
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(strings.Fields(string(m.Content)))
	}
	completion := len(strings.Fields(reply))
	usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": reply}}},
			"usage": usage,
		})
		return
	}
	sse := newSSE(w)
	chunk := func(delta map[string]any, finish any) {
		sse.send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": req.Model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	pieces := words(reply)
	if s.Think {
		pieces = runeChunks(reply, 7)
	}
	for _, p := range pieces {
		if !pause(r, s.ChunkDelay) {
			return
		}
		chunk(map[string]any{"content": p}, nil)
	}
	chunk(map[string]any{}, "stop")
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		sse.send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": req.Model, "choices": []any{}, "usage": usage})
	}
	sse.raw("[DONE]")
}

// Reply is the simulated answer text of backend name to a prompt.
func Reply(name, prompt string) string {
	p := strings.Join(strings.Fields(prompt), " ")
	if r := []rune(p); len(r) > 80 {
		p = string(r[:80]) + "…"
	}
	return fmt.Sprintf("[simulated %s] This is a simulated reply from the Hayula demo; no model ran. You asked: %q", name, p)
}

// Thought is the simulated R1 reasoning block that precedes the reply.
func Thought(prompt string) string {
	return fmt.Sprintf("<think>\n[simulated reasoning] The question has %d words. A real R1 would reason here, "+
		"step by step, before it answers.\n</think>\n\n", len(strings.Fields(prompt)))
}

// words splits a reply into streamed pieces, each word with the space before it.
func words(s string) []string {
	ws := strings.Fields(s)
	for i := 1; i < len(ws); i++ {
		ws[i] = " " + ws[i]
	}
	return ws
}

// runeChunks splits s every n runes, never inside a UTF-8 sequence.
func runeChunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i, k := 0, 0
		for i < len(s) && k < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			k++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// pause waits d between streamed pieces; false when the client went away.
func pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// sseWriter writes server-sent events, flushing each.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

func (s *sseWriter) send(v any) {
	b, _ := json.Marshal(v)
	s.raw(string(b))
}

func (s *sseWriter) raw(data string) {
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	_ = s.rc.Flush()
}

func lastUser(msgs []simMessage) string {
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
