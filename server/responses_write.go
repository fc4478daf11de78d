package server

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
	"github.com/hayula/gateway/upstream"
)

// responsesWriter stands between serveOp and the client of a Responses request. serveOp writes a
// chat answer into it as it would to a chat client; it passes an error answer through as it is
// (errors have the same shape on both APIs), turns a whole chat completion into a response
// object, and turns a chat stream, event by event as the relay writes them, into the Responses
// event sequence, flushing when the relay flushes. Headers (x-hayula-*) go to the client's writer
// directly.
//
// It has no Unwrap on purpose: writeWhole must not reach the client's writer behind it with the
// chat answer's length.
type responsesWriter struct {
	w       http.ResponseWriter
	room    chunkRoom // kept from a stream's last chunk for reading the next (decodeChunkIn)
	created int64
	model   string // the client's model, until an answer names the one that served
	stream  bool   // the client asked for a stream
	echo    responseEcho
	effort  bool          // the request's reasoning.effort went on as chat's reasoning_effort
	msgs    []chatMessage // the chat messages the request went on as, for a refusal naming one (clientTerms)

	mode int
	buf  []byte // a whole answer, or the stream's bytes not yet a whole event
	out  []byte // the event being written, kept for the next (send)
	werr error  // the client's writer failed: the relay stops on it

	id  string
	seq int
	// At most one output item is open (added, its .done events not yet sent) at a time, as OpenAI
	// streams them: each is closed before the next is added, and output_index grows by one per
	// item, so that a client that renders items as they arrive (Codex CLI, an agent reading
	// openai-go's events) never sees a call added while a message is still open, or text added
	// to a message it saw closed (TestResponsesStreamItemsOneAtATime). Chat's stream has no
	// items: what comes after an item of another kind (text after a call, reasoning after text)
	// opens an item of its own.
	think   *outputReasoning // the reasoning item open, once reasoning arrived
	thought strings.Builder  // its text so far
	msg     *outputMessage   // the message item open, once text or a refusal arrived
	parts   []*streamPart    // its content parts, in content_index order
	call    *streamCall      // the function call item open
	at      int              // the open item's output_index
	said    bool             // a message item was added: the answer is not empty
	output  []any            // the items added so far, in output_index order
	// calls are the calls the upstream began, in that order, which is the order they are added in:
	// those from waiting on are not added yet (streamCall).
	calls   []*streamCall
	waiting int
	// held is text, refusal and reasoning that came while the open call's arguments were
	// half-way (streamCall.halfway), in the order it came: closing the call for it lost the
	// arguments' rest (TestResponsesStreamTextMidCallKeepsArguments). It is streamed once they
	// are whole, or when the stream ends.
	held []heldDelta
	// lastCall is the latest call at each chat index: a delta finds its call here rather than
	// among all the calls so far, which cost a stream of n calls n*n/2 looks
	// (TestResponsesCallDeltaLinear, which counts the looks in callSteps).
	lastCall  map[int]*streamCall
	callSteps int
	reason    string // the chat answer's finish_reason
	usage     *chatUsage
	started   bool // response.created went out
	ended     bool
	emitted   bool // a whole answer went out
	overLong  bool // an event was too long to send: the stream ended in its place (tooLong)
	// outLen is the bytes of output text (reasoning, message text and refusal, calls' names, ids
	// and arguments) streamed so far, which the items and response.completed repeat (outgrown).
	outLen int
	// answer is the whole chat answer readable read, which writeWhole translates rather than
	// reading it again; nil for a stream, or before an answer came.
	answer *chatAnswer
}

// What serveOp's writes turned out to be.
const (
	modeNone   = iota
	modePass   // an error answer, passed through
	modeWhole  // a chat completion, translated when it is complete
	modeStream // a chat stream, translated event by event
)

// responseEcho are the request's fields a response object repeats, raw; nil when absent.
type responseEcho struct {
	Instructions, MaxOutputTokens, MaxToolCalls, Tools, ToolChoice, Text, Metadata, Temperature, TopP,
	ParallelToolCalls json.RawMessage
}

// streamPart is a content part of the streamed message: an output_text or a refusal, and its
// text so far.
type streamPart struct {
	refusal bool
	text    strings.Builder
}

// streamCall is a function call being streamed: chat's tool call index, its output item and
// output_index, and its arguments so far. It is added (output_item.added, taking the next
// output_index) once its name is known, every call begun before it was added, and the item open
// may close: a message or reasoning may, a call once its arguments are whole (whole). A chat
// stream may send a call's first argument fragment before its id and name, and a Responses
// client takes both from the added item; and one that interleaves two calls' fragments would
// otherwise have the first closed with half its arguments. Until it is added, its fragments are
// kept, and sent as one delta when it is.
type streamCall struct {
	chatIndex int
	at        int
	announced bool
	closed    bool   // its done events went out: its arguments are final
	id        string // the upstream's call id, until the call is announced
	item      functionCall
	args      strings.Builder
	// The arguments' JSON nesting so far, followed as they arrive: an object or array begun
	// (begun) and closed again (depth back to 0, outside a string) is whole.
	depth         int
	begun         bool
	inStr, escape bool
}

// heldDelta is a delta of a kind other than a call's that waits for the open call (held).
type heldDelta struct {
	kind heldKind
	d    string
}

type heldKind uint8

const (
	heldText heldKind = iota
	heldRefusal
	heldThinking
)

// write adds a fragment of the call's arguments, following their nesting.
func (c *streamCall) write(s string) {
	c.args.WriteString(s)
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case c.inStr:
			switch {
			case c.escape:
				c.escape = false
			case ch == '\\':
				c.escape = true
			case ch == '"':
				c.inStr = false
			}
		case ch == '"':
			c.inStr = true
		case ch == '{' || ch == '[':
			c.depth++
			c.begun = true
		case ch == '}' || ch == ']':
			c.depth--
		}
	}
}

// whole says the call's arguments so far are a whole JSON object (or array): a fragment after
// them could add nothing but space, so a call after it may be added in its place.
func (c *streamCall) whole() bool { return c.begun && c.depth == 0 && !c.inStr }

// halfway says the call's arguments began an object (or array) and have not closed it: a
// fragment still to come is part of them.
func (c *streamCall) halfway() bool { return c.begun && !c.whole() }

func (b *responsesWriter) Header() http.Header { return b.w.Header() }

// requestID is the ID of the request b answers (see requestIDOf): the client's writer's.
func (b *responsesWriter) requestID() string { return requestIDOf(b.w) }

func (b *responsesWriter) WriteHeader(code int) {
	if b.mode != modeNone {
		return
	}
	if code != http.StatusOK {
		b.mode = modePass
		b.w.WriteHeader(code)
		return
	}
	h := b.w.Header()
	if strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		b.mode = modeStream
		b.w.WriteHeader(code)
		return
	}
	b.mode = modeWhole
	delete(h, "Content-Length") // the chat answer's; the response's is set when it is written
}

func (b *responsesWriter) Write(p []byte) (int, error) {
	if b.mode == modeNone {
		b.WriteHeader(http.StatusOK)
	}
	switch b.mode {
	case modePass:
		return b.w.Write(p)
	case modeWhole:
		b.buf = append(b.buf, p...)
		return len(p), nil
	}
	if b.ended {
		return len(p), b.werr
	}
	b.buf = append(b.buf, p...)
	for !b.ended && b.werr == nil {
		ev, n, ok := nextEvent(b.buf)
		if !ok {
			break
		}
		b.onChunk(ev)
		b.buf = append(b.buf[:0], b.buf[n:]...)
	}
	return len(p), b.werr
}

// Flush sends a whole answer, or flushes the events written so far: the relay flushes after each
// event unless the next is already in memory, and so does this.
func (b *responsesWriter) Flush() { _ = b.FlushError() }

// FlushError is Flush reporting a failed write to the client (http.ResponseController's Flush
// calls it), so that the server counts a client gone before the answer reached it as one
// (TestClientGoneStatus).
func (b *responsesWriter) FlushError() error {
	switch b.mode {
	case modeWhole:
		b.writeWhole()
	case modeStream, modePass:
		if err := flushWhole(b.w); err != nil && b.werr == nil {
			b.werr = err
		}
	}
	return b.werr
}

// finish writes a whole answer serveOp wrote without flushing it.
func (b *responsesWriter) finish() {
	if b.mode == modeWhole {
		b.writeWhole()
	}
}

// nextEvent finds the first whole "data: …\n\n" event in buf and returns its payload and the
// bytes it took. A payload is whole when it is [DONE] or valid JSON: a blank line inside a
// payload (whitespace between JSON tokens) does not end it.
func nextEvent(buf []byte) (payload []byte, n int, ok bool) {
	from := 0
	for {
		i := bytes.Index(buf[from:], sseEnd)
		if i < 0 {
			return nil, 0, false
		}
		end := from + i
		ev := bytes.TrimPrefix(buf[:end], sseData)
		if string(ev) == "[DONE]" || jsonx.Valid(ev) {
			return ev, end + len(sseEnd), true
		}
		from = end + 1
	}
}

// chatAnswer is what the bridge reads of a chat completion or of one stream chunk.
type chatAnswer struct {
	Model string `json:"model"`
	// Choices are read for index 0 only: the bridge sends no n and answers one output, and a
	// server that answers more (its own default n) interleaves its other choices' chunks with
	// the first's (TestResponsesStreamReadsChoiceZero). A choice without an index is index 0.
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage"`
	Error   *struct {
		Message string `json:"message"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// chatChoice is one choice of a chat completion or of a stream chunk.
type chatChoice struct {
	Index        int       `json:"index"`
	Message      chatDelta `json:"message"`
	Delta        chatDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

// first is the answer's or chunk's choice 0; nil when it has none.
func (a *chatAnswer) first() *chatChoice {
	for i := range a.Choices {
		if a.Choices[i].Index == 0 {
			return &a.Choices[i]
		}
	}
	return nil
}

type chatDelta struct {
	// Content is the text, as chat has it, or an array of parts (Mistral's API), read as one.
	Content *chatContent `json:"content"`
	// ReasoningContent is a reasoning model's thinking: DeepSeek's field, which the upstream
	// package also moves a think-tags target's <think> block into.
	ReasoningContent *string `json:"reasoning_content"`
	// Reasoning is the same thinking as vLLM's newer OpenAI server and Ollama's /v1 name it;
	// raw, so that another server's object there is ignored rather than failing the chunk.
	Reasoning json.RawMessage `json:"reasoning"`
	Refusal   *string         `json:"refusal"`
	ToolCalls []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string    `json:"name"`
			Arguments arguments `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// arguments are a tool call's arguments: a string, as chat has them, or the JSON text of another
// value (an object, as TGI's older answers give them), which would otherwise fail the answer
// whole, or drop the chunk that carries it (TestResponsesObjectArguments).
type arguments string

func (a *arguments) UnmarshalJSON(v []byte) error {
	switch {
	case string(v) == "null":
		*a = ""
	case len(v) > 0 && v[0] == '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return err
		}
		*a = arguments(s)
	default:
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			return err
		}
		*a = arguments(c.String())
	}
	return nil
}

// chatContent is a chat message's content: a string, or an array of parts, as Mistral's API
// answers, whose text parts are the text and whose thinking parts (Magistral's, themselves text
// parts or a string) the model's reasoning. A part of another type (an image, a reference) has no
// text to give and is passed over. Read as a string only, such an answer failed whole and its
// chunks were dropped (TestResponsesAssistantContentParts).
type chatContent struct {
	text, thinking string
}

func (c *chatContent) UnmarshalJSON(v []byte) error {
	if len(v) > 0 && v[0] == '"' {
		return json.Unmarshal(v, &c.text)
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if err := json.Unmarshal(v, &parts); err != nil {
		return err
	}
	var text, thinking strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "output_text":
			text.WriteString(p.Text)
		case "thinking":
			if len(p.Thinking) == 0 || string(p.Thinking) == "null" {
				continue
			}
			t, err := thinkingText(p.Thinking)
			if err != nil {
				return err
			}
			thinking.WriteString(t)
		}
	}
	c.text, c.thinking = text.String(), thinking.String()
	return nil
}

// thinkingText is the text of a thinking part's value: a string, or text parts joined. It is read
// as content is, but a thinking part inside it is passed over rather than decoded in turn, as
// its text was never used: decoding each level's value again made an answer of thinking parts
// nested thousands deep cost bytes quadratic in the depth (TestResponsesNestedThinkingLinear).
func thinkingText(v []byte) (string, error) {
	if len(v) > 0 && v[0] == '"' {
		var s string
		err := json.Unmarshal(v, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(v, &parts); err != nil {
		return "", err
	}
	var text strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "output_text" {
			text.WriteString(p.Text)
		}
	}
	return text.String(), nil
}

// text is the content's text, "" when there is none.
func (d *chatDelta) text() string {
	if d.Content == nil {
		return ""
	}
	return d.Content.text
}

// thinking is the delta's (or message's) reasoning: reasoning_content, or when that is empty
// reasoning, read only when it is a string, or else the content's thinking parts. A server that
// sends both (vLLM while it moved from one name to the other) sends the same text in each: it is
// taken once (TestResponsesReasoningField).
func (d *chatDelta) thinking() string {
	if d.ReasoningContent != nil && *d.ReasoningContent != "" {
		return *d.ReasoningContent
	}
	if len(d.Reasoning) > 0 && d.Reasoning[0] == '"' {
		if s, _ := jsonx.Unquote(d.Reasoning); s != "" {
			return s
		}
	}
	if d.Content != nil {
		return d.Content.thinking
	}
	return ""
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	PromptDetails    *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// responseObject is a Responses API response. The echoed request fields are raw (null when the
// request had none, or the API's default).
type responseObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Error              *responseError  `json:"error"`
	IncompleteDetails  *incomplete     `json:"incomplete_details"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    json.RawMessage `json:"max_output_tokens"`
	MaxToolCalls       json.RawMessage `json:"max_tool_calls"`
	Model              string          `json:"model"`
	Output             []any           `json:"output"`
	ParallelToolCalls  json.RawMessage `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	// Store is always false: the gateway keeps nothing, whatever the request said.
	Store       bool            `json:"store"`
	Temperature json.RawMessage `json:"temperature"`
	Text        json.RawMessage `json:"text"`
	ToolChoice  json.RawMessage `json:"tool_choice"`
	Tools       json.RawMessage `json:"tools"`
	TopP        json.RawMessage `json:"top_p"`
	Truncation  string          `json:"truncation"`
	Usage       *responseUsage  `json:"usage"`
	Metadata    json.RawMessage `json:"metadata"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

type responseUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

type outputMessage struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Status  string `json:"status"`
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

// outputReasoning is a reasoning item: the thinking of an open model, as text (OpenAI's own
// models give a summary instead, which no local model server has).
type outputReasoning struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Status  string          `json:"status"`
	Summary []any           `json:"summary"`
	Content []reasoningText `json:"content"`
}

type reasoningText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type outputRefusal struct {
	Type    string `json:"type"`
	Refusal string `json:"refusal"`
}

type functionCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func newID(prefix string) string { return prefix + strings.ToLower(rand.Text()) }

// callID is a tool call's id, or a new one for an upstream that gave none: the client sends it
// back with the call's output.
func callID(id string) string {
	if id == "" {
		return newID("call_")
	}
	return id
}

func textPart(s string) outputText {
	return outputText{Type: "output_text", Text: s, Annotations: []any{}, Logprobs: []any{}}
}

// response is the response object with the given status and output so far.
func (b *responsesWriter) response(status string, output []any) *responseObject {
	if b.id == "" {
		b.id = newID("resp_")
	}
	if output == nil {
		output = []any{}
	}
	r := &responseObject{ID: b.id, Object: "response", CreatedAt: b.created, Status: status, Model: b.model,
		Output: output, Instructions: b.echo.Instructions, MaxOutputTokens: b.echo.MaxOutputTokens,
		MaxToolCalls:      b.echo.MaxToolCalls,
		ParallelToolCalls: orDefault(b.echo.ParallelToolCalls, "true"), Temperature: b.echo.Temperature,
		Text: orDefault(b.echo.Text, `{"format":{"type":"text"}}`), ToolChoice: orDefault(b.echo.ToolChoice, `"auto"`),
		Tools: orDefault(b.echo.Tools, "[]"), TopP: b.echo.TopP, Truncation: "disabled",
		Metadata: orDefault(b.echo.Metadata, "{}")}
	if b.usage != nil {
		u := &responseUsage{InputTokens: b.usage.PromptTokens, OutputTokens: b.usage.CompletionTokens,
			TotalTokens: b.usage.TotalTokens}
		if u.TotalTokens == 0 {
			u.TotalTokens = u.InputTokens + u.OutputTokens
		}
		if d := b.usage.PromptDetails; d != nil {
			u.InputTokensDetails.CachedTokens = d.CachedTokens
		}
		if d := b.usage.CompletionDetails; d != nil {
			u.OutputTokensDetails.ReasoningTokens = d.ReasoningTokens
		}
		r.Usage = u
	}
	switch b.reason {
	case "length":
		r.Status, r.IncompleteDetails = "incomplete", &incomplete{Reason: "max_output_tokens"}
	case "content_filter":
		r.Status, r.IncompleteDetails = "incomplete", &incomplete{Reason: "content_filter"}
	}
	return r
}

// cutShort says whether the upstream stopped before the answer's end (finish_reason length or
// content_filter): the response is incomplete, and so is the item the model was producing when
// it stopped, as OpenAI marks it; the items it had finished before are completed
// (TestResponsesIncompleteItems).
func (b *responsesWriter) cutShort() bool {
	return b.reason == "length" || b.reason == "content_filter"
}

// itemStatus is the status of the item being produced when the answer ended.
func itemStatus(cut bool) string {
	if cut {
		return "incomplete"
	}
	return "completed"
}

func orDefault(v json.RawMessage, def string) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage(def)
	}
	return v
}

// readable reports, as the *core.ProtocolError of an answer t gave that the gateway could not
// read, why the bridge cannot read p, a whole chat answer (whole) or a stream's first event, as
// what it is; nil when it can. The attempt loop asks it before anything goes to the client, so
// that such an answer falls through as any other unreadable one does; answered, it was a 502
// however many targets were left, or, streamed, a chunk dropped and an empty answer
// "completed" (TestInvResponsesUnreadableAnswerFallsThrough). A whole answer it reads is kept
// for writeWhole.
func (b *responsesWriter) readable(t *core.Target, p []byte, whole bool) error {
	a := new(chatAnswer)
	if err := json.Unmarshal(p, a); err != nil {
		return &core.ProtocolError{Target: t.Name, Err: unreadableChat{err}}
	}
	if whole {
		b.answer = a
	}
	return nil
}

// unreadableChat is why the bridge could not read a chat answer: the field whose JSON type is not
// chat's, in the answer's own terms rather than the Go types the decoder names.
type unreadableChat struct{ err error }

func (u unreadableChat) Error() string {
	const head = "the Responses API bridge cannot read it as a chat completion"
	if te, ok := errors.AsType[*json.UnmarshalTypeError](u.err); ok && te.Field != "" {
		return head + ": " + te.Field + " is a JSON " + te.Value
	}
	return head
}

// writeWhole sends the response object for the whole chat completion in b.buf, once.
func (b *responsesWriter) writeWhole() {
	if b.emitted {
		return
	}
	b.emitted = true
	a := b.answer
	if a == nil {
		a = new(chatAnswer)
		if err := json.Unmarshal(b.buf, a); err != nil {
			// Read before it was served (readable): only an answer that came another way.
			writeError(b.w, &apiError{Status: http.StatusBadGateway, Type: typeUpstream, Code: "bad_upstream_answer",
				Message: "the upstream's answer could not be read as a chat completion: " + err.Error()})
			b.werr = sentInstead(http.StatusBadGateway) // FlushError says so: the 502 is what is counted and logged
			return
		}
	}
	if a.Model != "" {
		b.model = a.Model
	}
	b.usage = a.Usage
	var output []any
	aborted := false
	c := a.first()
	if c == nil && len(a.Choices) > 0 {
		c = &a.Choices[0] // a whole answer's only choice, whatever index it says
	}
	if c != nil {
		if c.FinishReason != nil && upstream.SaysFinish(*c.FinishReason) {
			b.reason = *c.FinishReason
		}
		m := c.Message
		// The item the model was producing when it stopped is the last: a cut answer's last
		// call, or its message, or when it had begun neither, its reasoning and the empty
		// message that stands for the answer.
		aborted = b.reason == upstream.FinishAbort
		cut := b.cutShort() || aborted
		refused := m.Refusal != nil && *m.Refusal != ""
		answered := m.text() != "" || refused || len(m.ToolCalls) > 0
		if th := m.thinking(); th != "" {
			output = append(output, &outputReasoning{ID: newID("rs_"), Type: "reasoning", Status: itemStatus(cut && !answered),
				Summary: []any{}, Content: []reasoningText{{Type: "reasoning_text", Text: th}}})
		}
		var content []any
		if text := m.text(); text != "" || len(m.ToolCalls) == 0 && !refused {
			// The text, or an empty one for an answer that has nothing else: a message all the same.
			content = append(content, textPart(text))
		}
		if refused {
			content = append(content, outputRefusal{Type: "refusal", Refusal: *m.Refusal})
		}
		if content != nil {
			output = append(output, outputMessage{ID: newID("msg_"), Type: "message",
				Status: itemStatus(cut && len(m.ToolCalls) == 0), Role: "assistant", Content: content})
		}
		for i, tc := range m.ToolCalls {
			output = append(output, functionCall{ID: newID("fc_"), Type: "function_call",
				Status: itemStatus(cut && i == len(m.ToolCalls)-1),
				CallID: callID(tc.ID), Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)})
		}
	}
	r := b.response("completed", output)
	if aborted {
		// The upstream's engine gave the answer up after it began: failed with what it had, as
		// its stream is (TestAbortAfterContentIsCut).
		r.Status, r.Error = "failed", &responseError{Code: "server_error", Message: abortedMessage}
	}
	body, _ := json.Marshal(r)
	h := b.w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	b.w.WriteHeader(http.StatusOK)
	b.werr = sendWhole(b.w, body) // headSent when the client left during the body: the server's 200
}

// streamEvent is one Responses stream event; the fields an event type does not have are left out.
type streamEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *responseObject `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	Item           any             `json:"item,omitempty"`
	Part           any             `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	// Name is function_call_arguments.done's: the API's current schema has it there, and clients
	// generated from it read the call's name off that event.
	Name     string          `json:"name,omitempty"`
	Refusal  *string         `json:"refusal,omitempty"`
	Logprobs json.RawMessage `json:"logprobs,omitempty"`
	Code     string          `json:"code,omitempty"`
	Message  string          `json:"message,omitempty"`
	Param    json.RawMessage `json:"param,omitempty"`
}

var emptyList = json.RawMessage("[]")

func ptr[T any](v T) *T { return &v }

// emit writes one event to the client, with the next sequence number. Flushing is the relay's.
func (b *responsesWriter) emit(ev streamEvent) {
	if b.werr != nil || b.overLong {
		return
	}
	if !b.send(ev) {
		b.tooLong(ev.Type)
	}
}

// send writes ev, numbered, unless its data line would be longer than a client reads
// (maxEventData): then it writes nothing and reports false.
func (b *responsesWriter) send(ev streamEvent) bool {
	ev.SequenceNumber = b.seq
	out, head := b.eventHead(ev.Type)
	out, err := marshalEvent(out, &ev)
	if err != nil {
		b.werr = err
		return true
	}
	return b.eventEnd(out, head)
}

// emitDelta is emit for the delta event of a token, of type typ, to the content part at content
// of the output item open (b.at), whose id is itemID: written as a streamEvent of those members
// would be (with logprobs, an empty list), without making one.
func (b *responsesWriter) emitDelta(typ string, content int, itemID, delta string, logprobs bool) {
	if b.werr != nil || b.overLong {
		return
	}
	d := deltaEvent{typ: typ, seq: b.seq, output: b.at, content: content, hasOutput: true, hasContent: true,
		itemID: itemID, delta: delta, hasDelta: true, logprobs: logprobs}
	out, head := b.eventHead(typ)
	if !b.eventEnd(d.append(out), head) {
		b.tooLong(typ)
	}
}

// eventHead begins an event of type typ in the buffer kept for the next (a Writer does not keep
// what it is given): its event line and "data: ", which the data follows from head.
func (b *responsesWriter) eventHead(typ string) (out []byte, head int) {
	out = append(append(append(b.out[:0], "event: "...), typ...), '\n')
	out = append(out, sseData...)
	return out, len(out)
}

// eventEnd writes out, an event whose data begins at head, numbered, unless its data line would
// be longer than a client reads (maxEventData): then it writes nothing and reports false.
func (b *responsesWriter) eventEnd(out []byte, head int) bool {
	if len(out)-head > maxEventData {
		return false
	}
	b.seq++
	out = append(out, sseEnd...)
	if cap(out) <= maxPooledEvent {
		b.out = out
	}
	_, b.werr = b.w.Write(out)
	return true
}

// maxKeptChoices is the most choices a stream's bridge keeps room for: an upstream that answers
// more than asked (its own default n) sends a few; a chunk of thousands is not kept.
const maxKeptChoices = 8

// maxPooledEvent is the most a Responses stream keeps of its event buffer for the next event: a
// response.completed that repeated a long answer is not kept for the deltas of the next.
const maxPooledEvent = 64 << 10

// tooLong ends a stream whose next event, of type typ, would be a line longer than a client reads
// (maxEventData; openai-go fails the stream on it and reads nothing after): in its place, the
// error event and response.failed that fail sends, the response without its output, which is
// what grew too long (a delta the encoder's escapes lengthened, or the whole text that the .done
// events and the response repeat). A response.failed still too long (the request's own fields
// it repeats, escaped) is left out, the error event ending the stream alone. Nothing is emitted
// after (TestSSELinesWithinSDKLimit).
func (b *responsesWriter) tooLong(typ string) {
	b.ended, b.overLong = true, true
	msg := "the response's " + typ + " event is longer than a client's SSE reader takes (" + strconv.Itoa(maxEventData) +
		" bytes): the stream ends here"
	b.send(streamEvent{Type: "error", Code: "stream_interrupted", Message: msg, Param: json.RawMessage("null")})
	b.reason = ""
	r := b.response("failed", nil)
	r.Error = &responseError{Code: "server_error", Message: msg}
	b.send(streamEvent{Type: "response.failed", Response: r})
}

// start opens the stream: the response exists and is in progress.
func (b *responsesWriter) start() {
	r := b.response("in_progress", nil)
	r.Usage = nil
	b.emit(streamEvent{Type: "response.created", Response: r})
	b.emit(streamEvent{Type: "response.in_progress", Response: r})
}

// onChunk translates one chat stream payload: a chunk, [DONE], or the error event the relay ends
// a broken stream with.
func (b *responsesWriter) onChunk(p []byte) {
	var c chatAnswer
	done := string(p) == "[DONE]"
	known := false
	if !done {
		c, known = decodeChunkIn(p, &b.room)
	}
	if !b.started {
		// Opened with the first event, which names the model that serves, as every event after
		// it does.
		b.started = true
		if c.Model != "" {
			b.model = c.Model
		}
		b.start()
	}
	if done {
		if b.reason == upstream.FinishAbort {
			// The upstream's engine gave the answer up (upstream.AbortedError): a stream that
			// broke off, with what had arrived, never completed (TestAbortAfterContentIsCut).
			b.fail("stream_interrupted", abortedMessage)
			return
		}
		b.complete()
		return
	}
	if !known {
		return // not a chunk: nothing a Responses client could read
	}
	if c.Error != nil {
		code := "stream_interrupted"
		if s, ok := c.Error.Code.(string); ok && s != "" {
			code = s
		}
		b.fail(code, c.Error.Message)
		return
	}
	if c.Usage != nil {
		b.usage = c.Usage
	}
	ch := c.first()
	if ch == nil {
		return
	}
	if d := ch.Delta.thinking(); d != "" {
		b.thinkDelta(d)
	}
	if d := ch.Delta.text(); d != "" {
		b.partDelta(false, d)
	}
	if d := ch.Delta.Refusal; d != nil && *d != "" {
		b.partDelta(true, *d)
	}
	for _, tc := range ch.Delta.ToolCalls {
		b.callDelta(tc.Index, tc.ID, tc.Function.Name, string(tc.Function.Arguments))
	}
	if ch.FinishReason != nil && upstream.SaysFinish(*ch.FinishReason) {
		b.reason = *ch.FinishReason
	}
}

// keptUsage takes the usage of ev, the usage-only chunk that the adapter asked for and the relay
// keeps from the stream (upstream.Response.UsageAsked), for response.completed.
func (b *responsesWriter) keptUsage(ev []byte) {
	var c struct {
		Usage *chatUsage `json:"usage"`
	}
	if json.Unmarshal(ev, &c) == nil && c.Usage != nil {
		b.usage = c.Usage
	}
}

// countedUsage takes u, the stream's usage as the relay counted it, when no event written
// through the bridge or kept from it carried one: a translating adapter (upstream.UsageStream)
// has its server's counts and puts them in a chunk only when the client asked, which the bridge
// does not.
func (b *responsesWriter) countedUsage(u upstream.Usage) {
	if b.usage != nil || !u.Reported {
		return
	}
	p, c := int64(min(u.Prompt, math.MaxInt64)), int64(min(u.Completion, math.MaxInt64))
	b.usage = &chatUsage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

// outgrown counts n more bytes of output text and, once the output is longer than an event may
// be, ends the stream as tooLong does and reports true. response.completed repeats the whole
// output, so such a stream can no longer complete; it ended so only at [DONE], after the bridge
// had kept every byte an upstream streamed, however many, for events that could not go
// (TestResponsesStreamOutputBounded).
func (b *responsesWriter) outgrown(n int) bool {
	if b.overLong {
		return true // ended by an earlier delta of the same chunk
	}
	if b.outLen += n; b.outLen <= maxEventData {
		return false
	}
	b.tooLong("response.completed")
	return true
}

// closeOpen closes the item open, if one is, with status: an item of another kind is to be added.
func (b *responsesWriter) closeOpen(status string) {
	switch {
	case b.think != nil:
		b.closeThinking(status)
	case b.msg != nil:
		b.closeMessage(status)
	case b.call != nil:
		b.closeCall(status)
	}
}

// add adds item at the next output_index, the item open.
func (b *responsesWriter) add(item any) {
	b.at = len(b.output)
	b.output = append(b.output, item)
	b.emit(streamEvent{Type: "response.output_item.added", OutputIndex: ptr(b.at), Item: item})
}

// thinkDelta streams a piece of the model's reasoning, in a reasoning item of its own: reasoning
// that resumes after the answer began (an interleaved-thinking model, or an upstream that sends
// more reasoning after its text or a call) is a new item at the next output_index, where it was
// once dropped and the stream lost what the whole answer has (TestResponsesStreamReasoningResumes).
func (b *responsesWriter) thinkDelta(d string) {
	if b.outgrown(len(d)) || b.hold(heldThinking, d) {
		return
	}
	b.streamThinking(d)
}

// streamThinking is thinkDelta once d may go out.
func (b *responsesWriter) streamThinking(d string) {
	if b.think == nil {
		b.closeOpen("completed")
		b.think = &outputReasoning{ID: newID("rs_"), Type: "reasoning", Status: "in_progress", Summary: []any{},
			Content: []reasoningText{}}
		b.add(b.think)
		b.emit(streamEvent{Type: "response.content_part.added", OutputIndex: ptr(b.at), ContentIndex: ptr(0),
			ItemID: b.think.ID, Part: reasoningText{Type: "reasoning_text"}})
	}
	b.thought.WriteString(d)
	b.emitDelta("response.reasoning_text.delta", 0, b.think.ID, d, false)
}

// closeThinking closes the open reasoning item.
func (b *responsesWriter) closeThinking(status string) {
	text := b.thought.String()
	part := reasoningText{Type: "reasoning_text", Text: text}
	b.emit(streamEvent{Type: "response.reasoning_text.done", OutputIndex: ptr(b.at), ContentIndex: ptr(0),
		ItemID: b.think.ID, Text: &text})
	b.emit(streamEvent{Type: "response.content_part.done", OutputIndex: ptr(b.at), ContentIndex: ptr(0),
		ItemID: b.think.ID, Part: part})
	b.think.Status, b.think.Content = status, []reasoningText{part}
	b.emit(streamEvent{Type: "response.output_item.done", OutputIndex: ptr(b.at), Item: b.think})
	b.think = nil
	b.thought.Reset()
}

// part is the open message's output_text part (or its refusal part), opening a message and the
// part when they are not yet.
func (b *responsesWriter) part(refusal bool) (*streamPart, int) {
	if b.msg == nil {
		b.closeOpen("completed")
		b.msg = &outputMessage{ID: newID("msg_"), Type: "message", Status: "in_progress", Role: "assistant", Content: []any{}}
		b.said = true
		b.add(b.msg)
	}
	for i, p := range b.parts {
		if p.refusal == refusal {
			return p, i
		}
	}
	p, i := &streamPart{refusal: refusal}, len(b.parts)
	b.parts = append(b.parts, p)
	b.emit(streamEvent{Type: "response.content_part.added", OutputIndex: ptr(b.at), ContentIndex: ptr(i),
		ItemID: b.msg.ID, Part: p.value()})
	return p, i
}

// value is the part as an output message's content has it.
func (p *streamPart) value() any {
	if p.refusal {
		return outputRefusal{Type: "refusal", Refusal: p.text.String()}
	}
	return textPart(p.text.String())
}

// partDelta streams a piece of the message's text, or of its refusal.
func (b *responsesWriter) partDelta(refusal bool, d string) {
	kind := heldText
	if refusal {
		kind = heldRefusal
	}
	if b.outgrown(len(d)) || b.hold(kind, d) {
		return
	}
	b.streamPart(refusal, d)
}

// streamPart is partDelta once d may go out.
func (b *responsesWriter) streamPart(refusal bool, d string) {
	p, i := b.part(refusal)
	p.text.WriteString(d)
	if refusal {
		b.emitDelta("response.refusal.delta", i, b.msg.ID, d, false)
		return
	}
	b.emitDelta("response.output_text.delta", i, b.msg.ID, d, true)
}

// closeMessage closes the open message item: each part's done events, then the item's.
func (b *responsesWriter) closeMessage(status string) {
	content := make([]any, len(b.parts))
	for i, p := range b.parts {
		text := p.text.String()
		if p.refusal {
			b.emit(streamEvent{Type: "response.refusal.done", OutputIndex: ptr(b.at), ContentIndex: ptr(i),
				ItemID: b.msg.ID, Refusal: &text})
		} else {
			b.emit(streamEvent{Type: "response.output_text.done", OutputIndex: ptr(b.at), ContentIndex: ptr(i),
				ItemID: b.msg.ID, Text: &text, Logprobs: emptyList})
		}
		content[i] = p.value()
		b.emit(streamEvent{Type: "response.content_part.done", OutputIndex: ptr(b.at), ContentIndex: ptr(i),
			ItemID: b.msg.ID, Part: content[i]})
	}
	b.msg.Status, b.msg.Content = status, content
	b.emit(streamEvent{Type: "response.output_item.done", OutputIndex: ptr(b.at), Item: b.msg})
	b.msg, b.parts = nil, nil
}

// callDelta follows chat's tool call deltas: the first for an index names the call, the rest
// carry pieces of its arguments.
func (b *responsesWriter) callDelta(index int, id, name, args string) {
	if b.outgrown(len(id) + len(name) + len(args)) {
		return
	}
	c := b.lastCall[index]
	b.callSteps++
	if c != nil && id != "" && c.id != "" && id != c.id {
		// Another call at the same index: servers that leave out the index (Ollama's OpenAI
		// endpoint, some llama.cpp builds) send each call whole, with its own id, all at 0.
		c = nil
	}
	if c == nil {
		c = &streamCall{chatIndex: index, item: functionCall{ID: newID("fc_"), Type: "function_call", Status: "in_progress"}}
		b.calls = append(b.calls, c)
		if b.lastCall == nil {
			b.lastCall = map[int]*streamCall{}
		}
		b.lastCall[index] = c
	}
	switch {
	case c.closed:
		// A fragment after the call's whole arguments, once text or the next call followed them:
		// its done events gave its arguments, which the response repeats, so it is not added.
		return
	case c.announced:
		if args != "" {
			c.write(args)
			b.emit(streamEvent{Type: "response.function_call_arguments.delta", OutputIndex: ptr(c.at),
				ItemID: c.item.ID, Delta: &args})
		}
	default:
		if c.id == "" {
			c.id = id
		}
		if c.item.Name == "" {
			c.item.Name = name
		}
		c.write(args)
	}
	if len(b.held) > 0 && (b.call == nil || !b.call.halfway()) {
		b.release()
	}
	b.addCalls()
}

// hold keeps d back when the open call's arguments are half-way, or something before it is
// kept back, and reports whether it did.
func (b *responsesWriter) hold(kind heldKind, d string) bool {
	if len(b.held) == 0 && (b.call == nil || !b.call.halfway()) {
		return false
	}
	b.held = append(b.held, heldDelta{kind, d})
	return true
}

// release streams what hold kept back, in the order it came.
func (b *responsesWriter) release() {
	held := b.held
	b.held = nil
	for _, h := range held {
		switch h.kind {
		case heldThinking:
			b.streamThinking(h.d)
		case heldText:
			b.streamPart(false, h.d)
		case heldRefusal:
			b.streamPart(true, h.d)
		}
	}
}

// addCalls adds the calls waiting, in the order they began, while the first waiting is named and
// the item open may close for it (streamCall): a call may close once its arguments are whole, or,
// when they never began (a function of no parameters streamed with arguments "", as some servers
// stream one), once the next call's are whole. It waited for arguments that were never to
// come, holding every call after it until the stream's end
// (TestResponsesStreamNoArgumentCallDoesNotHoldTheNext). The next call's arguments merely begun
// do not close it: an upstream that interleaves calls may name one, then begin the next, and only
// then send the first one's arguments (TestResponsesStreamEqualsWhole's two calls interleaved).
func (b *responsesWriter) addCalls() {
	for b.waiting < len(b.calls) {
		c := b.calls[b.waiting]
		if c.item.Name == "" || b.call != nil && !b.call.whole() && (b.call.begun || !c.whole()) {
			return
		}
		b.closeOpen("completed")
		b.announce(c)
	}
}

// announce adds the first call waiting, and sends the arguments that came before as one delta.
func (b *responsesWriter) announce(c *streamCall) {
	b.waiting++
	c.announced = true
	c.item.CallID = callID(c.id)
	b.call = c
	b.add(&c.item)
	c.at = b.at
	if c.args.Len() > 0 {
		args := c.args.String()
		b.emit(streamEvent{Type: "response.function_call_arguments.delta", OutputIndex: ptr(c.at),
			ItemID: c.item.ID, Delta: &args})
	}
}

// closeCall closes the open call item.
func (b *responsesWriter) closeCall(status string) {
	c := b.call
	args := c.args.String()
	b.emit(streamEvent{Type: "response.function_call_arguments.done", OutputIndex: ptr(c.at), ItemID: c.item.ID,
		Arguments: &args, Name: c.item.Name})
	c.item.Status, c.item.Arguments = status, args
	b.emit(streamEvent{Type: "response.output_item.done", OutputIndex: ptr(c.at), Item: &c.item})
	c.closed = true
	b.call = nil
}

// closeItems adds the calls still waiting (one the upstream never named, as it is), closing each
// item with status and the last with last, and returns the output, in output_index order.
func (b *responsesWriter) closeItems(status, last string) []any {
	if len(b.held) > 0 {
		// The open call's arguments never came whole: it is closed as they are, then what
		// waited for it streams.
		b.closeOpen(status)
		b.release()
	}
	for b.waiting < len(b.calls) {
		b.closeOpen(status)
		b.announce(b.calls[b.waiting])
	}
	b.closeOpen(last)
	return b.output
}

// complete ends the stream after the chat stream's [DONE].
func (b *responsesWriter) complete() {
	b.ended = true
	last := itemStatus(b.cutShort())
	if !b.said && len(b.calls) == 0 {
		// An answer with nothing in it is a message with an empty text, as it is whole; its
		// reasoning is what was cut, when the answer was.
		b.closeOpen(last)
		b.part(false)
	}
	output := b.closeItems("completed", last)
	r := b.response("completed", output)
	typ := "response.completed"
	if r.Status == "incomplete" {
		typ = "response.incomplete"
	}
	b.emit(streamEvent{Type: typ, Response: r})
}

// abortedMessage is what the client of a Responses stream the upstream aborted reads.
const abortedMessage = `the upstream stream broke off: the upstream aborted the request (finish_reason "abort")`

// fail ends a stream that broke after it started: an error event, then response.failed with what
// had arrived. The error event has OpenAI's documented shape, flat (code, message, param):
// openai-go's Stream.Err() stays nil for it, since the SDK sets it only for an event with a
// top-level "error" member, which would be outside the documented schema; its clients read the
// failure from the events (TestResponsesStreamFailureForTheSDK).
func (b *responsesWriter) fail(code, message string) {
	b.ended = true
	b.emit(streamEvent{Type: "error", Code: code, Message: message, Param: json.RawMessage("null")})
	output := b.closeItems("incomplete", "incomplete")
	b.reason = ""
	r := b.response("failed", output)
	r.Error = &responseError{Code: "server_error", Message: message}
	b.emit(streamEvent{Type: "response.failed", Response: r})
}
