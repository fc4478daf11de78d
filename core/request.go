package core

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Op is the OpenAI endpoint a request came in on.
type Op uint8

const (
	// OpChat is POST /v1/chat/completions (the zero value).
	OpChat Op = iota
	// OpCompletions is POST /v1/completions.
	OpCompletions
	// OpEmbeddings is POST /v1/embeddings.
	OpEmbeddings
)

// Path is the endpoint's path below an OpenAI base URL (which includes /v1).
func (o Op) Path() string {
	switch o {
	case OpCompletions:
		return "/completions"
	case OpEmbeddings:
		return "/embeddings"
	}
	return "/chat/completions"
}

// Request is the decoded view of one client request, made once by the server and shared,
// read-only, by every stage after it.
type Request struct {
	// Op is the endpoint. Eligibility skips a target whose adapter does not serve it
	// (upstream.Serves); an adapter asked anyway answers a 404 StatusError.
	Op Op
	// Model is the client's "model": a route name.
	Model string
	// Stream is the client's "stream".
	Stream bool
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool
	// CountsUsage is true when the gateway counts the answer's tokens (its metrics, the key's tpm,
	// or the Responses bridge, whose response.completed carries a stream's usage): an adapter may
	// then ask a target for a stream's usage that the client did not ask for (Target.StreamUsage),
	// and keep it from the client (upstream.Response.UsageAsked).
	CountsUsage bool
	// ChargesUsage is true when the answer's tokens are charged to the key's tpm: an adapter then
	// asks for a stream's usage even where it would otherwise leave the client's stream_options
	// alone (vLLM's continuous_usage_stats), so that no field a client sends escapes the cap.
	ChargesUsage bool
	// NoStreamOptions is true when the decoder saw that Body has no "stream_options" member, so
	// that an adapter adding one need not walk the body for it; false when it has one or the
	// decoder did not say.
	NoStreamOptions bool
	// Body is the client's JSON with the Hayula fields (x-fallback-on, x-route-hint,
	// x-hayula-privacy) removed; adapters splice the upstream model into it.
	Body []byte
	// ModelAt is where the "model" member's value lies in Body, [ModelAt[0], ModelAt[1]), when
	// the server's decode walked Body as a well-formed object with exactly one "model" member;
	// zero when not known. An adapter that replaces the model splices there instead of walking
	// Body again.
	ModelAt [2]int
	// KnownMembers is true when the server's decode walked Body and found only the top-level
	// members it decodes itself (model, messages, stream, the sampling fields, tools, …): an
	// adapter that looks for other members of Body (the ollama adapter's options, think,
	// keep_alive, logprobs) need not search it. False when not known, as for a Request built
	// otherwise: the adapter looks.
	KnownMembers bool
	// Validated is true when the server's decode accepted Body: it is valid JSON and valid UTF-8
	// throughout (jsonx.Text's walk, or jsonx.FixText before encoding/json; any other body is
	// refused with a 400; the Responses bridge's chat body, not checked again, is written valid
	// out of a client's body checked so: TestWrittenDecodesAsChat), and so is each raw value of
	// Messages, a slice of it. A translating adapter that reads a message's text out of it need
	// not check the literal again (upstream's readContent). Whatever writes into Body or
	// Messages afterwards must keep it so. False when not known, as for a Request built
	// otherwise: the adapter checks.
	Validated bool
	// Messages are the chat messages, content kept raw.
	Messages []Message
	// Prompt is a completions request's prompt, raw JSON as the body has it; nil otherwise.
	Prompt json.RawMessage
	// Images is true when any message carries an image part.
	Images bool
	// RemoteImages is true when an image part's image_url is an http(s) URL to fetch rather than
	// a data: URL that carries the image: the Ollama and SAIF adapters cannot fetch one.
	RemoteImages bool
	// Tools is true when the request declares tools (or functions).
	Tools bool
	// Choices is the client's n when it asks for more than one choice; 0 otherwise.
	Choices int
	// Structured is true when response_format asks for a JSON object or a JSON schema, and
	// Logprobs when the request asks for logprobs: what a protocol without those fields (SAIF's)
	// cannot honour.
	Structured, Logprobs bool
	// NativeFormat is true when Ollama's own top-level format asks for JSON ("json" or a schema
	// object), which the ollama adapter sends as /api/chat's format: what SAIF's protocol cannot
	// honour any more than a JSON response_format. Another value asks for nothing certain (the
	// ollama adapter refuses it, an openai target reads it as it likes) and leaves it false.
	NativeFormat bool
	// HideReasoning is true when OpenRouter's reasoning object says exclude: true: the model
	// may think, and the client gets none of its reasoning. Every adapter keeps it from the
	// answer, whole and streamed; an openai target is sent the object as written as well (an
	// OpenRouter target honours it itself, a local server does not know it).
	HideReasoning bool
	// OpenAIOnly names the first field the request sets that only the OpenAI protocol carries:
	// "logit_bias" with an entry, or "modalities" asking for "audio"; for completions "echo"
	// (true), "suffix" (not empty), "prompt" when it is not one string (a batch, token ids), or
	// "max_tokens" when it is 0 (SAIF's protocol reads a 0 it leaves out as no limit);
	// for embeddings "input" when it is not text (token ids); for chat also "functions" (the
	// legacy ones declared), "custom" (a custom tool offered, Params.OffersCustomTools) and a
	// content part's type, "input_audio" or "file". Ollama's native API and SAIF have none of
	// them, and an answer without them is not the one asked for. "" for none.
	OpenAIOnly string
	// PromptTokensMin is a lower bound of the prompt's tokens (see filter.PromptTokensMin). The
	// server leaves it 0 when the body is too small to overflow any target of the route.
	PromptTokensMin int
	// MaxTokens is max_completion_tokens, else max_tokens; 0 when absent.
	MaxTokens int
	// Dimensions is an embeddings request's dimensions, the width its vectors must have; 0 when
	// absent or null. Adapters hold the answer to it without reading the body again.
	Dimensions int
	// Base64 is true when an embeddings request asked for encoding_format "base64": its answer's
	// embeddings may then be base64 strings, where otherwise each must be an array of numbers.
	Base64 bool
	// Inputs is how many inputs an embeddings request sends (1 for a string or an array of token
	// ids, else the array's length), as many as its answer's data must hold; 0 when not known
	// (another endpoint), which holds the answer to nothing.
	Inputs int
	// Strict is true when the route, the key or the request asked for privacy.
	Strict bool
	// NoFallback is true when the request said x-fallback-on: false.
	NoFallback bool
	// RouteHint is x-route-hint.
	RouteHint string
	// Params are the sampling and shaping fields adapters translate.
	Params Params
}

// Message is one chat message with its content kept raw (a string or an array of parts).
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	// Refusal is an assistant message's refusal as the client sent it back (raw JSON, a string
	// when set): OpenAI answers a refusal with it and content null.
	Refusal json.RawMessage `json:"refusal,omitempty"`
	// ReasoningContent and Reasoning are an assistant message's reasoning as a client replays it
	// (raw JSON, a string when set): DeepSeek's field, which the gateway answers with, and the
	// one vLLM and Ollama's own OpenAI endpoint answer with. The ollama adapter sends it back as
	// the message's thinking; an OpenAI-compatible upstream reads it from the body.
	ReasoningContent json.RawMessage `json:"reasoning_content,omitempty"`
	Reasoning        json.RawMessage `json:"reasoning,omitempty"`
}

// Params are the request fields that non-OpenAI adapters translate. Raw fields are nil when absent.
type Params struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	// FrequencyPenalty and PresencePenalty are OpenAI's penalties, which Ollama takes as options.
	FrequencyPenalty *float64        `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64        `json:"presence_penalty,omitempty"`
	Stop             json.RawMessage `json:"stop,omitempty"` // a string or an array of strings
	ResponseFormat   json.RawMessage `json:"response_format,omitempty"`
	ToolsRaw         json.RawMessage `json:"tools,omitempty"`
	ToolChoice       json.RawMessage `json:"tool_choice,omitempty"`
	// Functions and FunctionCall are the legacy functions and function_call that tools and
	// tool_choice replaced, which only the OpenAI protocol carries.
	Functions    json.RawMessage `json:"functions,omitempty"`
	FunctionCall json.RawMessage `json:"function_call,omitempty"`
}

// StopList returns the stop sequences as a list, for the adapters that translate them, without
// the empty strings: OpenAI's API stops at none, while Ollama's runner finds "" in any text and
// stops before the first token (an empty answer to a client that sends "stop": "" for an empty
// stop field; TestEmptyStopDropped). nil when none is left.
func (p *Params) StopList() []string {
	if len(p.Stop) == 0 || string(p.Stop) == "null" {
		return nil
	}
	var one string
	if json.Unmarshal(p.Stop, &one) == nil {
		if one == "" {
			return nil
		}
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(p.Stop, &many)
	kept := many[:0]
	for _, s := range many {
		if s != "" {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// OffersTools reports whether the request offers the model tools it may call: a tools array
// that is not empty, with a tool_choice other than "none" (which asks for a text answer, as the
// Vercel AI SDK's toolChoice 'none' does, however the string is escaped) and other than an
// allowed_tools that lists no tool (an empty list), which offers none as "none" does. A custom
// tool is a tool: an allowed_tools that lists one alone offers it (TestAllowedCustomToolIsOffered).
// The server's eligibility and the adapters that translate tools read it alike, so that the
// tools filter drops a target without tools only for a request that offers some
// (TestOffersTools).
func (p *Params) OffersTools() bool {
	if !NonEmptyArray(p.ToolsRaw) {
		return false
	}
	c := bytes.TrimSpace(p.ToolChoice)
	if len(c) == 0 {
		return true
	}
	switch c[0] {
	case '"':
		var s string
		return json.Unmarshal(c, &s) != nil || s != "none"
	case '{':
		listed, _, ok := readAllowed(c)
		return !ok || len(listed) > 0
	}
	return true
}

// OffersFunctions reports whether the request offers the model legacy functions it may call: a
// functions array that is not empty, with a function_call other than "none", which asks for a
// text answer as tool_choice "none" does (TestFunctionsWithCallNoneNotSentToATargetWithout).
func (p *Params) OffersFunctions() bool {
	if !NonEmptyArray(p.Functions) {
		return false
	}
	c := bytes.TrimSpace(p.FunctionCall)
	var s string
	return len(c) == 0 || c[0] != '"' || json.Unmarshal(c, &s) != nil || s != "none"
}

// OffersCustomTools reports whether the request offers the model a custom tool
// ({"type":"custom","custom":{…}}, whose input is free-form text rather than JSON arguments),
// which only the OpenAI protocol carries: it offers tools (OffersTools), and tools holds one that
// tool_choice leaves callable. A tool_choice naming a function tool leaves none; an
// allowed_tools leaves one when it lists one; any other (none, "auto", "required", a custom
// tool named) leaves every tool (TestCustomToolsSkipOllama).
func (p *Params) OffersCustomTools() bool {
	// The bytes first: a request with tools but none custom (nearly every one) is not read a
	// second time, since the server and the ollama adapter have asked OffersTools already.
	if !bytes.Contains(p.ToolsRaw, []byte("custom")) && !bytes.Contains(p.ToolsRaw, []byte(`\u`)) || !p.OffersTools() {
		return false
	}
	isCustom := func(e allowedEntry) bool { return e.Type == "custom" }
	if c := bytes.TrimSpace(p.ToolChoice); len(c) > 0 && c[0] == '{' {
		if listed, _, ok := readAllowed(c); ok {
			return slices.ContainsFunc(listed, isCustom)
		}
		var named struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(c, &named) == nil && named.Type == "function" {
			return false
		}
	}
	var tools []allowedEntry
	return json.Unmarshal(p.ToolsRaw, &tools) == nil && slices.ContainsFunc(tools, isCustom)
}

// AllowedFunctions reads a tool_choice of type allowed_tools, in chat's shape
// ({"type":"allowed_tools","allowed_tools":{"mode":…,"tools":[…]}}) or the Responses API's
// ({"type":"allowed_tools","mode":…,"tools":[…]}, which clients that speak both APIs send to chat
// too). ok reports that choice is one; names are the function tools it lists, in order, each
// named under "function" (chat) or at the top (Responses), with type "function" or none; param is
// the member that lists them, for an error that names it. A custom tool is no function.
func AllowedFunctions(choice json.RawMessage) (names []string, param string, ok bool) {
	listed, param, ok := readAllowed(choice)
	for _, e := range listed {
		if e.Type != "function" && e.Type != "" {
			continue
		}
		if n := e.Function.Name; n != nil {
			names = append(names, *n)
		} else if e.Name != nil {
			names = append(names, *e.Name)
		}
	}
	return names, param, ok
}

// allowedEntry is a tool as an allowed_tools tool_choice lists it, or as tools declares it.
type allowedEntry struct {
	Type     string  `json:"type"`
	Name     *string `json:"name"`
	Function struct {
		Name *string `json:"name"`
	} `json:"function"`
}

// readAllowed reads a tool_choice of type allowed_tools in either shape (AllowedFunctions):
// the tools it lists, of every type, and the member that lists them; ok is false for a choice
// of another type.
func readAllowed(choice json.RawMessage) (listed []allowedEntry, param string, ok bool) {
	var c struct {
		Type    string         `json:"type"`
		Tools   []allowedEntry `json:"tools"`
		Allowed *struct {
			Tools []allowedEntry `json:"tools"`
		} `json:"allowed_tools"`
	}
	if json.Unmarshal(choice, &c) != nil || c.Type != "allowed_tools" {
		return nil, "", false
	}
	if c.Allowed != nil {
		return c.Allowed.Tools, "tool_choice.allowed_tools.tools", true
	}
	return c.Tools, "tool_choice.tools", true
}

// NonEmptyArray reports whether raw is a JSON array with at least one element.
func NonEmptyArray(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 2 && raw[0] == '[' && len(bytes.TrimSpace(raw[1:len(raw)-1])) > 0
}
