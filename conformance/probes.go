package conformance

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

type probeID string

// probe is one request (or SDK call) whose answer several checks judge.
// Requests are shared so a run stays small: about thirty exchanges for all
// the checks.
type probe struct {
	id probeID
	// gate is the check that reports this probe's failure (no answer, or
	// not a 200). The probe's other checks then SKIP pointing at it, so one
	// broken request is one failure, not twenty.
	gate string
	// wantOK: the probe expects a 200 (and an event stream when stream).
	wantOK bool
	stream bool
	// optional: 404, 405 or 501 mean "endpoint or feature not offered" and
	// its checks SKIP.
	optional bool
	// refusable: a 400 or 422 also means "feature not offered" (the server
	// or model refused tools, logprobs, n...), so its checks SKIP.
	refusable bool
	// unsupported are parameters a model may refuse the way OpenAI's reasoning models refuse
	// stop and max_tokens (see refusedParam): such a 400 means the feature is not offered, and
	// the probe's checks SKIP quoting it. Any other 400 is judged.
	unsupported []string
	run         func(ctx context.Context, r *runner) *exchange
}

// usable reports whether the gated checks can judge x.
func (p *probe) usable(x *exchange) bool {
	if x.err != nil {
		return false
	}
	if !p.wantOK {
		return true
	}
	if x.status != http.StatusOK {
		return false
	}
	if _, failed := x.errorInside(); failed {
		return false
	}
	if p.stream {
		return x.stream != nil
	}
	return x.json != nil
}

// notOffered turns an answer into a SKIP reason when the server said it does
// not offer what the probe asked for.
func (p *probe) notOffered(x *exchange) string {
	if x.err != nil || x.skip != "" {
		return x.skip
	}
	switch x.status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		if p.optional {
			return "server answered " + x.statusLine()
		}
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		if p.refusable {
			return "server refused the request: " + x.statusLine()
		}
		if param, ok := refusedParam(x, p.unsupported...); ok {
			return "the model does not take " + param + ": " + x.statusLine()
		}
	}
	return ""
}

// Request fragments. Prompts ask for little: the judges look at shape only,
// and tiny models answer nonsense anyway.
const (
	noSuchModel = "hayula-conformance-no-such-model"
	badKey      = "hayula-conformance-invalid-key"
	unknownKey  = "hayula_conformance_unknown_field"
)

func userMsg(text string) []any {
	return []any{map[string]any{"role": "user", "content": text}}
}

// Tool parameter schemas are tiny enums with additionalProperties false so
// grammar-constrained decoding finishes in a few tokens even on a random
// model.
func toolDefs() []any {
	fn := func(name, desc, prop string, values ...any) any {
		return map[string]any{
			"type": "function",
			"function": map[string]any{
				"name":        name,
				"description": desc,
				"parameters": map[string]any{
					"type":                 "object",
					"properties":           map[string]any{prop: map[string]any{"type": "string", "enum": values}},
					"required":             []any{prop},
					"additionalProperties": false,
				},
			},
		}
	}
	return []any{
		fn("get_weather", "Current weather in a city.", "city", "Paris", "Tokyo"),
		fn("get_time", "Current time in a zone.", "zone", "UTC", "CET"),
	}
}

func declaredTools() []string { return []string{"get_weather", "get_time"} }

const namedTool = "get_time"

// schemaPrompt is the json_schema request's question: one a model answers in words unless the
// schema holds it to {"ok": true|false}.
const schemaPrompt = "Is the sea wide?"

func answerSchema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"ok": map[string]any{"type": "boolean"}},
		"required":             []any{"ok"},
		"additionalProperties": false,
	}
}

// stopSequences are common enough in any output (a space, a newline, the
// letter e) that the stop check almost always has something to cut.
func stopSequences() []string { return []string{" ", "\n", "e"} }

func (r *runner) chat(extra map[string]any) map[string]any {
	b := map[string]any{"model": r.o.Model, "messages": userMsg("Say hello.")}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func post(path string, body any) func(context.Context, *runner) *exchange {
	return func(ctx context.Context, r *runner) *exchange {
		return r.send(ctx, request{method: http.MethodPost, path: path, body: body})
	}
}

func postStream(path string, body any) func(context.Context, *runner) *exchange {
	return func(ctx context.Context, r *runner) *exchange {
		return r.send(ctx, request{method: http.MethodPost, path: path, body: body, stream: true})
	}
}

// embeddingInput has three items so order and index can be judged.
func embeddingInput() []any { return []any{"alpha", "beta", "gamma"} }

// reversedEmbeddingInput is embeddingInput last to first.
func reversedEmbeddingInput() []any {
	in := embeddingInput()
	out := make([]any, len(in))
	for i, s := range in {
		out[len(in)-1-i] = s
	}
	return out
}

// probes builds the catalogue of requests for this run's options.
func (r *runner) probes() []*probe {
	chat := r.chat
	return []*probe{
		{id: "models.list", gate: "models.list.status", wantOK: true,
			run: func(ctx context.Context, r *runner) *exchange {
				return r.c.do(ctx, request{method: http.MethodGet, path: "/models"})
			}},
		{id: "models.get", gate: "models.retrieve", wantOK: true, optional: true,
			run: func(ctx context.Context, r *runner) *exchange {
				return r.c.do(ctx, request{method: http.MethodGet, path: "/models/" + escapeModel(r.o.Model)})
			}},
		{id: "chat.basic", gate: "chat.status", wantOK: true,
			run: post("/chat/completions", chat(map[string]any{"max_tokens": 16}))},
		// Sent as it is, max_tokens even to a server that refused it: its checks are about
		// max_tokens, and skip when the model does not take it (see maxCompletionTokens).
		{id: "chat.length", gate: "chat.max_tokens.length", wantOK: true, unsupported: []string{maxTokens},
			run: func(ctx context.Context, r *runner) *exchange {
				return r.sendAsIs(ctx, request{method: http.MethodPost, path: "/chat/completions", body: chat(map[string]any{
					"messages": userMsg("Count from one to fifty in words."), "max_tokens": 1})})
			}},
		// OpenAI's o3, o4-mini and gpt-5 refuse stop ("Unsupported parameter: 'stop' is not
		// supported with this model."), as the reference says of its latest reasoning models.
		{id: "chat.stop", gate: "chat.stop.excluded", wantOK: true, unsupported: []string{"stop"},
			run: post("/chat/completions", chat(map[string]any{
				"messages": userMsg("Write a long sentence about the sea."), "max_tokens": 24, "stop": stopSequences()}))},
		{id: "chat.mct", gate: "chat.max_completion_tokens.accepted", wantOK: true,
			run: post("/chat/completions", chat(map[string]any{
				"messages": userMsg("Count from one to fifty in words."), "max_completion_tokens": 4}))},
		{id: "chat.n", gate: "chat.n.choices", wantOK: true, refusable: true,
			run: post("/chat/completions", chat(map[string]any{"max_tokens": 8, "n": 2}))},
		{id: "chat.stream", gate: "chat.stream.content_type", wantOK: true, stream: true,
			run: postStream("/chat/completions", chat(map[string]any{"max_tokens": 16, "stream": true}))},
		{id: "chat.stream_usage", gate: "chat.stream.usage.final", wantOK: true, stream: true,
			run: postStream("/chat/completions", chat(map[string]any{
				"max_tokens": 16, "stream": true, "stream_options": map[string]any{"include_usage": true}}))},
		{id: "tools.required", gate: "tools.required.calls", wantOK: true, optional: true, refusable: true,
			run: post("/chat/completions", chat(map[string]any{
				"messages": userMsg("What is the weather in Paris?"), "max_tokens": 64,
				"tools": toolDefs(), "tool_choice": "required"}))},
		{id: "tools.named", gate: "tools.named.calls", wantOK: true, optional: true, refusable: true,
			run: post("/chat/completions", chat(map[string]any{
				"messages": userMsg("What time is it in UTC?"), "max_tokens": 64, "tools": toolDefs(),
				"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": namedTool}}}))},
		{id: "tools.stream", gate: "tools.stream.first_fragment", wantOK: true, stream: true, optional: true, refusable: true,
			run: postStream("/chat/completions", chat(map[string]any{
				"messages": userMsg("What time is it in UTC?"), "max_tokens": 64, "tools": toolDefs(), "stream": true,
				"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": namedTool}}}))},
		{id: "format.json_object", gate: "format.json_object", wantOK: true, optional: true, refusable: true,
			run: post("/chat/completions", chat(map[string]any{
				"messages": userMsg(`Reply with the JSON object {"ok": true} and nothing else.`), "max_tokens": 48,
				"response_format": map[string]any{"type": "json_object"}}))},
		// The prompt does not spell the answer out, as json_object's must (OpenAI refuses
		// json_object unless the messages say JSON): a server that ignores json_schema would
		// pass with a model that does as the prompt says. Only the schema asks for {"ok": …}.
		{id: "format.json_schema", gate: "format.json_schema", wantOK: true, optional: true, refusable: true,
			run: post("/chat/completions", chat(map[string]any{
				"messages": userMsg(schemaPrompt), "max_tokens": 48,
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
					"name": "answer", "strict": true, "schema": answerSchema()}}}))},
		{id: "logprobs", gate: "logprobs.content", wantOK: true, optional: true, refusable: true,
			run: post("/chat/completions", chat(map[string]any{"max_tokens": 4, "logprobs": true, "top_logprobs": 2}))},
		{id: "logprobs.unpaired", gate: "logprobs.top_requires_logprobs",
			run: post("/chat/completions", chat(map[string]any{"max_tokens": 4, "top_logprobs": 2}))},
		{id: "completions", gate: "completions.status", wantOK: true, optional: true,
			run: post("/completions", map[string]any{"model": r.o.Model, "prompt": "Once upon a time", "max_tokens": 8})},
		{id: "completions.stream", gate: "completions.stream.chunks", wantOK: true, stream: true, optional: true,
			run: postStream("/completions", map[string]any{
				"model": r.o.Model, "prompt": "Once upon a time", "max_tokens": 8, "stream": true})},
		// Refusable whenever the suite chose the model (see chooseEmbedding): a 400 then says
		// the model does not embed, which its name or being the chat model only guessed.
		{id: "embeddings", gate: "embeddings.status", wantOK: true, optional: true, refusable: r.o.EmbeddingModel == "",
			run: post("/embeddings", map[string]any{
				"model": r.embedding, "input": embeddingInput(), "encoding_format": "float"})},
		// The same inputs reversed, for embeddings.order: indexes 0, 1, 2 say nothing of which
		// vector belongs to which input, and a server that batches its inputs may answer them in
		// another order, or repeat one vector for all. Not refusable, as base64 below.
		{id: "embeddings.reversed", gate: "embeddings.order", wantOK: true, optional: true,
			run: post("/embeddings", map[string]any{
				"model": r.embedding, "input": reversedEmbeddingInput(), "encoding_format": "float"})},
		// Not refusable: the float request above tells whether the model embeds (its 400 skips
		// embeddings.base64 too), and where it was served a 400 here refuses base64 itself.
		{id: "embeddings.base64", gate: "embeddings.base64", wantOK: true, optional: true,
			run: post("/embeddings", map[string]any{
				"model": r.embedding, "input": embeddingInput(), "encoding_format": "base64"})},
		{id: "errors.invalid_json", gate: "errors.invalid_json",
			run: func(ctx context.Context, r *runner) *exchange {
				return r.c.do(ctx, request{method: http.MethodPost, path: "/chat/completions",
					raw: []byte(`{"model": "` + r.o.Model + `", "messages": [`)})
			}},
		{id: "errors.missing_messages", gate: "errors.missing_messages",
			run: post("/chat/completions", map[string]any{"model": r.o.Model, "max_tokens": 1})},
		{id: "errors.unknown_model", gate: "errors.unknown_model",
			run: post("/chat/completions", chat(map[string]any{"model": noSuchModel, "max_tokens": 1}))},
		{id: "errors.bad_key", gate: "errors.bad_key",
			run: func(ctx context.Context, r *runner) *exchange {
				if r.o.APIKey == "" {
					return &exchange{skip: "no key given (--api-key-env or --api-key), so the server may not check keys"}
				}
				body := r.chat(map[string]any{"max_tokens": 1})
				x := r.send(ctx, request{method: http.MethodPost, path: "/chat/completions", body: body, key: badKey})
				if x.err != nil || x.status >= 400 {
					return x
				}
				// SDKs insist on a key, so one is often given to a server
				// that checks none (Ollama, vLLM without --api-key). Served
				// without any key, it has no key to get wrong.
				open := r.send(ctx, request{method: http.MethodPost, path: "/chat/completions", body: body, noKey: true})
				if open.err == nil && open.status < 400 {
					x.skip = "the server served a request without any key (" + open.statusLine() + "), so it checks none"
				}
				return x
			}},
		{id: "strict.unknown_field", gate: "errors.strict.unknown_field",
			run: post("/chat/completions", chat(map[string]any{"max_tokens": 1, unknownKey: true}))},
		{id: "sdk.chat", gate: "sdk.chat", run: sdkChat},
		{id: "sdk.stream", gate: "sdk.stream", run: sdkStream},
		{id: "sdk.error", gate: "sdk.error", run: sdkError},
		{id: "sdk.models", gate: "sdk.models", run: sdkModels},
	}
}

// escapeModel keeps "/" in ids such as "org/model", which servers route as
// a path, and escapes everything else.
func escapeModel(id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
