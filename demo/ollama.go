package demo

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strings"
	"time"
)

// OllamaSim is a simulated Ollama server (the paper's Averroes-Q), speaking Ollama's native API:
// POST /api/chat with NDJSON streaming, POST /api/embed, GET /api/tags.
type OllamaSim struct {
	// Name appears in every reply.
	Name string
	// ChunkDelay spaces streamed lines; 0 sends them at once.
	ChunkDelay time.Duration
	// Now stamps replies; nil means time.Now.
	Now func() time.Time
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
		NumPredict int `json:"num_predict"`
	} `json:"options"`
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
	reply := Reply(s.Name, last)
	if images > 0 {
		reply += " (The simulator received the image but cannot see it.)"
	}
	pieces, reason := words(reply), "stop"
	if n := req.Options.NumPredict; n > 0 && n < len(pieces) {
		pieces, reason = pieces[:n], "length"
		reply = strings.Join(pieces, "")
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(strings.Fields(m.Content))
	}
	created := now(s.Now).UTC().Format(time.RFC3339Nano)
	model := req.Model
	if req.Stream != nil && !*req.Stream {
		writeJSON(w, map[string]any{"model": model, "created_at": created,
			"message": map[string]any{"role": "assistant", "content": reply}, "done": true, "done_reason": reason,
			"prompt_eval_count": prompt, "eval_count": len(pieces)})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	for _, p := range pieces {
		if !pause(r, s.ChunkDelay) {
			return
		}
		_ = enc.Encode(map[string]any{"model": model, "created_at": created,
			"message": map[string]any{"role": "assistant", "content": p}, "done": false})
		_ = rc.Flush()
	}
	_ = enc.Encode(map[string]any{"model": model, "created_at": created,
		"message": map[string]any{"role": "assistant", "content": ""}, "done": true, "done_reason": reason,
		"prompt_eval_count": prompt, "eval_count": len(pieces)})
	_ = rc.Flush()
}

// embed answers deterministic 8-dimensional vectors made from a hash of each input.
func (s *OllamaSim) embed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
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
		tokens += len(strings.Fields(in))
	}
	writeJSON(w, map[string]any{"model": req.Model, "embeddings": vecs, "prompt_eval_count": tokens})
}
