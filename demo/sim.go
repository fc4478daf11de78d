// Package demo owns `gateway demo`: simulated backends that speak the paper's three upstream
// protocols on loopback (SAIF's own protocol, Ollama's native API, and the OpenAI API with R1's
// <think> reasoning), a public tail, and the embedded configuration that puts the gateway in
// front of them. Every simulated reply in prose says plainly that it is simulated; no model runs.
// Yet each simulator honours, in its own protocol, what a conforming server honours (model.go):
// stop sequences, token limits, n, tool calls, JSON modes and schemas, logprobs; so that the
// gateway's adapters are exercised end to end and `gateway conformance` against the demo
// grades the gateway (TestDemoPassesConformance).
//
// Every simulator obeys the same triggers in the last user message, so that the demo can show
// fallback on demand: "[fail:NAME]" makes backend NAME fail with a 5xx, "[overflow:NAME]" makes
// it answer a context overflow, and "[loading:saif]" makes SAIF answer 503 loading with a
// Retry-After, as it does while it swaps a specialist in.
package demo

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
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

type simStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type simRequest struct {
	Model               string            `json:"model"`
	Stream              bool              `json:"stream"`
	Messages            []simMessage      `json:"messages"`
	StreamOptions       *simStreamOptions `json:"stream_options"`
	MaxTokens           int               `json:"max_tokens"`
	MaxCompletionTokens int               `json:"max_completion_tokens"`
	N                   int               `json:"n"`
	Stop                json.RawMessage   `json:"stop"`
	Tools               []simTool         `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ResponseFormat      *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Logprobs    bool `json:"logprobs"`
	TopLogprobs int  `json:"top_logprobs"`
}

// maxN bounds n, so that a request cannot make the simulator write without end.
const maxN = 16

// ServeHTTP serves /v1/chat/completions, /v1/completions and /v1/models.
func (s *OpenAISim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/models" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","created":%d,"owned_by":"hayula-demo"}]}`,
			s.Name, now(s.Now).Unix())
	case r.URL.Path == "/v1/chat/completions" && r.Method == http.MethodPost:
		s.chat(w, r)
	case r.URL.Path == "/v1/completions" && r.Method == http.MethodPost:
		s.complete(w, r)
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

// triggered answers the demo's failure triggers; true when it did.
func (s *OpenAISim) triggered(w http.ResponseWriter, prompt string) bool {
	switch {
	case strings.Contains(prompt, "[fail:"+s.Name+"]"):
		simError(w, http.StatusServiceUnavailable, "server_error", "simulated_failure", s.Name+" simulator: simulated outage")
		return true
	case strings.Contains(prompt, "[overflow:"+s.Name+"]"):
		simError(w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
			"This model's maximum context length is 4096 tokens. However, you requested more (simulated).")
		return true
	}
	return false
}

// simChoice is one choice the model wrote: text, or a tool call.
type simChoice struct {
	gen  generation
	call *toolCall
}

func (c simChoice) finish() string {
	if c.call != nil {
		return "tool_calls"
	}
	return c.gen.finish
}

func (c simChoice) completionTokens() int {
	if c.call != nil {
		return len(tokens(string(c.call.args)))
	}
	return len(c.gen.tokens)
}

func (s *OpenAISim) chat(w http.ResponseWriter, r *http.Request) {
	var req simRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		simError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", err.Error())
		return
	}
	last := lastUser(req.Messages)
	if s.triggered(w, last) {
		return
	}
	n := max(req.N, 1)
	if n > maxN {
		simError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", fmt.Sprintf("n must be at most %d", maxN))
		return
	}
	call, err := s.toolCall(&req, last)
	if err != nil {
		simError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", err.Error())
		return
	}
	var ch simChoice
	if call != nil {
		ch.call = call
	} else {
		ch.gen = generate(s.text(&req, last), stopList(req.Stop), cmp.Or(req.MaxCompletionTokens, req.MaxTokens))
	}
	// The model is deterministic: every choice is the same answer, with a call id of its own.
	choices := slices.Repeat([]simChoice{ch}, n)
	seq := s.seq.Add(1)
	id := fmt.Sprintf("chatcmpl-%s-%d", s.Name, seq)
	created := now(s.Now).Unix()
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(strings.Fields(string(m.Content)))
	}
	completion := 0
	for _, c := range choices {
		completion += c.completionTokens()
	}
	usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
	callID := func(i int) string { return fmt.Sprintf("call_%s_%d_%d", s.Name, seq, i) }
	if !req.Stream {
		out := make([]any, len(choices))
		for i, c := range choices {
			msg := map[string]any{"role": "assistant", "content": nil}
			var lp any
			if c.call != nil {
				msg["tool_calls"] = []any{map[string]any{"id": callID(i), "type": "function",
					"function": map[string]any{"name": c.call.name, "arguments": string(c.call.args)}}}
			} else {
				msg["content"] = c.gen.text()
				if req.Logprobs {
					lp = map[string]any{"content": logprobsOf(c.gen.tokens, req.TopLogprobs)}
				}
			}
			out[i] = map[string]any{"index": i, "finish_reason": c.finish(), "message": msg, "logprobs": lp}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": out, "usage": usage,
		})
		return
	}
	sse := newSSE(w)
	chunk := func(i int, delta map[string]any, lp, finish any) {
		c := map[string]any{"index": i, "delta": delta, "finish_reason": finish}
		if lp != nil {
			c["logprobs"] = lp
		}
		sse.send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": req.Model, "choices": []any{c}})
	}
	streams := make([][]simDelta, len(choices))
	for i, c := range choices {
		streams[i] = s.deltas(c, callID(i), req.Logprobs, req.TopLogprobs)
	}
	// The choices advance together, a piece of each in turn, as a server batching them does.
	for k := 0; ; k++ {
		more := false
		for i, st := range streams {
			if k < len(st) {
				more = true
				if k > 0 && i == 0 && !pause(r, s.ChunkDelay) {
					return
				}
				chunk(i, st[k].delta, st[k].logprobs, nil)
			}
		}
		if !more {
			break
		}
	}
	for i, c := range choices {
		chunk(i, map[string]any{}, nil, c.finish())
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		sse.send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
			"model": req.Model, "choices": []any{}, "usage": usage})
	}
	sse.raw("[DONE]")
}

// simDelta is one streamed delta of a choice, with the logprobs of its tokens when asked.
type simDelta struct {
	delta    map[string]any
	logprobs any
}

// deltas is a choice as OpenAI streams it: the role first; then the text in pieces (R1's in
// small pieces that split its tags, unless logprobs are asked, which go one token a chunk); or
// a tool call whose first fragment carries id, type and name and whose arguments follow in
// fragments.
func (s *OpenAISim) deltas(c simChoice, callID string, logprobs bool, top int) []simDelta {
	out := []simDelta{{delta: map[string]any{"role": "assistant", "content": ""}}}
	if c.call != nil {
		out = append(out, simDelta{delta: map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": callID,
			"type": "function", "function": map[string]any{"name": c.call.name, "arguments": ""}}}}})
		for _, p := range runeChunks(string(c.call.args), 8) {
			out = append(out, simDelta{delta: map[string]any{"tool_calls": []any{map[string]any{"index": 0,
				"function": map[string]any{"arguments": p}}}}})
		}
		return out
	}
	if logprobs {
		for i, e := range logprobsOf(c.gen.tokens, top) {
			out = append(out, simDelta{delta: map[string]any{"content": c.gen.tokens[i]},
				logprobs: map[string]any{"content": []simLogprob{e}}})
		}
		return out
	}
	pieces := c.gen.tokens
	if s.Think {
		pieces = runeChunks(c.gen.text(), 7)
	}
	for _, p := range pieces {
		out = append(out, simDelta{delta: map[string]any{"content": p}})
	}
	return out
}

// text is what the model would write without limits: the reply, or a JSON document in a JSON
// mode, after R1's reasoning when the model thinks.
func (s *OpenAISim) text(req *simRequest, last string) string {
	reply := Reply(s.Name, last)
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case "json_object":
			reply = jsonText(nil, reply)
		case "json_schema":
			schema := rf.JSONSchema.Schema
			if schema == nil {
				schema = map[string]any{}
			}
			reply = jsonText(schema, reply)
		}
	}
	if s.Think {
		reply = Thought(last) + reply
	}
	return reply
}

// toolCall is the call the model makes, nil for a text answer: the named function when
// tool_choice names one, a tool always when it says "required", and with "auto" (or none given)
// the tool the prompt is about, unless the conversation ends with a tool's result, which the
// model then answers in text.
func (s *OpenAISim) toolCall(req *simRequest, last string) (*toolCall, error) {
	choice := strings.TrimSpace(string(req.ToolChoice))
	if len(req.Tools) == 0 || choice == `"none"` {
		return nil, nil
	}
	if strings.HasPrefix(choice, "{") {
		var named struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		_ = json.Unmarshal(req.ToolChoice, &named)
		for _, t := range req.Tools {
			if t.Function.Name == named.Function.Name {
				c := callTool(t, last)
				return &c, nil
			}
		}
		return nil, fmt.Errorf("tool_choice names function %q, which tools does not declare", named.Function.Name)
	}
	i := relevantTool(req.Tools, last)
	switch {
	case choice == `"required"`:
		i = max(i, 0)
	case len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == "tool":
		i = -1
	}
	if i < 0 {
		return nil, nil
	}
	c := callTool(req.Tools[i], last)
	return &c, nil
}

// stopList reads OpenAI's stop: a string or an array of strings.
func stopList(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	return many
}

type simCompletionRequest struct {
	Model         string            `json:"model"`
	Prompt        json.RawMessage   `json:"prompt"`
	MaxTokens     *int              `json:"max_tokens"`
	Stop          json.RawMessage   `json:"stop"`
	N             int               `json:"n"`
	Stream        bool              `json:"stream"`
	StreamOptions *simStreamOptions `json:"stream_options"`
	// Logprobs is how many alternatives to give at each place; nil gives no logprobs.
	Logprobs *int `json:"logprobs"`
}

// defaultCompletionTokens is the legacy completions endpoint's max_tokens when none is given,
// OpenAI's (and vLLM's) 16.
const defaultCompletionTokens = 16

// complete serves the legacy /v1/completions, which a server in front of R1 (vLLM, llama-server)
// serves beside chat: the prompt is continued as it is, with no chat template and so no
// reasoning block.
func (s *OpenAISim) complete(w http.ResponseWriter, r *http.Request) {
	var req simCompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		simError(w, http.StatusBadRequest, "invalid_request_error", "invalid_json", err.Error())
		return
	}
	var prompts []string
	var one string
	if json.Unmarshal(req.Prompt, &one) == nil {
		prompts = []string{one}
	} else if json.Unmarshal(req.Prompt, &prompts) != nil || len(prompts) == 0 {
		simError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value",
			"the simulator completes a prompt that is a string or an array of strings")
		return
	}
	n := max(req.N, 1)
	if n*len(prompts) > maxN {
		simError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", fmt.Sprintf("n × prompts must be at most %d", maxN))
		return
	}
	limit := defaultCompletionTokens
	if req.MaxTokens != nil {
		limit = *req.MaxTokens
	}
	var gens []generation
	prompt, completion := 0, 0
	for _, p := range prompts {
		if s.triggered(w, p) {
			return
		}
		prompt += len(strings.Fields(p))
		g := generate(Reply(s.Name, p), stopList(req.Stop), limit)
		for range n {
			gens = append(gens, g)
			completion += len(g.tokens)
		}
	}
	id := fmt.Sprintf("cmpl-%s-%d", s.Name, s.seq.Add(1))
	created := now(s.Now).Unix()
	usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
	obj := func(choices []any) map[string]any {
		return map[string]any{"id": id, "object": "text_completion", "created": created, "model": req.Model, "choices": choices}
	}
	if !req.Stream {
		choices := make([]any, len(gens))
		for i, g := range gens {
			choices[i] = map[string]any{"index": i, "text": g.text(), "finish_reason": g.finish, "logprobs": completionLogprobs(g.tokens, req.Logprobs, 0)}
		}
		o := obj(choices)
		o["usage"] = usage
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(o)
		return
	}
	sse := newSSE(w)
	offsets := make([]int, len(gens))
	for k := 0; ; k++ {
		more := false
		for i, g := range gens {
			if k < len(g.tokens) {
				more = true
				if k > 0 && i == 0 && !pause(r, s.ChunkDelay) {
					return
				}
				sse.send(obj([]any{map[string]any{"index": i, "text": g.tokens[k], "finish_reason": nil,
					"logprobs": completionLogprobs(g.tokens[k:k+1], req.Logprobs, offsets[i])}}))
				offsets[i] += len(g.tokens[k])
			}
		}
		if !more {
			break
		}
	}
	for i, g := range gens {
		sse.send(obj([]any{map[string]any{"index": i, "text": "", "finish_reason": g.finish, "logprobs": nil}}))
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		o := obj([]any{})
		o["usage"] = usage
		sse.send(o)
	}
	sse.raw("[DONE]")
}

// completionLogprobs is the legacy completions' logprobs of tokens, whose text starts at offset
// in the choice's text: nil (JSON null) when none were asked. Each place's top_logprobs holds the
// chosen token and the alternatives asked for, as vLLM's (OpenAI's gave at most 5 alternatives;
// this simulator, like vLLM's default, at most 20).
func completionLogprobs(tokens []string, top *int, offset int) any {
	if top == nil {
		return nil
	}
	entries := logprobsOf(tokens, max(*top, 1))
	out := struct {
		Tokens        []string             `json:"tokens"`
		TokenLogprobs []float64            `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}{Tokens: append([]string{}, tokens...), TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for i, e := range entries {
		out.TokenLogprobs = append(out.TokenLogprobs, e.Logprob)
		alts := map[string]float64{}
		for _, a := range e.TopLogprobs {
			alts[a.Token] = a.Logprob
		}
		out.TopLogprobs = append(out.TopLogprobs, alts)
		out.TextOffset = append(out.TextOffset, offset)
		offset += len(tokens[i])
	}
	return out
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
	n, words := len(strings.Fields(prompt)), "words"
	if n == 1 {
		words = "word"
	}
	return fmt.Sprintf("<think>\n[simulated reasoning] The question has %d %s. A real R1 would reason here, "+
		"step by step, before it answers.\n</think>\n\n", n, words)
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
