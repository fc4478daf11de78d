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
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

// openaiOllama translates one OpenAI request to Ollama's native API (POST /api/chat, NDJSON
// streaming; POST /api/embed for embeddings) and the answer back. Target.URL is Ollama's base
// URL without /v1, e.g. http://127.0.0.1:11434.
//
// Ollama's own OpenAI-compatible endpoint exists, but the native one is what every Ollama
// version serves, and it reports done_reason and token counts on every answer, streamed or not.
type openaiOllama struct {
	t     *core.Target
	c     *http.Client
	now   func() time.Time
	newID func() string
	id    string // the gateway's request ID, sent as X-Request-Id; "" for none
}

// ollamaMessage is a message of /api/chat, both ways. Thinking comes back from models run with
// think enabled; the gateway sends none.
type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	Thinking  string           `json:"thinking,omitempty"`
	Images    []string         `json:"images,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName  string           `json:"tool_name,omitempty"`
}

// ollamaToolCall is Ollama's tool call: arguments are a JSON object, not a string, and there is
// no id in most versions.
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
}

type ollamaChatRequest struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Tools    json.RawMessage `json:"tools,omitempty"`
	Format   json.RawMessage `json:"format,omitempty"`
	Options  *ollamaOptions  `json:"options,omitempty"`
	Stream   bool            `json:"stream"`
	// Logprobs and TopLogprobs are the client's (Ollama v0.12.11 on; an older one ignores them).
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs int  `json:"top_logprobs,omitempty"`
	// Think is the client's reasoning_effort (ollamaThink): false, or a level; nil when unsent.
	Think json.RawMessage `json:"think,omitempty"`
}

type ollamaChatResponse struct {
	Model           string          `json:"model"`
	CreatedAt       string          `json:"created_at"`
	Message         ollamaMessage   `json:"message"`
	Done            bool            `json:"done"`
	DoneReason      string          `json:"done_reason"`
	PromptEvalCount int             `json:"prompt_eval_count"`
	EvalCount       int             `json:"eval_count"`
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
	body := mustJSON(out)
	resp, err := a.post(ctx, "/api/chat", body, req.Stream)
	if err != nil {
		return nil, err
	}
	if req.Stream {
		return &Response{Stream: a.newStream(resp.Body, req.IncludeUsage), UpstreamID: upstreamID(resp)}, nil
	}
	upID := upstreamID(resp) // before the body (see openaiOpenAI.body)
	raw, err := readAnswer(ctx, a.t, resp)
	if err != nil {
		return nil, err
	}
	var m ollamaChatResponse
	if err := json.Unmarshal(raw, &m); err != nil {
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
	if a.t.Reasoning == core.ReasoningThinkTags {
		lp = contentLogprobs(lp)
	}
	c := completionJSON{ID: "chatcmpl-" + a.newID(), Object: "chat.completion", Created: a.created(m.CreatedAt),
		Model: cmpOr(m.Model, a.t.Model),
		Choices: []choiceJSON{{Message: completionMessage(a.t.Reasoning, m.Message.Content, m.Message.Thinking, calls),
			Logprobs: newLogprobs(lp), FinishReason: finish}},
		Usage: newUsage(m.PromptEvalCount, m.EvalCount)}
	b := mustJSON(c)
	return &Response{Body: b, Usage: usageOf(m.PromptEvalCount, m.EvalCount), UpstreamID: upID}, nil
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
	return post(ctx, a.c, a.t, path, whole(body), accept(stream, "application/x-ndjson"), a.id, a.now)
}

// maxPrealloc is the largest stated Content-Length readAnswer allocates for before reading: a
// model's answer is kilobytes, and a 40-byte head must not commit 32 MiB of memory.
const maxPrealloc = 1 << 20

// readAnswer reads a whole 2xx body within maxBody. A body of known length up to maxPrealloc is
// read into a slice of exactly that size, rather than grown from 512 bytes by io.ReadAll.
func readAnswer(ctx context.Context, t *core.Target, resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength > maxBody {
		return nil, &core.ProtocolError{Target: t.Name, Err: errors.New("response body larger than 32 MiB")}
	}
	var body []byte
	var err error
	if resp.ContentLength >= 0 && resp.ContentLength <= maxPrealloc {
		body = bodyBuf(resp, resp.ContentLength)
		_, err = io.ReadFull(resp.Body, body)
	} else {
		// Unknown, or large: the buffer grows as the bytes come, so that a length an upstream
		// states (up to maxBody) is not memory committed before a byte of it has arrived.
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("upstream %s: %w", t.Name, ctxErr)
		}
		return nil, &core.StreamError{Target: t.Name, Message: "upstream broke off the response body: " + err.Error(), Err: err}
	}
	if len(body) > maxBody {
		return nil, &core.ProtocolError{Target: t.Name, Err: errors.New("response body larger than 32 MiB")}
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
	for i := range req.Messages {
		m, err := a.message(i, &req.Messages[i], callNames)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, m)
	}
	p := &req.Params
	if req.Tools && !core.NonEmptyArray(p.ToolsRaw) {
		// The request declares the legacy functions, which Ollama has no word for; dropped, the
		// model would answer without them as if it had been told of none.
		return nil, requestError(a.t, "unsupported_value", "functions",
			"the ollama adapter does not translate the legacy functions and function_call: declare them as tools (and tool_choice)")
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
	// (TestOllamaContextWindowIsNumCtx).
	o := &ollamaOptions{Temperature: p.Temperature, TopP: p.TopP, Seed: p.Seed, Stop: p.StopList(), NumPredict: req.MaxTokens,
		NumCtx: a.t.ContextWindow, FreqPenalty: p.FrequencyPenalty, PresPenalty: p.PresencePenalty}
	out.Logprobs, out.TopLogprobs = logprobsAsked(req.Body)
	if out.Think, err = a.think(req.Body); err != nil {
		return nil, err
	}
	if o.Temperature != nil || o.TopP != nil || o.Seed != nil || o.Stop != nil || o.NumPredict > 0 ||
		o.NumCtx > 0 || o.FreqPenalty != nil || o.PresPenalty != nil {
		out.Options = o
	}
	return out, nil
}

func (a *openaiOllama) message(i int, m *core.Message, callNames map[string]string) (ollamaMessage, error) {
	out := ollamaMessage{Role: m.Role}
	switch m.Role {
	case "developer":
		out.Role = "system"
	case "function":
		out.Role, out.ToolName = "tool", m.Name
	}
	fc, err := readContent(m.Content)
	if err != nil {
		return out, requestError(a.t, "invalid_value", fmt.Sprintf("messages[%d].content", i),
			"message content must be a string or an array of content parts")
	}
	if fc.other != "" {
		return out, requestError(a.t, "unsupported_content", fmt.Sprintf("messages[%d].content", i),
			fmt.Sprintf("the ollama adapter cannot send content parts of type %q", fc.other))
	}
	out.Content = assistantText(m, fc.text)
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
		for j, c := range calls {
			args, err := argumentsObject(c.Function.Arguments)
			if err != nil {
				return out, requestError(a.t, "invalid_value", fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j),
					"tool call arguments must be a JSON object for Ollama: "+err.Error())
			}
			var oc ollamaToolCall
			oc.Function.Name, oc.Function.Arguments = c.Function.Name, args
			out.ToolCalls = append(out.ToolCalls, oc)
			if c.ID != "" {
				callNames[c.ID] = c.Function.Name
			}
		}
	}
	if m.Role == "tool" {
		out.ToolName = callNames[m.ToolCallID]
		if out.ToolName == "" {
			out.ToolName = m.Name
		}
	}
	return out, nil
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
		Tools   []fn `json:"tools"` // the Responses shape of allowed_tools
		Allowed *struct {
			Tools []fn `json:"tools"`
		} `json:"allowed_tools"`
	}
	if json.Unmarshal(choice, &named) != nil {
		return tools, nil
	}
	var want []string
	param := "tool_choice"
	switch {
	case named.Type == "allowed_tools":
		listed := named.Tools
		param = "tool_choice.tools"
		if named.Allowed != nil {
			listed, param = named.Allowed.Tools, "tool_choice.allowed_tools.tools"
		}
		for _, a := range listed {
			if n := name(a); n != nil {
				want = append(want, *n)
			}
		}
		if len(want) == 0 {
			// It allows no function tool (an empty list, or custom tools, which Ollama has
			// none of): offered none, as "none" offers none, the model can call nothing else.
			return nil, nil
		}
	case name(named.fn) != nil:
		want = []string{*name(named.fn)}
	default:
		return tools, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(tools, &list) != nil {
		return tools, nil
	}
	out := json.RawMessage{'['}
	for i, name := range want {
		// A name listed twice is offered once: Ollama would otherwise get two tools of one
		// name, which a model may take for two functions.
		if slices.Contains(want[:i], name) {
			continue
		}
		found := false
		for _, tool := range list {
			var d struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if name != "" && json.Unmarshal(tool, &d) == nil && d.Function.Name == name {
				if len(out) > 1 {
					out = append(out, ',')
				}
				out, found = append(out, tool...), true
				break
			}
		}
		if !found {
			return nil, requestError(t, "invalid_value", param,
				fmt.Sprintf("tool_choice names the function %q, which is not in tools", name))
		}
	}
	return append(out, ']'), nil
}

// reasoningKey is the raw key think looks for before walking a body.
var reasoningKey = []byte(`"reasoning_effort"`)

// think maps the body's reasoning_effort (a string, or an object with an "effort", as
// openai-agents sends it) to /api/chat's think, as Ollama's own OpenAI endpoint does: "none" is
// false, a level is that level, and OpenAI's minimal and xhigh, which Ollama has no word for, are
// its nearest, low and high. Left out, a thinking model would think as long as it likes whatever
// the client asked (TestOllamaParams). A value that is no level is refused, as OpenAI refuses it
// (TestOllamaReasoningEffortRefused). nil when the body sends none (or null). A body without a
// raw "reasoning_effort" is not walked; the server has checked the field's kind.
func (a *openaiOllama) think(body []byte) (json.RawMessage, error) {
	if !bytes.Contains(body, reasoningKey) {
		return nil, nil
	}
	var effort json.RawMessage
	it := jsonx.Object(body, false)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		if name, plain := jsonx.PlainKey(k); plain && string(name) == "reasoning_effort" {
			effort = v
		}
	}
	if len(effort) > 0 && effort[0] == '{' {
		var o struct {
			Effort json.RawMessage `json:"effort"`
		}
		_ = json.Unmarshal(effort, &o)
		effort = o.Effort
	}
	if len(effort) == 0 || string(effort) == "null" {
		return nil, nil
	}
	var level string
	if json.Unmarshal(effort, &level) == nil {
		switch level {
		case "none":
			return json.RawMessage("false"), nil
		case "minimal":
			level = "low"
		case "xhigh":
			level = "high"
		}
		switch level {
		case "low", "medium", "high":
			return mustJSON(level), nil
		}
	}
	return nil, requestError(a.t, "invalid_value", "reasoning_effort", fmt.Sprintf(
		"Invalid value for 'reasoning_effort': %s (expected \"none\", \"minimal\", \"low\", \"medium\", \"high\" or \"xhigh\").",
		snippet(effort)))
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
		fmt.Sprintf("the ollama adapter does not know response_format type %q", rf.Type))
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
// finish_reason on the line that says done, then the usage chunk when asked for. A line with
// "error" is a *core.StreamError; so is a body that ends before done.
type ollamaStream struct {
	target       string
	key          core.Secret // redacted from a line an error quotes
	body         io.ReadCloser
	lines        *lineReader
	now          func() time.Time
	newID        func() string
	reasoning    core.Reasoning
	model        string
	includeUsage bool

	ch    *chunker
	calls int // tool calls so far, for their indexes
	queue
}

func (a *openaiOllama) newStream(body io.ReadCloser, includeUsage bool) *ollamaStream {
	return &ollamaStream{target: a.t.Name, key: a.t.APIKey, body: body, lines: newLineReader(body), now: a.now, newID: a.newID,
		reasoning: a.t.Reasoning, model: a.t.Model, includeUsage: includeUsage}
}

func (s *ollamaStream) Next() ([]byte, error) { return s.next(s) }

// read consumes one line, queueing what it says; a non-nil result ends the stream after the
// queue.
func (s *ollamaStream) read() error {
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
	var m ollamaChatResponse
	if err := json.Unmarshal(line, &m); err != nil {
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
	}
	calls := ollamaToolCalls(m.Message.ToolCalls, s.newID, true, s.calls)
	s.calls += len(calls)
	lp := m.Logprobs
	if m.Message.Thinking != "" && m.Message.Content == "" {
		// A line of Ollama's own thinking: its tokens' entries are the reasoning's, and
		// logprobs.content is the content's (OpenAI's definition, as for think-tags).
		lp = nil
	}
	s.ch.setLogprobs(lp)
	if ev := s.ch.delta(m.Message.Content, m.Message.Thinking, calls, nil); ev != nil {
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
	if s.includeUsage {
		s.pending = append(s.pending, s.ch.usage(newUsage(m.PromptEvalCount, m.EvalCount)))
	}
	return io.EOF
}

// Buffered reports whether Next will return without waiting on the upstream.
func (s *ollamaStream) Buffered() bool { return s.ready(s) }

func (s *ollamaStream) buffered() bool { return s.lines.buffered() }

// Close releases the connection. It is safe to call more than once.
func (s *ollamaStream) Close() error { return s.close(s.body) }

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
	case json.Unmarshal(in.Input, &many) == nil:
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
	if err != nil {
		return nil, err
	}
	raw, err := readAnswer(ctx, a.t, resp)
	if err != nil {
		return nil, err
	}
	var m struct {
		Model           string            `json:"model"`
		Embeddings      []json.RawMessage `json:"embeddings"`
		PromptEvalCount int               `json:"prompt_eval_count"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &core.ProtocolError{Target: a.t.Name, Err: &NotJSONError{Body: redact(capBytes(raw, maxErrorBody), a.t.APIKey)}}
	}
	if len(m.Embeddings) == 0 {
		// The server refuses an empty input, so a list without an embedding answers nothing
		// that was asked, and openai-go's Data[0] panics in the client's code.
		return nil, &core.ProtocolError{Target: a.t.Name, Err: &EmptyAnswerError{Key: "embeddings"}}
	}
	if len(m.Embeddings) != inputs {
		// Which input each belongs to cannot be told: a client pairing its inputs with data by
		// index would pair texts with the wrong vectors (TestEmbeddingsOllamaCountMismatch).
		return nil, &core.ProtocolError{Target: a.t.Name,
			Err: fmt.Errorf("%d embeddings for %d inputs", len(m.Embeddings), inputs)}
	}
	type item struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	}
	data := make([]item, len(m.Embeddings))
	for i, e := range m.Embeddings {
		if in.Dimensions > 0 {
			if width, err := embeddingWidth(e); err != nil {
				return nil, &core.ProtocolError{Target: a.t.Name, Err: fmt.Errorf("embedding %d: %w", i, err)}
			} else if width != in.Dimensions {
				// Ollama cuts a vector to dimensions only when the model's is wider, and one
				// older than its dimensions field ignores it (TestEmbeddingsDimensions).
				return nil, widthError(a.t, in.Dimensions, width,
					"through Ollama, dimensions can only be fewer than the model's, and only in versions that read it")
			}
		}
		data[i] = item{Object: "embedding", Index: i, Embedding: e}
		if in.EncodingFormat == "base64" {
			enc, err := floatsBase64(e)
			if err != nil {
				return nil, &core.ProtocolError{Target: a.t.Name, Err: fmt.Errorf("embedding %d: %w", i, err)}
			}
			data[i].Embedding = enc
		}
	}
	type usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
	b := mustJSON(struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
		Usage  usage  `json:"usage"`
	}{"list", data, cmpOr(m.Model, a.t.Model), usage{m.PromptEvalCount, m.PromptEvalCount}})
	return &Response{Body: b, Usage: usageOf(m.PromptEvalCount, -1)}, nil
}

// floatsBase64 is OpenAI's base64 embedding: little-endian float32s, base64-encoded, as a JSON
// string.
func floatsBase64(raw json.RawMessage) (json.RawMessage, error) {
	var fs []float64
	if err := json.Unmarshal(raw, &fs); err != nil {
		return nil, err
	}
	buf := make([]byte, 4*len(fs))
	for i, f := range fs {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(f)))
	}
	return mustJSON(base64.StdEncoding.EncodeToString(buf)), nil
}
