package conformancetest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Fault is one deliberate protocol violation of the fake server. Its value is a short English
// description, fit for a subtest name.
type Fault string

// The faults. With none of them the fake passes every check the suite has.
const (
	FaultNoDone          Fault = "no [DONE]"
	FaultWrongObject     Fault = "wrong object name"
	FaultFlatError       Fault = "flat error body"
	FaultUsageEveryChunk Fault = "usage on every chunk"
	FaultNoRole          Fault = "role missing from the first delta"
	FaultIDChanges       Fault = "id changing mid-stream"
	FaultArgsObject      Fault = "arguments as an object instead of a string"
	// FaultNoEmbeddingsTools answers 404 to /v1/embeddings and to any chat request that carries
	// tools, like a server without those features: smaller, not broken.
	FaultNoEmbeddingsTools Fault = "404 to embeddings and tools"
)

// What the fake serves and expects.
const (
	// Model is the chat and completions model, the first id of /v1/models.
	Model = "fake-model"
	// EmbeddingModel is the only model /v1/embeddings accepts.
	EmbeddingModel = "fake-embed"
	// APIKey is the bearer token every request must carry; anything else is answered 401.
	APIKey = "sk-fake"
	// Created is the "created" of every object the fake returns (Unix seconds).
	Created = 1750000000
)

// Now is a clock for the suite's plausibility judgements that agrees with Created: just after it.
func Now() time.Time { return time.Unix(Created+100, 0) }

// tokens is the fake model's whole repertoire; "tokens" are list items.
func tokens() []string {
	return []string{"Hello", " there", ",", " the", " sea", " is", " wide", " and", " deep", "."}
}

// Handler is an OpenAI-compatible server that follows the reference closely (with every fault
// off) so that each fault is the only thing wrong. Build it with NewHandler; it is safe for
// concurrent use.
type Handler struct {
	faults map[Fault]bool
	// reasoning: refuse what OpenAI's reasoning models refuse (see NewReasoningHandler).
	reasoning bool
	requests  atomic.Int64
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a fake server with the given faults switched on.
func NewHandler(faults ...Fault) *Handler {
	h := &Handler{faults: map[Fault]bool{}}
	for _, x := range faults {
		h.faults[x] = true
	}
	return h
}

// NewReasoningHandler returns a fake server that answers like one of OpenAI's reasoning models
// (o1, o3, o4-mini, the gpt-5 family): it refuses max_tokens, stop, logprobs, top_logprobs,
// top_p, presence_penalty, frequency_penalty and logit_bias, and a temperature other than 1,
// with the 400 OpenAI answers (code "unsupported_parameter" or "unsupported_value", param
// naming the field), and is otherwise the conforming fake: the suite must not fail it for
// following OpenAI.
func NewReasoningHandler(faults ...Fault) *Handler {
	h := NewHandler(faults...)
	h.reasoning = true
	return h
}

// Requests counts the requests served so far, rejected ones included.
func (f *Handler) Requests() int64 { return f.requests.Load() }

func (f *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	if r.Header.Get("Authorization") != "Bearer "+APIKey {
		f.error(w, 401, "Incorrect API key provided.", "invalid_request_error", nil, "invalid_api_key")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{modelObject(Model), modelObject(EmbeddingModel)}})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/models/"):
		id := strings.TrimPrefix(r.URL.Path, "/v1/models/")
		if id != Model && id != EmbeddingModel {
			f.error(w, 404, "The model '"+id+"' does not exist", "invalid_request_error", "model", "model_not_found")
			return
		}
		writeJSON(w, 200, modelObject(id))
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		f.chat(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/completions":
		f.completions(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings":
		if f.faults[FaultNoEmbeddingsTools] {
			http.NotFound(w, r)
			return
		}
		f.embeddings(w, r)
	default:
		f.error(w, 404, "Unknown path "+r.URL.Path, "invalid_request_error", nil, "not_found")
	}
}

func modelObject(id string) map[string]any {
	return map[string]any{"id": id, "object": "model", "created": Created, "owned_by": "hayula"}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *Handler) error(w http.ResponseWriter, status int, msg, typ string, param any, code string) {
	if f.faults[FaultFlatError] {
		// The shape older vLLM releases used: no "error" envelope.
		writeJSON(w, status, map[string]any{"object": "error", "message": msg, "type": typ, "param": param, "code": status})
		return
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": param, "code": code}})
}

// decodeRequest reads a JSON body and rejects fields outside known, the way a strict server does.
func (f *Handler) decodeRequest(w http.ResponseWriter, r *http.Request, known ...string) (map[string]any, bool) {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		f.error(w, 400, "We could not parse the JSON body of your request.", "invalid_request_error", nil, "invalid_json")
		return nil, false
	}
	for k := range req {
		found := false
		for _, kk := range known {
			found = found || k == kk
		}
		if !found {
			f.error(w, 400, "Unrecognized request argument supplied: "+k, "invalid_request_error", k, "unknown_parameter")
			return nil, false
		}
	}
	return req, true
}

func (f *Handler) wantModel(w http.ResponseWriter, req map[string]any, want string) bool {
	m, _ := req["model"].(string)
	if m == "" {
		f.error(w, 400, "you must provide a model parameter", "invalid_request_error", "model", "missing_required_parameter")
		return false
	}
	if m != want {
		f.error(w, 404, "The model '"+m+"' does not exist", "invalid_request_error", "model", "model_not_found")
		return false
	}
	return true
}

func intField(req map[string]any, k string, def int) int {
	if v, ok := req[k].(float64); ok {
		return int(v)
	}
	return def
}

// at walks decoded JSON objects by key.
func at(v any, keys ...string) (any, bool) {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// generate produces the fake's output under max tokens and stop sequences.
func generate(limit int, stops []string) (toks []string, finish string) {
	text := ""
	for _, tok := range tokens() {
		if len(toks) == limit {
			return toks, "length"
		}
		next := text + tok
		for _, s := range stops {
			if i := strings.Index(next, s); i >= 0 {
				if cut := next[len(text):i]; cut != "" {
					toks = append(toks, cut)
				}
				return toks, "stop"
			}
		}
		text = next
		toks = append(toks, tok)
	}
	return toks, "stop"
}

type toolCall struct{ name, args string }

type chatPlan struct {
	n         int
	toks      []string
	finish    string
	content   any // string, or nil for tool calls
	call      *toolCall
	logprobs  bool
	topN      int
	promptTok int
}

func (f *Handler) chat(w http.ResponseWriter, r *http.Request) {
	req, ok := f.decodeRequest(w, r, "model", "messages", "max_tokens", "max_completion_tokens", "stop", "n",
		"stream", "stream_options", "tools", "tool_choice", "response_format", "logprobs", "top_logprobs", "temperature",
		"top_p", "presence_penalty", "frequency_penalty", "logit_bias")
	if !ok || !f.wantModel(w, req, Model) {
		return
	}
	if _, ok := req["messages"].([]any); !ok {
		f.error(w, 400, "Missing required parameter: 'messages'.", "invalid_request_error", "messages", "missing_required_parameter")
		return
	}
	if f.reasoning && !f.reasoningAccepts(w, req) {
		return
	}
	if _, ok := req["top_logprobs"]; ok && req["logprobs"] != true {
		f.error(w, 400, "top_logprobs requires logprobs to be true", "invalid_request_error", "top_logprobs", "invalid_value")
		return
	}
	if _, ok := req["tools"]; ok && f.faults[FaultNoEmbeddingsTools] {
		http.NotFound(w, r)
		return
	}
	p := chatPlan{n: intField(req, "n", 1), promptTok: 7, topN: intField(req, "top_logprobs", 0), logprobs: req["logprobs"] == true}
	limit := intField(req, "max_completion_tokens", intField(req, "max_tokens", 16))
	var stops []string
	if ss, ok := req["stop"].([]any); ok {
		for _, s := range ss {
			if s, ok := s.(string); ok {
				stops = append(stops, s)
			}
		}
	}
	rf, _ := req["response_format"].(map[string]any)
	switch {
	case req["tool_choice"] != nil:
		p.call = &toolCall{name: "get_weather", args: `{"city":"Paris"}`}
		if name, ok := at(req["tool_choice"], "function", "name"); ok && name == "get_time" {
			p.call = &toolCall{name: "get_time", args: `{"zone":"UTC"}`}
		}
		p.toks, p.finish = []string{"call"}, "tool_calls"
	case rf != nil && rf["type"] != "text":
		p.toks, p.finish = []string{`{"ok"`, `: `, `true}`}, "stop"
		p.content = strings.Join(p.toks, "")
	default:
		p.toks, p.finish = generate(limit, stops)
		p.content = strings.Join(p.toks, "")
	}
	if req["stream"] == true {
		incl, _ := at(req, "stream_options", "include_usage")
		f.chatStream(w, p, incl == true)
		return
	}
	object := "chat.completion"
	if f.faults[FaultWrongObject] {
		object = "chat.completions"
	}
	var choices []any
	for i := 0; i < p.n; i++ {
		msg := map[string]any{"role": "assistant", "content": p.content, "refusal": nil}
		if p.call != nil {
			msg["tool_calls"] = []any{map[string]any{"id": "call_fake1", "type": "function",
				"function": map[string]any{"name": p.call.name, "arguments": f.arguments(p.call.args)}}}
		}
		c := map[string]any{"index": i, "message": msg, "finish_reason": p.finish, "logprobs": nil}
		if p.logprobs {
			c["logprobs"] = map[string]any{"content": logprobEntries(p.toks, p.topN), "refusal": nil}
		}
		choices = append(choices, c)
	}
	writeJSON(w, 200, map[string]any{
		"id": "chatcmpl-fake1", "object": object, "created": Created, "model": Model,
		"choices": choices, "usage": usage(p.promptTok, len(p.toks)*p.n), "system_fingerprint": "fp_fake",
	})
}

// reasoningAccepts answers the 400 OpenAI's reasoning models answer to the first parameter they
// do not take, in the words OpenAI uses, and reports whether there was none.
func (f *Handler) reasoningAccepts(w http.ResponseWriter, req map[string]any) bool {
	for _, k := range []string{"max_tokens", "stop", "logprobs", "top_logprobs", "top_p",
		"presence_penalty", "frequency_penalty", "logit_bias"} {
		if _, ok := req[k]; !ok {
			continue
		}
		msg := "Unsupported parameter: '" + k + "' is not supported with this model."
		if k == "max_tokens" {
			msg += " Use 'max_completion_tokens' instead."
		}
		f.error(w, 400, msg, "invalid_request_error", k, "unsupported_parameter")
		return false
	}
	if t, ok := req["temperature"]; ok && t != 1.0 {
		f.error(w, 400, fmt.Sprintf("Unsupported value: 'temperature' does not support %v with this model. Only the default (1) value is supported.", t),
			"invalid_request_error", "temperature", "unsupported_value")
		return false
	}
	return true
}

// arguments is the function arguments as the reference wants them (a JSON string), or, under
// FaultArgsObject, the JSON itself.
func (f *Handler) arguments(args string) any {
	if f.faults[FaultArgsObject] {
		var v any
		_ = json.Unmarshal([]byte(args), &v)
		return v
	}
	return args
}

func usage(prompt, completion int) map[string]any {
	return map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
}

func logprobEntries(toks []string, topN int) []any {
	var out []any
	for _, t := range toks {
		var top []any
		for k := 0; k < topN; k++ {
			top = append(top, map[string]any{"token": t, "logprob": -0.5 - float64(k), "bytes": byte2{}.of(t)})
		}
		out = append(out, map[string]any{"token": t, "logprob": -0.5, "bytes": byte2{}.of(t), "top_logprobs": top})
	}
	return out
}

// byte2 renders bytes as a JSON array of numbers (encoding/json would write a []byte as base64).
type byte2 []int

func (byte2) of(s string) byte2 {
	var b byte2
	for _, c := range []byte(s) {
		b = append(b, int(c))
	}
	return b
}

func (f *Handler) chatStream(w http.ResponseWriter, p chatPlan, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	sent := 0
	emit := func(choices []any, extra map[string]any) {
		id := "chatcmpl-fake1"
		if f.faults[FaultIDChanges] && sent >= 2 {
			id = "chatcmpl-fake2"
		}
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": Created, "model": Model, "choices": choices}
		if includeUsage {
			c["usage"] = nil
		}
		if f.faults[FaultUsageEveryChunk] {
			c["usage"] = usage(p.promptTok, len(p.toks)*p.n)
		}
		for k, v := range extra {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		sent++
	}
	choice := func(i int, delta map[string]any, finish any) map[string]any {
		return map[string]any{"index": i, "delta": delta, "finish_reason": finish, "logprobs": nil}
	}
	for i := 0; i < p.n; i++ {
		first := map[string]any{"role": "assistant", "content": ""}
		if f.faults[FaultNoRole] {
			delete(first, "role")
		}
		if p.call != nil {
			first["content"] = nil
		}
		emit([]any{choice(i, first, nil)}, nil)
	}
	for i := 0; i < p.n; i++ {
		if p.call != nil {
			for k, frag := range f.argFragments(p.call) {
				tc := map[string]any{"index": 0, "function": map[string]any{"arguments": frag}}
				if k == 0 {
					tc["id"], tc["type"] = "call_fake1", "function"
					tc["function"].(map[string]any)["name"] = p.call.name
				}
				emit([]any{choice(i, map[string]any{"tool_calls": []any{tc}}, nil)}, nil)
			}
		} else {
			for _, t := range p.toks {
				emit([]any{choice(i, map[string]any{"content": t}, nil)}, nil)
			}
		}
		emit([]any{choice(i, map[string]any{}, p.finish)}, nil)
	}
	if includeUsage {
		emit([]any{}, map[string]any{"usage": usage(p.promptTok, len(p.toks)*p.n)})
	}
	if !f.faults[FaultNoDone] {
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// argFragments splits the arguments the way servers stream them: the first fragment empty, then
// pieces of the JSON string.
func (f *Handler) argFragments(c *toolCall) []any {
	if f.faults[FaultArgsObject] {
		return []any{f.arguments(c.args)}
	}
	mid := len(c.args) / 2
	return []any{"", c.args[:mid], c.args[mid:]}
}

func (f *Handler) completions(w http.ResponseWriter, r *http.Request) {
	req, ok := f.decodeRequest(w, r, "model", "prompt", "max_tokens", "stream", "stop")
	if !ok || !f.wantModel(w, req, Model) {
		return
	}
	toks, finish := generate(intField(req, "max_tokens", 16), nil)
	if req["stream"] != true {
		writeJSON(w, 200, map[string]any{"id": "cmpl-fake1", "object": "text_completion", "created": Created, "model": Model,
			"choices": []any{map[string]any{"text": strings.Join(toks, ""), "index": 0, "logprobs": nil, "finish_reason": finish}},
			"usage":   usage(4, len(toks))})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for k, t := range toks {
		var fr any
		if k == len(toks)-1 {
			fr = finish
		}
		b, _ := json.Marshal(map[string]any{"id": "cmpl-fake1", "object": "text_completion", "created": Created, "model": Model,
			"choices": []any{map[string]any{"text": t, "index": 0, "logprobs": nil, "finish_reason": fr}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if !f.faults[FaultNoDone] {
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// vector is a deterministic embedding whose values are exact float32s, so the float and base64
// encodings agree bit for bit.
func vector(s string) []float32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	seed := h.Sum32()
	v := make([]float32, 8)
	for i := range v {
		seed = seed*1664525 + 1013904223
		v[i] = float32(int32(seed>>8)%1000) / 1000
	}
	return v
}

func (f *Handler) embeddings(w http.ResponseWriter, r *http.Request) {
	req, ok := f.decodeRequest(w, r, "model", "input", "encoding_format", "dimensions")
	if !ok || !f.wantModel(w, req, EmbeddingModel) {
		return
	}
	var inputs []string
	switch in := req["input"].(type) {
	case string:
		inputs = []string{in}
	case []any:
		for _, s := range in {
			if s, ok := s.(string); ok {
				inputs = append(inputs, s)
			}
		}
	}
	var data []any
	for i, s := range inputs {
		vec := vector(s)
		var emb any
		if req["encoding_format"] == "base64" {
			buf := make([]byte, 4*len(vec))
			for k, x := range vec {
				binary.LittleEndian.PutUint32(buf[4*k:], math.Float32bits(x))
			}
			emb = base64.StdEncoding.EncodeToString(buf)
		} else {
			fs := make([]float64, len(vec))
			for k, x := range vec {
				fs[k] = float64(x)
			}
			emb = fs
		}
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": emb})
	}
	writeJSON(w, 200, map[string]any{"object": "list", "data": data, "model": EmbeddingModel,
		"usage": map[string]any{"prompt_tokens": len(inputs), "total_tokens": len(inputs)}})
}
