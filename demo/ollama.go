package demo

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// OllamaSim is a simulated Ollama server (the paper's Averroes-Q), speaking Ollama's native API:
// POST /api/chat with NDJSON streaming, POST /api/embed (honouring dimensions), GET /api/tags. It honours
// options.stop and options.num_predict, tools (answered in message.tool_calls), format ("json" or
// a schema) and logprobs/top_logprobs (Ollama v0.12.11's top-level logprobs, per line when
// streamed).
type OllamaSim struct {
	// Name appears in every reply.
	Name string
	// ChunkDelay spaces streamed lines; 0 sends them at once.
	ChunkDelay time.Duration
	// Now stamps replies; nil means time.Now.
	Now func() time.Time

	seq atomic.Int64
}

type ollamaSimRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string   `json:"role"`
		Content string   `json:"content"`
		Images  []string `json:"images"`
	} `json:"messages"`
	Stream  *bool `json:"stream"`
	Options struct {
		NumPredict int      `json:"num_predict"`
		Stop       []string `json:"stop"`
	} `json:"options"`
	Tools []simTool `json:"tools"`
	// Format is "json" or a JSON schema.
	Format      json.RawMessage `json:"format"`
	Logprobs    bool            `json:"logprobs"`
	TopLogprobs int             `json:"top_logprobs"`
}

// ServeHTTP serves the Ollama endpoints the gateway uses.
func (s *OllamaSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/api/tags" && r.Method == http.MethodGet:
		writeJSON(w, map[string]any{"models": []any{map[string]any{"name": s.Name + ":7b", "model": s.Name + ":7b",
			"modified_at": now(s.Now).UTC().Format(time.RFC3339Nano), "size": 0, "digest": "simulated",
			"details": map[string]any{"format": "gguf", "family": "qwen2", "parameter_size": "7B"}}}})
	case r.URL.Path == "/api/chat" && r.Method == http.MethodPost:
		s.chat(w, r)
	case r.URL.Path == "/api/embed" && r.Method == http.MethodPost:
		s.embed(w, r)
	default:
		ollamaError(w, http.StatusNotFound, "404 page not found")
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

// ollamaError answers in Ollama's error shape, {"error": "…"}.
func ollamaError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (s *OllamaSim) chat(w http.ResponseWriter, r *http.Request) {
	var req ollamaSimRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		ollamaError(w, http.StatusBadRequest, "invalid request: "+err.Error())
		return
	}
	last, images := "", 0
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			last, images = req.Messages[i].Content, len(req.Messages[i].Images)
			break
		}
	}
	switch {
	case strings.Contains(last, "[fail:"+s.Name+"]"):
		ollamaError(w, http.StatusInternalServerError, s.Name+" simulator: simulated runner crash")
		return
	case strings.Contains(last, "[overflow:"+s.Name+"]"):
		// Ollama's own words, which the gateway recognises as a context overflow.
		ollamaError(w, http.StatusBadRequest, "the input length exceeds the context length")
		return
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(strings.Fields(m.Content))
	}
	created := now(s.Now).UTC().Format(time.RFC3339Nano)
	model := req.Model
	stream := req.Stream == nil || *req.Stream
	if call := s.toolCall(&req, last); call != nil {
		// Ollama answers a tool call whole, in one message (one line when streamed), with the
		// arguments as an object; done_reason stays "stop".
		msg := map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{
			"id":       fmt.Sprintf("call_%s_%d", s.Name, s.seq.Add(1)),
			"function": map[string]any{"index": 0, "name": call.name, "arguments": call.args}}}}
		done := map[string]any{"model": model, "created_at": created, "done": true, "done_reason": "stop",
			"prompt_eval_count": prompt, "eval_count": len(tokens(string(call.args)))}
		if !stream {
			done["message"] = msg
			writeJSON(w, done)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		_ = enc.Encode(map[string]any{"model": model, "created_at": created, "message": msg, "done": false})
		done["message"] = map[string]any{"role": "assistant", "content": ""}
		_ = enc.Encode(done)
		return
	}
	reply := Reply(s.Name, last)
	if images > 0 {
		reply += " (The simulator received the image but cannot see it.)"
	}
	if schema, isJSON := ollamaFormat(req.Format); isJSON {
		reply = jsonText(schema, reply)
	}
	gen := generate(reply, req.Options.Stop, req.Options.NumPredict)
	var lps []simLogprob
	if req.Logprobs {
		lps = logprobsOf(gen.tokens, req.TopLogprobs)
	}
	if !stream {
		out := map[string]any{"model": model, "created_at": created,
			"message": map[string]any{"role": "assistant", "content": gen.text()}, "done": true, "done_reason": gen.finish,
			"prompt_eval_count": prompt, "eval_count": len(gen.tokens)}
		if lps != nil {
			out["logprobs"] = lps
		}
		writeJSON(w, out)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	for i, p := range gen.tokens {
		if !pause(r, s.ChunkDelay) {
			return
		}
		line := map[string]any{"model": model, "created_at": created,
			"message": map[string]any{"role": "assistant", "content": p}, "done": false}
		if lps != nil {
			line["logprobs"] = lps[i : i+1]
		}
		_ = enc.Encode(line)
		_ = rc.Flush()
	}
	_ = enc.Encode(map[string]any{"model": model, "created_at": created,
		"message": map[string]any{"role": "assistant", "content": ""}, "done": true, "done_reason": gen.finish,
		"prompt_eval_count": prompt, "eval_count": len(gen.tokens)})
	_ = rc.Flush()
}

// toolCall is the call the model makes, nil for a text answer. Ollama has no tool_choice, so
// the model decides, as a real one would: the tool the prompt is about, unless the conversation
// ends with a tool's result, which it answers in text.
func (s *OllamaSim) toolCall(req *ollamaSimRequest, last string) *toolCall {
	if len(req.Tools) == 0 || (len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == "tool") {
		return nil
	}
	i := relevantTool(req.Tools, last)
	if i < 0 {
		return nil
	}
	c := callTool(req.Tools[i], last)
	return &c
}

// ollamaFormat reads Ollama's format: "json" for any JSON (schema nil), or a schema object.
func ollamaFormat(raw json.RawMessage) (schema map[string]any, isJSON bool) {
	var word string
	if json.Unmarshal(raw, &word) == nil {
		return nil, word == "json"
	}
	if json.Unmarshal(raw, &schema) == nil && schema != nil {
		return schema, true
	}
	return nil, false
}

// embed answers deterministic 8-dimensional vectors made from a hash of each input.
func (s *OllamaSim) embed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
		// Dimensions cuts each vector to its first Dimensions values, normalised, when the
		// model's are wider, as Ollama does; 0 (or a width not below the model's) leaves them.
		Dimensions int `json:"dimensions"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		ollamaError(w, http.StatusBadRequest, "invalid request: "+err.Error())
		return
	}
	var inputs []string
	var one string
	if json.Unmarshal(req.Input, &one) == nil {
		inputs = []string{one}
	} else if json.Unmarshal(req.Input, &inputs) != nil {
		ollamaError(w, http.StatusBadRequest, "invalid input type")
		return
	}
	vecs := make([][]float64, len(inputs))
	tokens := 0
	for i, in := range inputs {
		h := fnv.New64a()
		_, _ = h.Write([]byte(in))
		x := h.Sum64()
		vecs[i] = make([]float64, 8)
		for j := range vecs[i] {
			vecs[i][j] = float64(int64(x>>(8*j))&0xff-128) / 128
		}
		if req.Dimensions > 0 && req.Dimensions < len(vecs[i]) {
			vecs[i] = normalized(vecs[i][:req.Dimensions])
		}
		tokens += len(strings.Fields(in))
	}
	writeJSON(w, map[string]any{"model": req.Model, "embeddings": vecs, "prompt_eval_count": tokens})
}

// normalized is v scaled to length 1; a zero vector stays as it is.
func normalized(v []float64) []float64 {
	sum := 0.0
	for _, x := range v {
		sum += x * x
	}
	if sum == 0 {
		return v
	}
	n := math.Sqrt(sum)
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / n
	}
	return out
}
