package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/echo"
	"github.com/hayula/gateway/internal/jsonx"
)

// openaiOllama translates one OpenAI request to Ollama's native API (POST /api/chat, NDJSON
// streaming; POST /api/embed for embeddings) and the answer back. Target.URL is Ollama's base
// URL without /v1, e.g. http://127.0.0.1:11434.
//
// Ollama's own OpenAI-compatible endpoint exists, but the native one is what every Ollama
// version serves, and it reports done_reason and token counts on every answer, streamed or not.
type openaiOllama struct {
	t       *core.Target
	c       *http.Client
	now     func() time.Time
	newID   func() string
	id      string      // the gateway's request ID, sent as X-Request-Id; "" for none
	readers *readerPool // lends a stream its line reader; nil: each stream its own
}

// ollamaMessage is a message of /api/chat, both ways. Thinking comes back from models run with
// think enabled; the gateway sends an assistant message's replayed reasoning as it
// (replayedThinking). ToolCallID is a tool result's tool_call_id, beside its tool_name: Ollama's
// Message has both, and its own OpenAI endpoint fills both (TestOllamaToolIDsSent).
type ollamaMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// contentJSON is the content as the client's JSON string wrote it, when that is what
	// mustJSON writes for its text (flatContent.literal): appendOllamaMessage copies it, and
	// Content is left empty. nil otherwise. In a stream's line (decodeOllamaLine's literal) it
	// is the token's literal as Ollama wrote it, a slice of the line, when plainToken says the
	// chunk can carry it as it is.
	contentJSON []byte
	Thinking    string           `json:"thinking,omitempty"`
	Images      []string         `json:"images,omitempty"`
	ToolCalls   []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName    string           `json:"tool_name,omitempty"`
	ToolCallID  string           `json:"tool_call_id,omitempty"`
}

// ollamaToolCall is Ollama's tool call: arguments are a JSON object, not a string. Newer Ollama
// answers an id with each call and reads one back in the history; older ones have none.
type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Index     *int            `json:"index,omitempty"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type ollamaOptions struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	NumPredict  int      `json:"num_predict,omitempty"`
	NumCtx      int      `json:"num_ctx,omitempty"`
	FreqPenalty *float64 `json:"frequency_penalty,omitempty"`
	PresPenalty *float64 `json:"presence_penalty,omitempty"`
	// TopK, MinP and RepeatPenalty are the client's Ollama sampling fields (ollamaSampling).
	TopK          *int64   `json:"top_k,omitempty"`
	MinP          *float64 `json:"min_p,omitempty"`
	RepeatPenalty *float64 `json:"repeat_penalty,omitempty"`
}

// set reports whether any option is set, so that a request with none sends no options.
func (o *ollamaOptions) set() bool {
	return o.Temperature != nil || o.TopP != nil || o.Seed != nil || o.Stop != nil || o.NumPredict > 0 ||
		o.NumCtx > 0 || o.FreqPenalty != nil || o.PresPenalty != nil || o.TopK != nil || o.MinP != nil ||
		o.RepeatPenalty != nil
}

type ollamaChatRequest struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools,omitempty"`
	Format   json.RawMessage `json:"format,omitempty"`
	// Options is the *ollamaOptions the gateway set, or, when the client sent options of its
	// own, the object merged from both (mergedOptions); nil for none.
	Options any  `json:"options,omitempty"`
	Stream  bool `json:"stream"`
	// Truncate is always false: by default Ollama drops a prompt's oldest messages, and cuts the
	// rest from its start, to fit num_ctx, and answers as if it had read it all. Asked not to, it
	// refuses the prompt (400 "the input length exceeds the context length"), an overflow that
	// moves the chain on (TestOllamaChatNotTruncated), as OpenAI refuses it; an Ollama older than
	// the field ignores it.
	Truncate bool `json:"truncate"`
	// Logprobs and TopLogprobs are the client's (Ollama v0.12.11 on; an older one ignores them).
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs int  `json:"top_logprobs,omitempty"`
	// Think is what the client asked of the thinking (ollamaThink): false, true, a level, or a
	// budget of thinking tokens (nativeThink); nil when unsent.
	Think json.RawMessage `json:"think,omitempty"`
	// KeepAlive is the client's keep_alive as it wrote it, a number of seconds or a duration
	// (ollamaSampling); nil when unsent.
	KeepAlive json.RawMessage `json:"keep_alive,omitempty"`
	// hideThinking keeps the model's thinking from the client (the reasoning object's exclude):
	// not sent, read by chat.
	hideThinking bool
}

// ollamaChatResponse is a whole /api/chat answer or one line of a stream. PromptEvalCount and
// EvalCount are the done line's counts, nil when left out (reportedUsage).
type ollamaChatResponse struct {
	Model           string          `json:"model"`
	CreatedAt       string          `json:"created_at"`
	Message         ollamaMessage   `json:"message"`
	Done            bool            `json:"done"`
	DoneReason      string          `json:"done_reason"`
	PromptEvalCount *int            `json:"prompt_eval_count"`
	EvalCount       *int            `json:"eval_count"`
	Error           json.RawMessage `json:"error"`
	// Logprobs are the tokens of this line (of the whole answer when not streamed), when asked.
	Logprobs []logprobJSON `json:"logprobs"`
}

func (a *openaiOllama) chat(ctx context.Context, req *core.Request) (*Response, error) {
	if !Serves(a.t.Adapter, req.Op) {
		return nil, unsupportedOp(a.t, req.Op)
	}
	if req.Op == core.OpEmbeddings {
		return a.embed(ctx, req)
	}
	out, err := a.translate(req)
	if err != nil {
		return nil, err
	}
	reasoning := thinkingOff(a.t.Reasoning, out.Think)
	lb := lendBody(a.c, len(req.Body)+256)
	lb.b = appendOllamaRequest(lb.b, out)
	resp, err := a.post(ctx, "/api/chat", lb.b, req.Stream)
	lb.give() // sent
	if err != nil {
		return nil, err
	}
	if req.Stream {
		st := a.newStream(resp.Body, req.IncludeUsage, reasoning)
		st.hideThinking = out.hideThinking
		return &Response{Stream: st, UpstreamID: upstreamID(resp, a.t.APIKey)}, nil
	}
	upID := upstreamID(resp, a.t.APIKey) // before the body (see openaiOpenAI.body)
	raw, err := readAnswer(ctx, a.t, resp)
	if err != nil {
		return nil, err
	}
	// Read as a stream's line is: walked when it holds only text, json.Unmarshal otherwise.
	var m ollamaChatResponse
	if err := decodeOllamaLine(raw, true, true, nil, &m); err != nil {
		return nil, &core.ProtocolError{Target: a.t.Name, Err: &NotJSONError{Body: redact(capBytes(raw, maxErrorBody), a.t.APIKey)}}
	}
	if msg := text(m.Error); msg != "" {
		return nil, &core.ProtocolError{Target: a.t.Name, Err: &quotedError{what: "upstream error in a 200 answer", words: msg}}
	}
	if !m.Done {
		// Every whole answer of Ollama's says done; one that does not was cut short or is not
		// Ollama's (null and {} decode without an error), and must fall through rather than
		// reach the client as an empty or half completion.
		return nil, &core.ProtocolError{Target: a.t.Name, Err: errors.New("a 2xx /api/chat answer without done: true")}
	}
	if loadOnly(m.DoneReason) {
		return nil, &core.ProtocolError{Target: a.t.Name, Err: loadOnlyError(m.DoneReason)}
	}
	calls := a.toolCalls(m.Message.ToolCalls, false)
	finish := openAIFinish(m.DoneReason)
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	lp := m.Logprobs
	if r := besideUpstreamReasoning(reasoning, m.Message.Thinking != ""); r != core.ReasoningPassthrough {
		lp = contentLogprobs(lp, r)
	}
	logprobs := newLogprobs(lp)
	if logprobs == nil && len(m.Logprobs) > 0 {
		// Ollama sent entries and all were the think block's (a model cut by max_tokens while
		// it thinks): the content had no tokens, which is content [], as the openai adapter
		// answers it (withLogprobs), not null, which says none were sent
		// (TestThinkOpenCutLogprobsEmptyNotNull).
		logprobs = &logprobsJSON{Content: []logprobJSON{}}
	}
	usage, hasUsage, n := reportedUsage(m.PromptEvalCount, m.EvalCount) // in this frame (orNil)
	msg := completionMessage(reasoning, m.Message.Content, m.Message.contentJSON, m.Message.Thinking, calls)
	if out.hideThinking {
		msg.ReasoningContent = ""
	}
	c := completionJSON{ID: "chatcmpl-" + a.newID(), Object: "chat.completion", Created: a.created(m.CreatedAt),
		Model:   cmpOr(m.Model, a.t.Model),
		Choices: []choiceJSON{{Message: msg, Logprobs: logprobs, FinishReason: finish}},
		Usage:   usage.orNil(hasUsage)}
	b := appendCompletion(xlateBuf(resp, len(msg.ReasoningContent)+len(raw)+256), &c)
	return translatedResponse(resp, b, n, upID), nil
}

// loadOnly reports a done_reason that says nothing was generated: Ollama answers "load" to a
// chat request with no messages (it loads the model) and "unload" to one with keep_alive 0 too,
// as one object even when streaming was asked for. Relayed, it is an empty completion that says
// "stop", which the client takes for the model's answer; so it is a broken answer, and falls
// through (TestOllamaLoadIsNoAnswer).
func loadOnly(reason string) bool { return reason == "load" || reason == "unload" }

func loadOnlyError(reason string) error {
	return fmt.Errorf("a 2xx /api/chat answer with done_reason %q: the model was %sed, nothing was generated", reason, reason)
}

// post sends body to path below the target's URL.
func (a *openaiOllama) post(ctx context.Context, path string, body []byte, stream bool) (*http.Response, error) {
	p := whole(body)
	resp, err := post(ctx, a.c, a.t, path, &p, accept(stream, "application/x-ndjson"), a.id, a.now)
	if se, ok := errors.AsType[*core.StatusError](err); ok && modelCannot(se) {
		return nil, &core.UnmetError{Err: se}
	}
	return resp, err
}

// cannotPhrases are what Ollama answers, with a 400, when the model lacks what the request
// needs (server/routes.go and images.go): CheckCapabilities' "registry.ollama.ai/library/
// gemma:2b does not support tools" (also insert, vision, embedding), ChatHandler's "\"gemma:2b\"
// does not support thinking" and "… does not support chat", in the versions that allow a
// think level only for gpt-oss, "think value \"high\" is not supported for this model", and, in
// those before its thinking budgets, its decoding's "invalid think value: \"max\" (must be …)"
// for the levels it added with them (TestOllamaOlderThinkLevelIsTheTargets) and "think must be a
// boolean or string …" for a budget, a number, which the gateway sends no other way
// (TestOllamaOlderThinkBudgetIsTheTargets).
var cannotPhrases = [...]string{" does not support ", "is not supported for this model", "invalid think value: ",
	"think must be a boolean or string"}

// modelCannot reports whether e is Ollama's refusal of a request its model cannot serve. It is
// the target's failure, not the request's (core.UnmetError, class endpoint): another target on
// the route may have the tools or the thinking, and must be asked; alone, the client gets the
// 400 as Ollama said it (TestOllamaCapabilityRefusalFallsThrough).
func modelCannot(e *core.StatusError) bool {
	if e.Status != http.StatusBadRequest {
		return false
	}
	for _, p := range cannotPhrases {
		if strings.Contains(e.Message, p) {
			return true
		}
	}
	return false
}

// maxPrealloc is the largest stated Content-Length readAnswer allocates for before reading: a
// model's answer is kilobytes, and a 40-byte head must not commit 32 MiB of memory.
const maxPrealloc = 1 << 20

// readAnswer reads a whole 2xx body within maxBody. A body of known length up to maxPrealloc is
// read into a slice of exactly that size, rather than grown from 512 bytes by io.ReadAll.
func readAnswer(ctx context.Context, t *core.Target, resp *http.Response) ([]byte, error) {
	return readAnswerUpTo(ctx, t, resp, maxBody)
}

// readAnswerUpTo is readAnswer within limit bytes (maxBody, or maxEmbedBody for embeddings).
func readAnswerUpTo(ctx context.Context, t *core.Target, resp *http.Response, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength > limit {
		return nil, &core.ProtocolError{Target: t.Name, Err: fmt.Errorf("response body larger than %d MiB", limit>>20)}
	}
	var body []byte
	var err error
	if resp.ContentLength >= 0 && resp.ContentLength <= maxPrealloc {
		body = bodyBuf(resp, resp.ContentLength)
		_, err = io.ReadFull(resp.Body, body)
	} else {
		// Unknown, or large: the buffer grows as the bytes come, so that a length an upstream
		// states (up to maxBody) is not memory committed before a byte of it has arrived.
		body, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("upstream %s: %w", t.Name, ctxErr)
		}
		return nil, &core.StreamError{Target: t.Name, Message: "upstream broke off the response body: " + err.Error(), Err: err}
	}
	if int64(len(body)) > limit {
		return nil, &core.ProtocolError{Target: t.Name, Err: fmt.Errorf("response body larger than %d MiB", limit>>20)}
	}
	return body, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// created turns Ollama's created_at into Unix seconds; the clock stands in when it is missing.
func (a *openaiOllama) created(at string) int64 {
	if ts, err := time.Parse(time.RFC3339Nano, at); err == nil {
		return ts.Unix()
	}
	return a.now().Unix()
}

// translate builds the /api/chat request.
func (a *openaiOllama) translate(req *core.Request) (*ollamaChatRequest, error) {
	out := &ollamaChatRequest{Model: a.t.Model, Stream: req.Stream, Messages: make([]ollamaMessage, 0, len(req.Messages))}
	// Ollama answers a tool result by the tool's name; OpenAI by the call's id.
	callNames := map[string]string{}
	// results is where the run of tool messages after the last tool calls starts (-1 outside
	// one), and calls are those calls, for inCallOrder.
	results := -1
	var calls []toolCallJSON
	for i := range req.Messages {
		if results >= 0 && req.Messages[i].Role != "tool" {
			inCallOrder(out.Messages[results:i], req.Messages[results:i], calls)
			results = -1
		}
		m, err := a.message(i, &req.Messages[i], req.Validated, callNames, &calls)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, m)
		if len(m.ToolCalls) > 0 {
			results = i + 1
		}
	}
	if results >= 0 {
		inCallOrder(out.Messages[results:], req.Messages[results:], calls)
	}
	p := &req.Params
	if req.Tools && !core.NonEmptyArray(p.ToolsRaw) {
		// The request declares the legacy functions, which Ollama has no word for; dropped, the
		// model would answer without them as if it had been told of none.
		return nil, requestError(a.t, "unsupported_value", "functions",
			"the ollama adapter does not translate the legacy functions and function_call: declare them as tools (and tool_choice)")
	}
	if p.OffersCustomTools() {
		// Ollama's tools are functions: a custom tool would reach it as one with no name, which
		// the model cannot call. Eligibility skips the target for it (formatFilter).
		return nil, requestError(a.t, "unsupported_value", "tools",
			"the ollama adapter translates function tools only: a custom tool needs an openai target")
	}
	if p.OffersTools() {
		// OpenAI's tool definitions are already Ollama's shape. Ollama has no tool_choice: a named
		// function is offered alone, so that the model can call no other (it may still answer
		// in text), and "required" cannot be enforced.
		tools, err := namedTool(a.t, p.ToolsRaw, p.ToolChoice)
		if err != nil {
			return nil, err
		}
		out.Tools = tools
	}
	format, err := a.format(p.ResponseFormat)
	if err != nil {
		return nil, err
	}
	out.Format = format
	// num_ctx is the target's context_window: Ollama otherwise runs a model with its own default
	// context (a few thousand tokens) and drops the start of a longer prompt without a word,
	// while the gateway, by context_window, sent that prompt here because it fits
	// (TestOllamaContextWindowIsNumCtx). A client's num_ctx, top-level or in options, is not
	// sent where the target has one: a smaller window would refuse that prompt after all, a
	// larger one take memory the operator did not give the model, and any other than the last
	// reload the model (TestOllamaContextWindowNotTheClients).
	// The body's members in Ollama's own words, and logprobs, are looked for only in a body
	// that may have them: one the server found nothing but its own members in has none
	// (core.Request.KnownMembers), and is not searched for each of their keys.
	look := req.Body
	if req.KnownMembers {
		look = nil
	}
	o := &ollamaOptions{Temperature: p.Temperature, TopP: p.TopP, Seed: p.Seed, Stop: p.StopList(), NumPredict: req.MaxTokens,
		NumCtx: a.t.ContextWindow, FreqPenalty: p.FrequencyPenalty, PresPenalty: p.PresencePenalty}
	out.Logprobs, out.TopLogprobs = logprobsAsked(look)
	th, err := a.think(look)
	if err != nil {
		return nil, err
	}
	// The server reads the exclude too (core.Request.HideReasoning), for every adapter; either
	// one hides.
	out.Think, out.hideThinking = th.think, th.hide || req.HideReasoning
	native, err := a.ollamaSampling(look, o)
	if err != nil {
		return nil, err
	}
	out.KeepAlive = native.keepAlive
	if out.Format == nil {
		// response_format, OpenAI's field, decides when it asks for a format; Ollama's own
		// format is used when it asks for none (absent, null or text).
		out.Format = native.format
	}
	switch {
	case native.options != nil:
		merged, err := a.mergedOptions(o, native.options)
		if err != nil {
			return nil, err
		}
		if merged != nil {
			out.Options = merged
		}
	case o.set():
		out.Options = o
	}
	return out, nil
}

// samplingKeys are the raw keys ollamaSampling looks for before walking a body.
var samplingKeys = [...][]byte{[]byte(`"top_k"`), []byte(`"min_p"`), []byte(`"repeat_penalty"`), []byte(`"keep_alive"`),
	[]byte(`"options"`), []byte(`"format"`)}

// ollamaNative is what a body says in Ollama's own words at its top level, for /api/chat's:
// each nil when unsent or null.
type ollamaNative struct {
	keepAlive json.RawMessage // checked (keepAlive), as written
	format    json.RawMessage // "json" or a schema object (nativeFormat)
	options   json.RawMessage // an object, its members not yet read (mergedOptions)
}

// ollamaSampling reads the body's Ollama-only fields, which homelab clients send in the body
// (as LiteLLM's extra parameters, or for llama-server): top_k, min_p and repeat_penalty into o;
// keep_alive, returned as the client wrote it for /api/chat's top level; and Ollama's own
// options and format, as a script moved from /api/chat sends them (TestOllamaNativeOptions).
// Before, they were dropped without a word (TestOllamaSamplingOptions). The server has checked
// the kinds of the first three (passKinds); a value Ollama cannot take (out of its range, a
// keep_alive that is no duration, options that are no object, a format that is neither "json"
// nor a schema) is refused naming the field. null is the field unsent, and a body without any of
// the raw keys is not walked.
func (a *openaiOllama) ollamaSampling(body []byte, o *ollamaOptions) (native ollamaNative, err error) {
	found := false
	for _, k := range samplingKeys {
		if bytes.Contains(body, k) {
			found = true
			break
		}
	}
	if !found {
		return native, nil
	}
	it := jsonx.Object(body, false)
	for {
		k, v, ok := it.Next()
		if !ok {
			return native, nil
		}
		name, plain := jsonx.PlainKey(k)
		if !plain {
			continue
		}
		// As encoding/json reads a body, the last of a field's members wins, and null unsets it.
		switch string(name) {
		case "top_k":
			o.TopK = nil
			if v[0] != 'n' {
				n, ok := wholeNumber(v)
				if !ok {
					return native, a.outOfRange("top_k", v, "an integer")
				}
				o.TopK = &n
			}
		case "min_p":
			if o.MinP, err = a.floatField("min_p", v); err != nil {
				return native, err
			}
		case "repeat_penalty":
			if o.RepeatPenalty, err = a.floatField("repeat_penalty", v); err != nil {
				return native, err
			}
		case "keep_alive":
			if native.keepAlive, err = a.keepAlive(v); err != nil {
				return native, err
			}
		case "format":
			if native.format, err = a.nativeFormat(v); err != nil {
				return native, err
			}
		case "options":
			switch v[0] {
			case 'n':
				native.options = nil
			case '{':
				native.options = v
			default:
				return native, requestError(a.t, "invalid_type", "options", fmt.Sprintf(
					"Invalid type for 'options': expected an object of Ollama's options, but got %s instead.", jsonKind(v)))
			}
		}
	}
}

// nativeFormat checks Ollama's own format v: "json", or a JSON schema object, returned as
// written; "" and null are no format, as Ollama reads them. Ollama answers another string, or
// another kind, with a 500 when it starts the generation ("invalid format"), which would count
// against a sound target: the gateway refuses them first, naming format.
func (a *openaiOllama) nativeFormat(v []byte) (json.RawMessage, error) {
	switch v[0] {
	case 'n':
		return nil, nil
	case '{':
		return v, nil
	case '"':
		switch s, _ := jsonx.Unquote(v); s {
		case "":
			return nil, nil
		case "json":
			return v, nil
		}
		return nil, requestError(a.t, "invalid_value", "format", fmt.Sprintf(
			"Invalid value for 'format': %s (expected \"json\" or a JSON schema object).", echo.Bytes(v)))
	}
	return nil, requestError(a.t, "invalid_type", "format", fmt.Sprintf(
		"Invalid type for 'format': expected \"json\" or a JSON schema object, but got %s instead.", jsonKind(v)))
}

// optionKind is what an Ollama option's value must be (api.Options, and its Runner).
type optionKind uint8

const (
	optionOther   optionKind = iota // one the gateway does not know: sent as written
	optionNumber                    // Ollama's int and float32 options take any JSON number
	optionBool                      //
	optionStrings                   // stop
	// optionRunner is an option Ollama loads the model with (api.Runner, but num_ctx): a request
	// whose runner options differ from the loaded model's reloads it, for every client of the
	// model, and they change how fast it answers, not what. They are the operator's, not sent.
	optionRunner
)

// ollamaOption is the kind of the option name.
func ollamaOption(name string) optionKind {
	switch name {
	case "num_keep", "seed", "num_predict", "top_k", "top_p", "min_p", "typical_p", "repeat_last_n", "temperature",
		"repeat_penalty", "presence_penalty", "frequency_penalty", "mirostat", "mirostat_tau", "mirostat_eta", "num_ctx":
		return optionNumber
	case "penalize_newline":
		return optionBool
	case "stop":
		return optionStrings
	case "numa", "num_batch", "num_gpu", "main_gpu", "low_vram", "f16_kv", "logits_all", "vocab_only", "use_mmap",
		"use_mlock", "num_thread":
		return optionRunner
	}
	return optionOther
}

// has reports whether the gateway sets the option name, from an OpenAI field, a top-level
// sampling field, or the target's context_window.
func (o *ollamaOptions) has(name string) bool {
	switch name {
	case "temperature":
		return o.Temperature != nil
	case "top_p":
		return o.TopP != nil
	case "seed":
		return o.Seed != nil
	case "stop":
		return len(o.Stop) > 0
	case "num_predict":
		return o.NumPredict > 0
	case "num_ctx":
		return o.NumCtx > 0
	case "frequency_penalty":
		return o.FreqPenalty != nil
	case "presence_penalty":
		return o.PresPenalty != nil
	case "top_k":
		return o.TopK != nil
	case "min_p":
		return o.MinP != nil
	case "repeat_penalty":
		return o.RepeatPenalty != nil
	}
	return false
}

// mergedOptions is /api/chat's options from o, what the gateway sets, and client, the client's
// own options object: o's, then each of the client's that o does not set, as written. Where both
// name an option the gateway's wins: it comes from the OpenAI field (temperature, max_tokens, …)
// or top-level sampling field that every adapter reads, so a request is sampled alike whichever
// target of the route serves it, and num_ctx is the target's context_window, the window the
// context filter let the prompt through by (a client's num_ctx is sent when the target has
// none). The runner's options are not sent (optionRunner), nor nulls, which Ollama skips. A known
// option of a kind Ollama cannot load is refused naming it: Ollama answers it with a 500, which
// would count against a sound target. nil when nothing is left to send.
func (a *openaiOllama) mergedOptions(o *ollamaOptions, client json.RawMessage) (json.RawMessage, error) {
	out := json.RawMessage("{}")
	if o.set() {
		out = mustJSON(o)
	}
	out = out[:len(out)-1]
	it := jsonx.Object(client, false)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		name, plain := jsonx.PlainKey(k)
		if !plain {
			s, _ := jsonx.Unquote(k)
			name = []byte(s)
		}
		kind := ollamaOption(string(name))
		if v[0] == 'n' || kind == optionRunner || o.has(string(name)) {
			continue
		}
		var want string
		switch {
		case kind == optionNumber && !(v[0] == '-' || v[0] >= '0' && v[0] <= '9'):
			want = "a number"
		case kind == optionBool && v[0] != 't' && v[0] != 'f':
			want = "a boolean"
		case kind == optionStrings && !stringsOnly(v, false):
			want = "an array of strings"
		}
		if want != "" {
			param := "options." + string(name)
			return nil, requestError(a.t, "invalid_type", param, fmt.Sprintf(
				"Invalid type for '%s': expected %s, but got %s instead.", param, want, jsonKind(v)))
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, k...), ':'), v...)
	}
	if len(out) == 1 {
		return nil, nil
	}
	return append(out, '}'), nil
}

// wholeNumber is the JSON number v as an int64 when its value is a whole number in int64's
// range, however it is written: 40, or 40.0 and 1e2, which Ollama's options read as 40 and 100
// (TestOllamaTopKWholeNumber).
func wholeNumber(v []byte) (int64, bool) {
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// floatField is the number v of the field name, nil for null.
func (a *openaiOllama) floatField(name string, v []byte) (*float64, error) {
	if v[0] == 'n' {
		return nil, nil
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return nil, a.outOfRange(name, v, "a number")
	}
	return &f, nil
}

// maxKeepAlive is the longest keep_alive in seconds that Ollama can hold as a time.Duration; a
// longer one overflows it. -1 (any negative) is how to say "keep it loaded".
const maxKeepAlive = float64(math.MaxInt64 / int64(time.Second))

// keepAlive checks the client's keep_alive v as Ollama reads it: a number of seconds (negative:
// keep the model loaded), or a Go duration string ("10m", "1h30m", "-1m"; "0" unloads the
// model after the answer). It is returned as written, nil for null. Ollama refuses any other
// string, and another kind, with a 400; the gateway refuses them before asking, naming the field.
func (a *openaiOllama) keepAlive(v []byte) (json.RawMessage, error) {
	const how = " Send a number of seconds, or a duration such as \"10m\" or \"1h\"; a negative one keeps the model loaded."
	switch {
	case v[0] == 'n':
		return nil, nil
	case v[0] == '"':
		s, ok := jsonx.Unquote(v)
		if _, err := time.ParseDuration(s); !ok || err != nil {
			return nil, requestError(a.t, "invalid_value", "keep_alive",
				fmt.Sprintf("Invalid 'keep_alive': %s is not a duration Ollama reads.", echo.Bytes(v))+how)
		}
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		if f, err := strconv.ParseFloat(string(v), 64); err != nil || f > maxKeepAlive {
			return nil, requestError(a.t, "invalid_value", "keep_alive",
				fmt.Sprintf("Invalid 'keep_alive': %s seconds is more than Ollama can hold.", echo.Bytes(v))+how)
		}
	default:
		return nil, requestError(a.t, "invalid_type", "keep_alive",
			fmt.Sprintf("Invalid type for 'keep_alive': expected a string or a number, but got %s instead.", jsonKind(v)))
	}
	return v, nil
}

// outOfRange refuses the value v of the field name, of the kind want, which Ollama cannot take.
func (a *openaiOllama) outOfRange(name string, v []byte, want string) error {
	return requestError(a.t, "invalid_value", name,
		fmt.Sprintf("Invalid '%s': expected %s Ollama can take, but got %s.", name, want, echo.Bytes(v)))
}

// message translates m, the i-th message (valid: its content is known to be valid JSON in
// valid UTF-8, see readContent). callNames gathers each tool call's name by its id, for the
// results that follow; made gets m's tool calls as the client wrote them, when it has any.
func (a *openaiOllama) message(i int, m *core.Message, valid bool, callNames map[string]string, made *[]toolCallJSON) (ollamaMessage, error) {
	out := ollamaMessage{Role: m.Role}
	switch m.Role {
	case "developer":
		out.Role = "system"
	case "function":
		out.Role, out.ToolName = "tool", m.Name
	}
	fc, err := readContent(m.Content, valid)
	if err != nil {
		return out, requestError(a.t, "invalid_value", fmt.Sprintf("messages[%d].content", i),
			"message content must be a string or an array of content parts")
	}
	if fc.other != "" {
		return out, requestError(a.t, "unsupported_content", fmt.Sprintf("messages[%d].content", i),
			fmt.Sprintf("the ollama adapter cannot send content parts of type \"%s\"", echo.String(fc.other)))
	}
	if len(fc.literal) > 2 {
		out.contentJSON = fc.literal // a text, which assistantText keeps
	} else {
		out.Content = assistantText(m, fc.str())
	}
	if m.Role == "assistant" {
		if out.Thinking, err = replayedThinking(a.t, i, m); err != nil {
			return out, err
		}
	}
	for _, img := range fc.images {
		b64, isData, err := dataURLBase64(img.url)
		param := fmt.Sprintf("messages[%d].content[%d].image_url", i, img.part)
		switch {
		case img.url == "":
			return out, requestError(a.t, "invalid_image_url", param, "the image part has no url")
		case !isData:
			return out, requestError(a.t, "image_url_not_supported", param,
				"Ollama cannot fetch images by URL: send the image inline as a data: URL (data:image/png;base64,…)")
		case err != nil:
			return out, requestError(a.t, "invalid_image_url", param, err.Error())
		}
		out.Images = append(out.Images, b64)
	}
	if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
		var calls []toolCallJSON
		if err := json.Unmarshal(m.ToolCalls, &calls); err != nil {
			return out, requestError(a.t, "invalid_value", fmt.Sprintf("messages[%d].tool_calls", i),
				"tool_calls must be an array of tool calls")
		}
		*made = calls
		for j, c := range calls {
			args, err := argumentsObject(c.Function.Arguments)
			if err != nil {
				// OpenAI's API takes any text here (a model's call cut off by max_tokens, sent
				// back in the history), and Ollama only an object: this target's failure, not the
				// request's, so that an openai target on the route serves it
				// (TestUntranslatableChatSkipsTranslators); alone, the client gets this 400.
				return out, &core.UnmetError{Err: requestError(a.t, "invalid_value",
					fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j),
					"tool call arguments must be a JSON object for Ollama: "+err.Error())}
			}
			var oc ollamaToolCall
			oc.ID, oc.Function.Name, oc.Function.Arguments = c.ID, c.Function.Name, args
			out.ToolCalls = append(out.ToolCalls, oc)
			if c.ID != "" {
				callNames[c.ID] = c.Function.Name
			}
		}
	}
	if m.Role == "tool" {
		out.ToolCallID = m.ToolCallID
		out.ToolName = callNames[m.ToolCallID]
		if out.ToolName == "" {
			out.ToolName = m.Name
		}
	}
	return out, nil
}

// inCallOrder puts run, the tool messages that follow an assistant's tool calls (src, as the
// client sent them), into the order of calls, which they answer. Ollama's tool
// messages carry the tool's name, and the call id only in newer versions, which many templates do
// not read: they pair each result with the call in the same place, so two calls of one tool (the
// weather in two cities) answered in another order than they were made were read as each other's
// answers, without a word (TestOllamaToolResultsInCallOrder). Ollama's own OpenAI endpoint does
// not reorder them (openai/openai.go FromChatRequest keeps the client's order). Only a
// run that answers each call exactly once by tool_call_id is reordered; one that does not (a
// result missing or extra, an id unknown, repeated or empty) cannot be matched to the calls, and
// stays as the client ordered it, which is all Ollama then has to go by. A run already in order,
// nearly every one, costs a comparison per result.
func inCallOrder(run []ollamaMessage, src []core.Message, calls []toolCallJSON) {
	if len(run) < 2 || len(run) != len(calls) {
		return
	}
	ordered := true
	for k := range src {
		if src[k].ToolCallID != calls[k].ID {
			ordered = false
			break
		}
	}
	if ordered {
		return
	}
	at := make(map[string]int, len(calls))
	for k := range calls {
		id := calls[k].ID
		if _, twice := at[id]; twice || id == "" {
			return
		}
		at[id] = k
	}
	sorted := make([]ollamaMessage, len(run))
	for k := range src {
		j, ok := at[src[k].ToolCallID]
		if !ok {
			return // an id no call has, or one a result before this one answered
		}
		delete(at, src[k].ToolCallID)
		sorted[j] = run[k]
	}
	copy(run, sorted)
}

// replayedThinking is the reasoning an assistant message m (the i-th) carries back, for its
// thinking: the first of reasoning_content (DeepSeek's field, which the gateway answers with) and
// reasoning (vLLM's and Ollama's own OpenAI endpoint's) that is a non-empty string. Some clients
// replay it so that a model that thought before its tool calls sees that thinking on the next
// turn; dropped, the model lost it (TestOllamaReplaysReasoning). Either field of another kind
// than a string (or null) is refused naming it, as the text cannot be told.
func replayedThinking(t *core.Target, i int, m *core.Message) (string, error) {
	var thinking string
	for _, f := range [...]struct {
		name string
		raw  json.RawMessage
	}{{"reasoning_content", m.ReasoningContent}, {"reasoning", m.Reasoning}} {
		raw := bytes.TrimSpace(f.raw)
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var s string
		ok := raw[0] == '"'
		if ok {
			s, ok = jsonx.Unquote(raw)
		}
		if !ok {
			param := fmt.Sprintf("messages[%d].%s", i, f.name)
			return "", requestError(t, "invalid_type", param,
				fmt.Sprintf("Invalid type for '%s': expected a string, but got %s instead.", param, jsonKind(raw)))
		}
		if thinking == "" {
			thinking = s
		}
	}
	return thinking, nil
}

// jsonKind names the kind of the JSON value v, with its article, for an error that refuses it.
func jsonKind(v []byte) string {
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	}
	return "a number"
}

// argumentsObject turns OpenAI's arguments string into the object Ollama wants. An empty string
// is an empty object: models call argument-less tools that way.
func argumentsObject(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		// "null" decodes into a map without an error, and is no object either.
		return nil, errors.New("arguments are null, not an object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// namedTool returns the tools to offer for tool_choice: all of them, or, when it names a
// function ({"type":"function","function":{"name":…}}), that function's tool alone, or, when it
// is {"type":"allowed_tools","allowed_tools":{"tools":[…]}}, the tools it lists (Ollama has no
// tool_choice: a tool not offered is the only way to keep the model from calling it). Both are
// also taken in the Responses API's shape, the name one level up ({"type":"function","name":…},
// {"type":"allowed_tools","tools":[{"type":"function","name":…}]}): clients that speak both APIs
// send it to chat too, and ignored, it would offer every tool. A name no tool has, or an empty
// one, is the client's mistake, as OpenAI answers it.
func namedTool(t *core.Target, tools, choice json.RawMessage) (json.RawMessage, error) {
	choice = bytes.TrimSpace(choice)
	if len(choice) == 0 || choice[0] != '{' {
		return tools, nil
	}
	// fn names a function either way: under "function" (chat) or at the top (Responses).
	type fn struct {
		Name     *string `json:"name"`
		Function struct {
			Name *string `json:"name"`
		} `json:"function"`
	}
	name := func(f fn) *string {
		if f.Function.Name != nil {
			return f.Function.Name
		}
		return f.Name
	}
	var named struct {
		Type string `json:"type"`
		fn
	}
	if json.Unmarshal(choice, &named) != nil {
		return tools, nil
	}
	want, param, allowed := core.AllowedFunctions(choice)
	switch {
	case allowed:
		if len(want) == 0 {
			// It allows no function tool (an empty list, or custom tools, which Ollama has
			// none of): offered none, as "none" offers none, the model can call nothing else.
			// OffersTools (an empty list) and OffersCustomTools (a custom tool listed) say so
			// first, so this is for a caller that did not ask them.
			return nil, nil
		}
	case name(named.fn) != nil:
		want, param = []string{*name(named.fn)}, "tool_choice"
	default:
		return tools, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(tools, &list) != nil {
		return tools, nil
	}
	// Each tool is decoded once, into the first tool of each name, and each name listed is looked
	// up there: searching the tools from the first for every name listed, and the names before it
	// for a repeat, cost work quadratic in a long list (TestNamedToolLinear).
	byName := make(map[string]json.RawMessage, len(list))
	for _, tool := range list {
		var d struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(tool, &d) == nil && d.Function.Name != "" {
			if _, ok := byName[d.Function.Name]; !ok {
				byName[d.Function.Name] = tool
			}
		}
	}
	offered := make(map[string]bool, len(want))
	out := json.RawMessage{'['}
	for _, name := range want {
		// A name listed twice is offered once: Ollama would otherwise get two tools of one
		// name, which a model may take for two functions.
		if offered[name] {
			continue
		}
		tool, found := byName[name]
		if !found {
			return nil, requestError(t, "invalid_value", param,
				fmt.Sprintf("tool_choice names the function \"%s\", which is not in tools", echo.String(name)))
		}
		offered[name] = true
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, tool...)
	}
	return append(out, ']'), nil
}

// thinkKeys are the raw keys think looks for before walking a body: the first is the start of
// both "reasoning_effort" and "reasoning", so that one pass over the body finds either; the last
// two are chat_template_kwargs' switches.
var thinkKeys = [...][]byte{[]byte(`"reasoning`), []byte(`"think"`), []byte(`"enable_thinking"`), []byte(`"thinking"`)}

// ollamaThink is what a body asks of the model's thinking: think for /api/chat (nil when it asks
// nothing), and whether the thinking is kept from the client (the reasoning object's exclude).
type ollamaThink struct {
	think json.RawMessage
	hide  bool
}

// think maps the body's thinking setting to /api/chat's think. OpenRouter's reasoning object
// (which Ollama's own OpenAI endpoint reads first, for its effort, and Open WebUI sends in place
// of reasoning_effort) goes first: enabled false is false, before anything else; its effort is
// that level. Then reasoning_effort (a string, or an object with an "effort", as openai-agents
// sends it). Both are mapped as Ollama's own OpenAI endpoint maps them: "none" is false, a level
// is that level, and OpenAI's minimal, xhigh and max are low, high and high, levels every Ollama
// with levels takes (one before its thinking budgets refuses the others). Without either, a
// top-level think (Ollama's own field, which Open WebUI's "think (Ollama)" setting sends to an
// OpenAI connection) goes as written when Ollama reads it: a boolean or a level, "minimal" and
// "max" among them; without that, chat_template_kwargs' enable_thinking, else its thinking, when
// it is a boolean (the chat template's switch: vLLM's and llama-server's for Qwen3, DeepSeek
// V3.1's, which Open WebUI's custom parameters and LiteLLM's extra_body send). The reasoning
// object's enabled true, or a max_tokens above 0, turn thinking on at the level those give, or
// true when they give none or say off (TestOllamaParams). Left out, a thinking model would think
// as long as it likes whatever the client asked; before, reasoning and think were dropped so. A
// value that is no level, or a reasoning member of another kind than OpenRouter's, is refused
// naming its field, as OpenAI refuses it (TestOllamaReasoningEffortRefused,
// TestOllamaReasoningObjectAndThink). The object's exclude hides the thinking
// (TestOllamaReasoningSwitches). A body without any of the raw keys is not walked; the server has
// checked reasoning_effort's kind.
func (a *openaiOllama) think(body []byte) (ollamaThink, error) {
	found := false
	for _, k := range thinkKeys {
		if bytes.Contains(body, k) {
			found = true
			break
		}
	}
	if !found {
		return ollamaThink{}, nil
	}
	var effort, reasoning, think, kwargs json.RawMessage
	it := jsonx.Object(body, false)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		name, plain := jsonx.PlainKey(k)
		if !plain {
			continue
		}
		switch string(name) {
		case "reasoning_effort":
			effort = v
		case "reasoning":
			reasoning = v
		case "think":
			think = v
		case "chat_template_kwargs":
			kwargs = v
		}
	}
	r, err := a.reasoningObject(reasoning)
	if err != nil {
		return ollamaThink{}, err
	}
	out := ollamaThink{hide: r.exclude}
	if r.off {
		out.think = json.RawMessage("false")
		return out, nil
	}
	param := "reasoning_effort"
	if e := r.effort; len(e) > 0 && string(e) != "null" {
		effort, param = e, "reasoning.effort"
	} else if len(effort) > 0 && effort[0] == '{' {
		effort = effortIn(effort)
	}
	switch {
	case len(effort) > 0 && string(effort) != "null":
		out.think, err = a.effortThink(effort, param)
	case len(think) > 0 && string(think) != "null":
		out.think, err = a.nativeThink(think)
	default:
		out.think = templateThinking(kwargs)
	}
	if r.on && param != "reasoning.effort" && (out.think == nil || string(out.think) == "false") {
		out.think = json.RawMessage("true")
	}
	return out, err
}

// effortThink is the reasoning effort e, named param, as think.
func (a *openaiOllama) effortThink(e json.RawMessage, param string) (json.RawMessage, error) {
	var level string
	if json.Unmarshal(e, &level) == nil {
		switch level {
		case "none":
			return json.RawMessage("false"), nil
		case "minimal":
			level = "low"
		case "xhigh", "max":
			level = "high"
		}
		switch level {
		case "low", "medium", "high":
			return mustJSON(level), nil
		}
	}
	return nil, requestError(a.t, "invalid_value", param, fmt.Sprintf(
		"Invalid value for '%s': %s (expected \"none\", \"minimal\", \"low\", \"medium\", \"high\", \"xhigh\" or \"max\").",
		param, echo.Bytes(e)))
}

// reasoningSwitches is what OpenRouter's reasoning object says beside its effort: off (enabled
// false), on (enabled true, or a max_tokens above 0: Ollama's think has no budget every version
// takes, so it is thinking on), and exclude (the thinking kept from the client).
type reasoningSwitches struct {
	effort           json.RawMessage
	off, on, exclude bool
}

// reasoningObject reads the reasoning object v; zero when v is no object. A member of another
// kind than OpenRouter's (booleans, and a number of tokens) is refused naming it. Its members are
// read by their exact names, the last of a name winning, as OpenRouter reads them and the server
// reads exclude for every adapter: encoding/json would match "Exclude" or "Enabled" too, and
// serve the request otherwise than another adapter of the route (TestOllamaReasoningObjectKeysAsSpelled).
func (a *openaiOllama) reasoningObject(v json.RawMessage) (reasoningSwitches, error) {
	var r reasoningSwitches
	if len(v) == 0 || v[0] != '{' {
		return r, nil
	}
	var o struct{ Effort, Enabled, MaxTokens, Exclude json.RawMessage }
	it := jsonx.Object(v, false)
	for {
		k, e, ok := it.Next()
		if !ok {
			break
		}
		switch name, _ := jsonx.Unquote(k); name {
		case "effort":
			o.Effort = e
		case "enabled":
			o.Enabled = e
		case "max_tokens":
			o.MaxTokens = e
		case "exclude":
			o.Exclude = e
		}
	}
	r.effort = o.Effort
	for _, m := range [...]struct {
		name, want string
		raw        json.RawMessage
		ok         bool
	}{
		{"enabled", "a boolean", o.Enabled, isBoolOrNull(o.Enabled)},
		{"exclude", "a boolean", o.Exclude, isBoolOrNull(o.Exclude)},
		{"max_tokens", "an integer", o.MaxTokens, len(o.MaxTokens) == 0 || isNull(o.MaxTokens) || isWholeNumber(o.MaxTokens)},
	} {
		if !m.ok {
			param := "reasoning." + m.name
			return r, requestError(a.t, "invalid_type", param, fmt.Sprintf(
				"Invalid type for '%s': expected %s, but got %s instead.", param, m.want, jsonKind(m.raw)))
		}
	}
	r.off = string(o.Enabled) == "false"
	r.exclude = string(o.Exclude) == "true"
	n, _ := wholeNumber(o.MaxTokens)
	r.on = string(o.Enabled) == "true" || n > 0
	return r, nil
}

func isBoolOrNull(v json.RawMessage) bool {
	s := string(v)
	return s == "" || s == "null" || s == "true" || s == "false"
}

func isWholeNumber(v json.RawMessage) bool {
	_, ok := wholeNumber(v)
	return ok
}

// effortIn is the "effort" member of v when v is an object (reasoning_effort sent as one); nil
// otherwise.
func effortIn(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	var o struct {
		Effort json.RawMessage `json:"effort"`
	}
	_ = json.Unmarshal(v, &o)
	return o.Effort
}

// templateThinking is chat_template_kwargs' enable_thinking as think when it is a boolean, else
// its thinking (DeepSeek V3.1's name for the switch) when that is; nil otherwise. They are the
// chat template's arguments, not Ollama's, so another value is not refused: a server that
// renders templates passes it to the template as it is.
func templateThinking(kwargs json.RawMessage) json.RawMessage {
	if len(kwargs) == 0 || kwargs[0] != '{' {
		return nil
	}
	// The template reads the key as it is spelled (Jinja's names are case-sensitive), so no
	// other spelling counts, and the last member of that name wins, as a JSON decoder reads it.
	var enable, thinking json.RawMessage
	it := jsonx.Object(kwargs, false)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		name, plain := jsonx.PlainKey(k)
		switch {
		case !plain:
		case string(name) == "enable_thinking":
			enable = v
		case string(name) == "thinking":
			thinking = v
		}
	}
	for _, on := range [...]json.RawMessage{enable, thinking} {
		switch string(on) {
		case "true", "false":
			return on
		}
	}
	return nil
}

// nativeThink checks a top-level think v as Ollama reads it, a boolean or one of its levels,
// returned as written, or a positive whole number, a budget of thinking tokens, returned as an
// integer; nil when unsent or null. "minimal" and "max" are the levels Ollama added with its
// thinking budgets, and the number came with them (types/model ThinkValue, which takes a JSON
// number whose value is a whole number above 0): an Ollama before them refuses them with a 400
// that moves the chain on (modelCannot; TestOllamaOlderThinkLevelIsTheTargets,
// TestOllamaOlderThinkBudgetIsTheTargets). Another value Ollama refuses, and so does the gateway
// before asking, naming think: 0 or less, as Ollama words it, is said with false
// (TestOllamaThinkBudget).
func (a *openaiOllama) nativeThink(v json.RawMessage) (json.RawMessage, error) {
	const levels = `true, false, "minimal", "low", "medium", "high", "max" or a number of thinking tokens above 0`
	switch {
	case len(v) == 0 || string(v) == "null":
		return nil, nil
	case string(v) == "true" || string(v) == "false":
		return v, nil
	case v[0] == '"':
		switch s, _ := jsonx.Unquote(v); s {
		case "minimal", "low", "medium", "high", "max":
			return v, nil
		}
		return nil, requestError(a.t, "invalid_value", "think", fmt.Sprintf(
			"Invalid value for 'think': %s (expected %s).", echo.Bytes(v), levels))
	case v[0] == '-' || '0' <= v[0] && v[0] <= '9':
		if n, ok := wholeNumber(v); ok && n > 0 {
			return strconv.AppendInt(nil, n, 10), nil
		}
		return nil, requestError(a.t, "invalid_value", "think", fmt.Sprintf(
			"Invalid value for 'think': %s (expected a whole number of thinking tokens above 0; false turns thinking off).", echo.Bytes(v)))
	}
	return nil, requestError(a.t, "invalid_type", "think", fmt.Sprintf(
		"Invalid type for 'think': %s (expected %s).", echo.Bytes(v), levels))
}

// format maps response_format: json_object is "json", json_schema is its schema, text is none.
func (a *openaiOllama) format(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, requestError(a.t, "invalid_value", "response_format", "response_format must be an object with a type")
	}
	switch rf.Type {
	case "", "text":
		return nil, nil
	case "json_object":
		return json.RawMessage(`"json"`), nil
	case "json_schema":
		s := bytes.TrimSpace(rf.JSONSchema.Schema)
		if len(s) == 0 || s[0] != '{' {
			return nil, requestError(a.t, "invalid_value", "response_format.json_schema.schema",
				"response_format json_schema needs a schema object")
		}
		return s, nil
	}
	return nil, requestError(a.t, "invalid_value", "response_format.type",
		fmt.Sprintf("the ollama adapter does not know response_format type \"%s\"", echo.String(rf.Type)))
}

// toolCalls turns Ollama's calls into OpenAI's, with ids made up where Ollama gave none and the
// arguments object written as the string OpenAI clients parse. In a stream each call also gets
// its index in the answer.
func (a *openaiOllama) toolCalls(in []ollamaToolCall, indexed bool) []toolCallJSON {
	return ollamaToolCalls(in, a.newID, indexed, 0)
}

func ollamaToolCalls(in []ollamaToolCall, newID func() string, indexed bool, first int) []toolCallJSON {
	if len(in) == 0 {
		return nil
	}
	out := make([]toolCallJSON, len(in))
	for i, c := range in {
		tc := &out[i]
		tc.ID, tc.Type = c.ID, "function"
		if tc.ID == "" {
			tc.ID = "call_" + newID()
		}
		tc.Function.Name = c.Function.Name
		tc.Function.Arguments = argumentsString(c.Function.Arguments)
		if indexed {
			idx := first + i
			tc.Index = &idx
		}
	}
	return out
}

// argumentsString is the OpenAI form of Ollama's arguments: compact JSON text. A string (as
// some builds send) is taken as already being that text.
func argumentsString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	if raw[0] == '"' {
		s, _ := rawString(raw)
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// ollamaStream turns /api/chat's NDJSON lines into chat.completion.chunk payloads: the role on
// the first, content and thinking as they come, tool calls with their running index, the
// finish_reason on the line that says done, then the usage chunk when asked for and the line has
// counts (the stream's Usage either way, none when it has neither: reportedUsage). A line with
// "error" is a *core.StreamError; so is a body that ends before done.
type ollamaStream struct {
	target       string
	key          core.Secret // redacted from a line an error quotes
	body         io.ReadCloser
	lines        *lineReader
	pool         *readerPool // where lines goes back on Close; nil for none
	now          func() time.Time
	newID        func() string
	reasoning    core.Reasoning
	model        string
	includeUsage bool
	hideThinking bool // the reasoning object's exclude: no reasoning_content goes to the client

	ch    *chunker
	calls int   // tool calls so far, for their indexes
	usage Usage // the done line's counts, once read
	queue

	line  ollamaChatResponse // the line read last, its strings slices of it or copies
	shape tokenShape         // what its token lines repeat (decodeOllamaLine)
}

// newStream reads an /api/chat stream, its think blocks as reasoning says (thinkingOff).
func (a *openaiOllama) newStream(body io.ReadCloser, includeUsage bool, reasoning core.Reasoning) *ollamaStream {
	return &ollamaStream{target: a.t.Name, key: a.t.APIKey, body: body, lines: a.readers.lineReader(body), pool: a.readers, now: a.now, newID: a.newID,
		reasoning: reasoning, model: a.t.Model, includeUsage: includeUsage}
}

// thinkingOff is the reasoning rule for a request sent with think (the /api/chat field): with
// think false (the client's reasoning_effort "none") the model writes no think block, and its
// answer has no </think> for think-open to end the reasoning at, so the answer is read as
// think-tags reads it instead of being taken for reasoning whole (TestThinkOpenThinkingOff).
func thinkingOff(r core.Reasoning, think json.RawMessage) core.Reasoning {
	if r == core.ReasoningThinkOpen && string(think) == "false" {
		return core.ReasoningThinkTags
	}
	return r
}

func (s *ollamaStream) Next() ([]byte, error) { return s.next(s) }

// read consumes one line, queueing what it says; a non-nil result ends the stream after the
// queue.
func (s *ollamaStream) read() error {
	if s.ch != nil {
		s.ch.reset() // the queue is empty: the chunks made so far are handed out
	}
	line, cut, err := s.lines.next()
	if err != nil {
		switch {
		case errors.Is(err, io.EOF):
			return &core.StreamError{Target: s.target, Message: "upstream closed the stream before it was done"}
		case errors.Is(err, errEventTooLarge):
			return &core.StreamError{Target: s.target, Message: "NDJSON line larger than 32 MiB", Err: err}
		}
		return &core.StreamError{Target: s.target, Message: "upstream broke off: " + err.Error(), Err: err}
	}
	m := &s.line
	if err := decodeOllamaLine(line, s.ch == nil, true, &s.shape, m); err != nil {
		if cut {
			return &core.StreamError{Target: s.target, Message: "upstream closed the stream inside a line"}
		}
		q := snippet(redact(line, s.key))
		return &core.StreamError{Target: s.target, Message: "upstream sent a line that is not JSON: " + q, Err: err, Quoted: len(q)}
	}
	if msg := text(m.Error); msg != "" {
		return &core.StreamError{Target: s.target, Message: msg, Quoted: len(msg)}
	}
	if m.Done && loadOnly(m.DoneReason) {
		return &core.StreamError{Target: s.target, Message: loadOnlyError(m.DoneReason).Error()}
	}
	if s.ch == nil {
		created := s.now().Unix()
		if ts, err := time.Parse(time.RFC3339Nano, m.CreatedAt); err == nil {
			created = ts.Unix()
		}
		s.ch = newChunker("chatcmpl-"+s.newID(), created, cmpOr(m.Model, s.model), s.reasoning)
		s.ch.hide = s.hideThinking
	}
	calls := ollamaToolCalls(m.Message.ToolCalls, s.newID, true, s.calls)
	s.calls += len(calls)
	lp := m.Logprobs
	if m.Message.Thinking != "" {
		s.ch.upstreamReasoned() // before the line's entries go through the content's splitter
	}
	if m.Message.Thinking != "" && m.Message.Content == "" && m.Message.contentJSON == nil {
		// A line of Ollama's own thinking: its tokens' entries are the reasoning's, and
		// logprobs.content is the content's (OpenAI's definition, as for think-tags).
		lp = nil
	}
	s.ch.setLogprobs(lp)
	if ev := s.ch.delta(m.Message.Content, m.Message.contentJSON, m.Message.Thinking, calls, nil); ev != nil {
		s.pending = append(s.pending, ev)
	}
	if !m.Done {
		return nil
	}
	finish := openAIFinish(m.DoneReason)
	if s.calls > 0 {
		finish = "tool_calls"
	}
	s.pending = append(s.pending, s.ch.finish(finish))
	u, ok, usage := reportedUsage(m.PromptEvalCount, m.EvalCount)
	s.usage = usage
	if s.includeUsage && ok {
		s.pending = append(s.pending, s.ch.usage(&u))
	}
	return io.EOF
}

// Usage is the counts of the line that said done, asked for or not (UsageStream).
func (s *ollamaStream) Usage() Usage { return s.usage }

// Buffered reports whether Next will return without waiting on the upstream.
func (s *ollamaStream) Buffered() bool { return s.ready(s) }

func (s *ollamaStream) buffered() bool { return s.lines.buffered() }

func (s *ollamaStream) held() []byte {
	if s.ch == nil {
		return nil
	}
	return s.ch.held()
}

// Close releases the connection and lends the line reader on: Next answers the queue's error
// from now on and never reads again. It is safe to call more than once.
func (s *ollamaStream) Close() error {
	err := s.close(s.body)
	s.pool.putLines(s.lines)
	s.lines = nil
	return err
}

// snippet is the head of an unreadable line or event, for the error that the client sees. The
// cut falls between characters: one inside a character would leave invalid UTF-8, which the
// error's JSON encoding turns into U+FFFD (TestBadEventSnippetKeepsCharactersWhole).
func snippet(b []byte) string {
	if len(b) <= 120 {
		return string(b)
	}
	n := 120
	for n > 120-utf8.UTFMax && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "…"
}

// embed serves /v1/embeddings through /api/embed.
func (a *openaiOllama) embed(ctx context.Context, req *core.Request) (*Response, error) {
	var in struct {
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
		Dimensions     int             `json:"dimensions"`
	}
	if err := json.Unmarshal(req.Body, &in); err != nil {
		return nil, requestError(a.t, "invalid_json", "", "the request body is not valid JSON")
	}
	var one string
	var many []string
	inputs := 1
	switch {
	case json.Unmarshal(in.Input, &one) == nil:
	case stringsOnly(in.Input, true) && json.Unmarshal(in.Input, &many) == nil:
		inputs = len(many)
	default:
		return nil, requestError(a.t, "unsupported_input", "input",
			"the ollama adapter embeds text only: input must be a string or an array of strings, not tokens")
	}
	if in.EncodingFormat != "" && in.EncodingFormat != "float" && in.EncodingFormat != "base64" {
		return nil, requestError(a.t, "invalid_value", "encoding_format", "encoding_format must be float or base64")
	}
	type options struct {
		NumCtx int `json:"num_ctx"`
	}
	out := struct {
		Model      string          `json:"model"`
		Input      json.RawMessage `json:"input"`
		Dimensions int             `json:"dimensions,omitempty"`
		// Truncate false: by default Ollama cuts an input longer than the window to fit and
		// embeds its start as if it were the whole; OpenAI refuses such an input, and so does
		// Ollama when asked not to cut ("the input length exceeds the context length", an
		// overflow that falls through: TestEmbeddingsOllamaNoSilentTruncation).
		Truncate bool     `json:"truncate"`
		Options  *options `json:"options,omitempty"`
	}{Model: a.t.Model, Input: in.Input, Dimensions: in.Dimensions}
	if a.t.ContextWindow > 0 {
		// As for chat: Ollama's default window would cut a longer input silently.
		out.Options = &options{NumCtx: a.t.ContextWindow}
	}
	body := mustJSON(out)
	resp, err := a.post(ctx, "/api/embed", body, false)
	if se, ok := errors.AsType[*core.StatusError](err); ok && se.Status == http.StatusBadRequest &&
		strings.Contains(se.Message, ollamaNaN) {
		// /api/embed answers 400 for whatever is not an api.StatusError, among them a vector with
		// NaN or Inf in it: the model's answer to this input, not the request's fault, and no
		// more usable than a null one (TestOllamaEmbedNaNIsTheTargets).
		return nil, &core.UnmetError{Err: &core.StatusError{Target: a.t.Name, Status: http.StatusBadGateway,
			Type: "upstream_error", Code: "bad_upstream_response", Message: fmt.Sprintf(
				"upstream %s could not embed the input: Ollama said %q", a.t.Name, se.Message)}}
	}
	if err != nil {
		return nil, err
	}
	raw, err := readAnswerUpTo(ctx, a.t, resp, maxEmbedBody)
	if err != nil {
		return nil, err
	}
	m, err := decodeOllamaEmbed(raw)
	if err != nil {
		return nil, &core.ProtocolError{Target: a.t.Name, Err: &NotJSONError{Body: redact(capBytes(raw, maxErrorBody), a.t.APIKey)}}
	}
	if m.Embeddings == nil {
		// No embeddings member (or null): not an /api/embed answer at all, a broken one.
		return nil, &core.ProtocolError{Target: a.t.Name, Err: &EmptyAnswerError{Key: "embeddings"}}
	}
	if len(m.Embeddings) != inputs {
		// Which input each belongs to cannot be told: a client pairing its inputs with data by
		// index would pair texts with the wrong vectors (TestEmbeddingsOllamaCountMismatch), and
		// none at all for a non-empty input (the server refuses an empty one) leaves openai-go's
		// Data[0] to panic in the client's code. It is the target's failure, class endpoint, as
		// through an openai target: a server that embeds a batch's first input alone is not
		// unwell, and another try gets the same (TestEmbeddingsOllamaCountMismatchIsEndpoint,
		// TestEmbeddingsOllamaUnusableEmbedding).
		return nil, countError(a.t, len(m.Embeddings), inputs)
	}
	data := make([]embeddingItem, len(m.Embeddings))
	for i, e := range m.Embeddings {
		// Each must be a vector of numbers, judged as an openai target's answer is: null, [],
		// or an array of anything but numbers reached the client as its embedding, or as an
		// empty base64 string (TestEmbeddingsOllamaBrokenVector), and is the target's failure,
		// class endpoint, not a broken answer retried and counted toward a cooldown
		// (TestEmbeddingsOllamaUnusableEmbedding).
		if why := usableEmbedding(e, false); why != "" {
			return nil, unusableError(a.t, "embeddings", i, why, ollamaEmbedding)
		}
		width, err := vectorWidth(a.t, "embeddings", i, e, ollamaEmbedding)
		if err != nil {
			return nil, err
		}
		if in.Dimensions > 0 && width != in.Dimensions {
			// Ollama cuts a vector to dimensions only when the model's is wider, and one
			// older than its dimensions field ignores it (TestEmbeddingsDimensions).
			return nil, widthError(a.t, in.Dimensions, width,
				"through Ollama, dimensions can only be fewer than the model's, and only in versions that read it")
		}
		data[i] = embeddingItem{Object: "embedding", Index: i, Embedding: e}
		if in.EncodingFormat == "base64" {
			enc, err := floatsBase64(e)
			if err != nil {
				// A number beyond a float32's range: the same answer each time, as a null is.
				return nil, unusableError(a.t, "embeddings", i, "holds a number that no float32 holds, for base64", ollamaEmbedding)
			}
			data[i].Embedding = enc
		}
	}
	// Without prompt_eval_count (an Ollama before the field, or a server that copies its API
	// without it) the answer has no usage, as a translated chat answer without counts has none:
	// a usage of 0 was a count nobody made, which a client billing by it took for free
	// (TestTranslatedWithoutCounts).
	var u *embeddingsUsage
	n := Usage{}
	if c := m.PromptEvalCount; c != nil {
		u, n = &embeddingsUsage{*c, *c}, usageCounts(*c, -1)
	}
	b := appendEmbeddingsList(make([]byte, 0, len(raw)+64*len(data)+128), data, cmpOr(m.Model, a.t.Model), u)
	return &Response{Body: b, Usage: &n}, nil
}

// ollamaNaN is what Ollama's EmbedHandler answers, with a 400, when the model's vector holds NaN
// or Inf (server/routes.go, normalize).
const ollamaNaN = "embedding contains NaN or Inf values"

// stringsOnly reports whether v is an array whose elements are all strings, or null where nulls
// is true. Decoding an array of token ids into a []string to learn that it is not one went
// through the whole array, growing the slice and building an error for every number: 86 bytes
// allocated for each byte of the body (TestOllamaEmbedTokensRefusedCheaply). An embed input takes
// nulls, as a []string took them; an array option (stop) does not: Ollama loads it only as
// strings alone, and answers a null in it with a 500, as it does another kind.
func stringsOnly(v json.RawMessage, nulls bool) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '[' {
		return false
	}
	it := jsonx.Array(v, false)
	for {
		_, e, ok := it.Next()
		if !ok {
			return it.Done()
		}
		if e[0] != '"' && !(nulls && string(e) == "null") {
			return false
		}
	}
}

// floatsBase64 is OpenAI's base64 embedding: little-endian float32s, base64-encoded, as a JSON
// string. raw is an array of numbers (embeddingWidth said so). Each is read as a float32 at once,
// not as a float64 rounded again, which for a decimal near halfway between two float32s gave the
// other one, and for one beyond a float32's range gave +Inf where it is now an error
// (TestOllamaEmbeddingsBase64).
func floatsBase64(raw json.RawMessage) (json.RawMessage, error) {
	var fs []float32
	if err := json.Unmarshal(raw, &fs); err != nil {
		return nil, err
	}
	buf := make([]byte, 4*len(fs))
	for i, f := range fs {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	return mustJSON(base64.StdEncoding.EncodeToString(buf)), nil
}
