package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/httpwire"
	"github.com/hayula/gateway/internal/jsonx"
)

// HeaderSpecialist names, on a SAIF answer, the specialist that wrote it.
const HeaderSpecialist = "X-Hayula-Specialist"

// maxSpecialistHeader bounds the specialist name that goes into HeaderSpecialist.
const maxSpecialistHeader = 256

// setSpecialist sets h's HeaderSpecialist to the specialist the upstream named, when it can go in
// a head: it is the upstream's text, and a huge one made the gateway's head one that clients
// refuse whole (Node's and Python's h11 stop at 16 KiB), a control byte one that is not HTTP. The
// answer's "hayula" member carries it either way.
func setSpecialist(h http.Header, specialist string) {
	if specialist != "" && len(specialist) <= maxSpecialistHeader && httpwire.ValidValue(specialist) {
		h[HeaderSpecialist] = []string{specialist}
	}
}

// specialistHeader is the header of a whole answer whose router named the specialist name:
// built once for each specialist a saif target lists (specialistHeaders) and shared, read only
// (Response.Header), by every answer that names it, rather than a map and its value made for
// every answer.
type specialistHeader struct {
	name string
	h    http.Header
}

// specialistHeaders are the headers of names, those setSpecialist would set.
func specialistHeaders(names []string) []specialistHeader {
	var hs []specialistHeader
	for _, n := range names {
		h := http.Header{}
		if setSpecialist(h, n); len(h) > 0 {
			hs = append(hs, specialistHeader{name: n, h: h})
		}
	}
	return hs
}

// header is a whole answer's header for the specialist the router named: a shared one for a
// specialist the target lists, spelt as listed; a new one for any other (empty when the name
// cannot go in a head).
func (a *openaiSAIF) header(specialist string) http.Header {
	for i := range a.headers {
		if a.headers[i].name == specialist {
			return a.headers[i].h
		}
	}
	h := http.Header{}
	if setSpecialist(h, specialist); len(h) > 0 {
		// A view of the answer's body (decodeSAIFAnswer): copied once it is known to go in the
		// head, not before (an upstream's name of any length that cannot is not copied at all).
		h[HeaderSpecialist][0] = strings.Clone(specialist)
	}
	return h
}

// openaiSAIF translates one OpenAI request to the SAIF protocol (CONFIG.md, "The SAIF
// protocol"): POST {url}/v1/completions with a ChatML prompt and the specialist named by the
// route hint, answered by one JSON object or by SSE events of text. Target.URL is the SAIF base
// URL, with or without /v1.
//
// /v1/completions maps onto the same call with the client's prompt as it is (SAIF's endpoint is
// a completions endpoint; only the chat form needs the template). Embeddings are not served.
type openaiSAIF struct {
	t       *core.Target
	c       *http.Client
	now     func() time.Time
	newID   func() string
	id      string      // the gateway's request ID, sent as X-Request-Id; "" for none
	readers *readerPool // lends a stream its SSE reader; nil: each stream its own
	headers []specialistHeader
}

type saifRequest struct {
	Prompt string `json:"prompt"`
	// promptJSON is Prompt as mustJSON writes it (a quoted JSON string), when the prompt was
	// rendered straight into JSON (appendChatML): appendSAIFRequest copies it in Prompt's place.
	promptJSON  []byte
	Specialist  *string  `json:"specialist"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	Stream      bool     `json:"stream"`
}

// saifUsage is SAIF's usage object; a count it leaves out is nil (reportedUsage).
type saifUsage struct {
	PromptTokens     *int `json:"prompt_tokens"`
	CompletionTokens *int `json:"completion_tokens"`
}

// reported is reportedUsage of u, which is nil when SAIF sent no usage.
func (u *saifUsage) reported() (usageJSON, bool, Usage) {
	if u == nil {
		return usageJSON{}, false, Usage{}
	}
	return reportedUsage(u.PromptTokens, u.CompletionTokens)
}

type saifAnswer struct {
	ID           string     `json:"id"`
	Specialist   string     `json:"specialist"`
	RoutedBy     string     `json:"routed_by"`
	Confidence   *float64   `json:"confidence"`
	Text         *string    `json:"text"`
	FinishReason string     `json:"finish_reason"`
	Usage        *saifUsage `json:"usage"`
	// textJSON is the text as its literal, Text then nil, when decodeSAIFAnswer's literal
	// kept it (plainToken).
	textJSON []byte
}

// saifEvent is one SSE payload: text with its specialist, or the closing done event.
type saifEvent struct {
	Text string `json:"text"`
	// textJSON is the text as SAIF's literal wrote it, a slice of the event, when the event was
	// read with decodeSAIFEvent's literal and plainToken says a chunk can carry it as it is;
	// Text is then "".
	textJSON []byte

	Specialist   string     `json:"specialist"`
	Done         bool       `json:"done"`
	FinishReason string     `json:"finish_reason"`
	Usage        *saifUsage `json:"usage"`
}

func (a *openaiSAIF) chat(ctx context.Context, req *core.Request) (*Response, error) {
	if !Serves(a.t.Adapter, req.Op) {
		return nil, unsupportedOp(a.t, req.Op)
	}
	spec, err := a.specialist(req)
	if err != nil {
		return nil, err
	}
	out := &saifRequest{Specialist: spec, MaxTokens: req.MaxTokens, Stream: req.Stream}
	var prompt *lentBody // the prompt's JSON, until it is copied into the body
	if req.Op == core.OpCompletions {
		err = a.fromCompletions(req, out)
	} else {
		out.Temperature, out.Stop = req.Params.Temperature, req.Params.StopList()
		prompt = lendBody(a.c, len(req.Body)+256)
		prompt.b, err = a.appendChatML(prompt.b, req.Messages, req.Validated)
		out.promptJSON = prompt.b
	}
	var body *lentBody
	if err == nil {
		body = lendBody(a.c, len(out.Prompt)+len(out.promptJSON)+128)
		body.b = appendSAIFRequest(body.b, out)
	}
	if prompt != nil {
		prompt.give()
	}
	if err != nil {
		return nil, err
	}
	p := whole(body.b)
	resp, err := post(ctx, a.c, a.t, saifPath(a.t.URL), &p, accept(req.Stream, "text/event-stream"), a.id, a.now)
	body.give() // sent
	if err != nil {
		return nil, err
	}
	if req.Stream {
		return a.stream(resp, req)
	}
	return a.answer(ctx, resp, req)
}

// saifFinish is the OpenAI finish_reason of SAIF's: as openAIFinish, except that "tool_calls"
// is "stop": SAIF has no tools, and the answer has no tool calls for the client to run
// (TestSAIFFinishReasonHasNoToolCalls).
func saifFinish(reason string) string {
	if f := openAIFinish(reason); f != "tool_calls" {
		return f
	}
	return "stop"
}

// saifPath is the completions endpoint below base. The target's url may be written with or
// without /v1 (config's health path treats it the same way); /v1 is never repeated.
func saifPath(base string) string {
	if strings.HasSuffix(base, "/v1") {
		return "/completions"
	}
	return "/v1/completions"
}

// specialist resolves the route hint against the target's specialists, case-insensitively, to
// the name as configured. No hint lets SAIF's router choose. (A hint that named a route for model
// "auto" was consumed by the server and never reaches here; nor does one the target does not list,
// which the server's specialist filter keeps off it.) The error does not repeat the hint, the
// client's text of any length.
func (a *openaiSAIF) specialist(req *core.Request) (*string, error) {
	h := strings.TrimSpace(req.RouteHint)
	if h == "" {
		return nil, nil
	}
	if s, ok := a.t.Specialist(h); ok {
		return &s, nil
	}
	valid := "none are configured"
	if len(a.t.Specialists) > 0 {
		valid = "valid: " + strings.Join(a.t.Specialists, ", ")
	}
	return nil, requestError(a.t, "unknown_specialist", "x-route-hint",
		fmt.Sprintf("x-route-hint names no SAIF specialist of target %s (%s)", a.t.Name, valid))
}

// chatML renders the conversation with Qwen's ChatML template, ending with the open assistant
// turn the model completes. The request carries appendChatML's JSON of it; this is the text
// (the tests read the prompt as the model will).
func (a *openaiSAIF) chatML(msgs []core.Message) (string, error) {
	q, err := a.appendChatML(nil, msgs, false)
	if err != nil {
		return "", err
	}
	s, _ := jsonx.Unquote(q)
	return s, nil
}

// appendChatML appends chatML's prompt as mustJSON writes that string, which is what the request
// carries: rendered straight into JSON, a message's text the client wrote as mustJSON would
// (verbatim) is copied as it came, where it was decoded, rendered and escaped again
// (FuzzChatMLMatchesEncoding). Every piece the template puts between texts is ASCII, so the
// texts escaped one by one are the prompt escaped whole. valid says the contents are known to be
// valid JSON in valid UTF-8 (readContent).
func (a *openaiSAIF) appendChatML(dst []byte, msgs []core.Message, valid bool) ([]byte, error) {
	dst = append(dst, '"')
	for i := range msgs {
		m := &msgs[i]
		fc, err := readContent(m.Content, valid)
		if err != nil {
			return nil, requestError(a.t, "invalid_value", fmt.Sprintf("messages[%d].content", i),
				"message content must be a string or an array of content parts")
		}
		if len(fc.images) > 0 || fc.other != "" {
			return nil, requestError(a.t, "unsupported_content", fmt.Sprintf("messages[%d].content", i),
				"the saif adapter sends text only; set vision = false on the target so that such requests skip it")
		}
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		if !plainRole(role) {
			return nil, requestError(a.t, "invalid_value", fmt.Sprintf("messages[%d].role", i),
				"the saif adapter writes the role into the ChatML prompt: it must be a plain name (letters, digits, _ or -)")
		}
		dst = append(append(append(dst, "<|im_start|>"...), role...), `\n`...)
		if len(fc.literal) > 2 && !bytes.Contains(fc.literal, []byte("<|")) {
			dst = append(dst, fc.literal[1:len(fc.literal)-1]...) // a text, which assistantText keeps
		} else {
			dst = appendChatMLText(dst, assistantText(m, fc.str()))
		}
		dst = append(dst, `<|im_end|>\n`...)
	}
	return append(dst, `<|im_start|>assistant\n"`...), nil
}

// plainRole reports whether a role can be written into a ChatML turn header as it is: a
// newline or a special token in it would end the header and let the role write the turn.
func plainRole(r string) bool {
	if r == "" {
		return false
	}
	for i := 0; i < len(r); i++ {
		if c := r[i]; !tokenNameByte(c) && c != '-' {
			return false
		}
	}
	return true
}

func tokenNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// appendChatMLText appends a message's text, JSON-escaped, with every special token it spells
// (<|im_end|>, <|im_start|>, <|endoftext|>, any <|name|>) broken by a zero-width space after
// the '<'. SAIF tokenizes the prompt with its special tokens, so a <|im_end|> typed by a user
// would end the turn and what follows could open a system one; broken, it stays text, to the
// tokenizer and, nearly unchanged, to the model. Text that only looks alike (Haskell's <|>)
// is left as it is.
func appendChatMLText(dst []byte, s string) []byte {
	for {
		i := strings.Index(s, "<|")
		if i < 0 {
			return jsonx.AppendEscaped(dst, s, false)
		}
		j := i + 2
		for j < len(s) && tokenNameByte(s[j]) {
			j++
		}
		if j == i+2 || !strings.HasPrefix(s[j:], "|>") {
			dst = jsonx.AppendEscaped(dst, s[:i+2], false)
			s = s[i+2:]
			continue
		}
		dst = append(jsonx.AppendEscaped(dst, s[:i+1], false), "\u200b"...)
		s = s[i+1:]
	}
}

// fromCompletions reads an OpenAI completions body: one prompt string, sent as it is.
func (a *openaiSAIF) fromCompletions(req *core.Request, out *saifRequest) error {
	var in struct {
		Prompt      json.RawMessage `json:"prompt"`
		Temperature *float64        `json:"temperature"`
		Stop        json.RawMessage `json:"stop"`
		Echo        bool            `json:"echo"`
		Suffix      *string         `json:"suffix"`
	}
	if err := json.Unmarshal(req.Body, &in); err != nil {
		return requestError(a.t, "invalid_json", "", "the request body is not valid JSON")
	}
	// Either changes what the answer's text is; served without it, the client would take a bare
	// completion for the one it asked for.
	if in.Echo {
		return requestError(a.t, "unsupported_value", "echo", "the saif adapter cannot echo the prompt: leave echo out or false")
	}
	if in.Suffix != nil && *in.Suffix != "" {
		return requestError(a.t, "unsupported_value", "suffix", "the saif adapter does not insert text before a suffix: leave suffix out")
	}
	var one []string
	if s, ok := rawString(in.Prompt); ok {
		one = []string{s}
	} else if !oneElement(in.Prompt) || json.Unmarshal(in.Prompt, &one) != nil || len(one) != 1 {
		return requestError(a.t, "unsupported_prompt", "prompt",
			"the saif adapter completes one prompt string at a time (no batches, no token arrays)")
	}
	out.Prompt, out.Temperature = one[0], in.Temperature
	p := core.Params{Stop: in.Stop}
	out.Stop = p.StopList()
	return nil
}

// oneElement reports whether v is an array of exactly one element, counted without decoding: a
// batch or a token array, decoded into a []string to be refused, cost some 24 or 86 bytes
// allocated for each byte of the body (TestSAIFPromptArrayRefusedCheaply).
func oneElement(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '[' {
		return false
	}
	it := jsonx.Array(v, false)
	n := 0
	for {
		if _, _, ok := it.Next(); !ok {
			return n == 1 && it.Done()
		}
		if n++; n > 1 {
			return false
		}
	}
}

func (a *openaiSAIF) answer(ctx context.Context, resp *http.Response, req *core.Request) (*Response, error) {
	op := req.Op
	upID := upstreamID(resp, a.t.APIKey) // before the body (see openaiOpenAI.body)
	raw, err := readAnswer(ctx, a.t, resp)
	if err != nil {
		return nil, err
	}
	m, err := decodeSAIFAnswer(raw, true)
	if err != nil || m.Text == nil && m.textJSON == nil {
		return nil, &core.ProtocolError{Target: a.t.Name, Err: &NotJSONError{Body: redact(capBytes(raw, maxErrorBody), a.t.APIKey)}}
	}
	// hy, usage and finish are values whose addresses only the chat branch takes, for
	// appendCompletion, which keeps none of them: in this frame, not three allocations of every
	// answer (the text completion's branch, through encoding/json, gets copies).
	hy := hayulaJSON{Specialist: m.Specialist, RoutedBy: m.RoutedBy, Confidence: m.Confidence}
	id := m.ID
	if id == "" {
		prefix := "chatcmpl-" // as OpenAI names each kind, and as stream names its chunks
		if op == core.OpCompletions {
			prefix = "cmpl-"
		}
		id = prefix + a.newID()
	}
	usage, hasUsage, n := m.Usage.reported()
	created, finish := a.now().Unix(), saifFinish(m.FinishReason)
	var b []byte
	var text string // the answer's text, unless kept as its literal (m.textJSON)
	if m.Text != nil {
		text = *m.Text
	}
	if op == core.OpCompletions {
		if m.textJSON != nil {
			text = literalText(m.textJSON)
		}
		b = textCompletion(id, created, a.t.Model, text, finish, usage, hasUsage, hy)
	} else {
		msg := completionMessage(a.t.Reasoning, text, m.textJSON, "", nil)
		if req.HideReasoning {
			// The reasoning object's exclude: the think block the target's reasoning setting
			// split out goes nowhere (TestReasoningExcludeEveryAdapter).
			msg.ReasoningContent = ""
		}
		c := completionJSON{ID: id, Object: "chat.completion", Created: created, Model: a.t.Model,
			Choices: []choiceJSON{{Message: msg, FinishReason: finish}},
			Usage:   usage.orNil(hasUsage), Hayula: &hy}
		b = appendCompletion(xlateBuf(resp, len(text)+len(m.textJSON)+len(msg.ReasoningContent)+384), &c)
	}
	r := translatedResponse(resp, b, n, upID)
	r.Header = a.header(m.Specialist)
	return r, nil
}

// textCompletion is a whole text_completion of SAIF's answer. Its arguments are copies of
// answer's, whose addresses encoding/json's interface would otherwise move to the heap for the
// chat answers too.
func textCompletion(id string, created int64, model, text, finish string, usage usageJSON, hasUsage bool, hy hayulaJSON) []byte {
	return mustJSON(textCompletionJSON{ID: id, Object: "text_completion", Created: created, Model: model,
		Choices: []textChoiceJSON{{Text: text, FinishReason: &finish}}, Usage: usage.orNil(hasUsage), Hayula: &hy})
}

func (a *openaiSAIF) stream(resp *http.Response, req *core.Request) (*Response, error) {
	ct := resp.Header.Get("Content-Type")
	if !isEventStream(ct) {
		return nil, notEventStream(a.t, resp, ct)
	}
	id, created := "chatcmpl-"+a.newID(), a.now().Unix()
	ck := newChunker(id, created, a.t.Model, a.t.Reasoning)
	ck.hide = req.HideReasoning
	var out chunkMaker = ck
	if req.Op == core.OpCompletions {
		out = &textChunker{id: "cmpl-" + id[len("chatcmpl-"):], created: created, model: a.t.Model}
	}
	h := http.Header{}
	return &Response{Header: h, UpstreamID: upstreamID(resp, a.t.APIKey), Stream: &saifStream{target: a.t.Name, key: a.t.APIKey, body: resp.Body, sse: a.readers.sse(resp.Body), pool: a.readers,
		out: out, header: h, includeUsage: req.IncludeUsage}}, nil
}

// chunkMaker builds the stream payloads of one answer: chat chunks or text_completion chunks.
type chunkMaker interface {
	delta(text string, lit []byte, reasoning string, calls []toolCallJSON, hy *hayulaJSON) []byte // see chunker.delta
	finish(reason string) []byte
	held() []byte // see eventSource
	usage(u *usageJSON) []byte
	// reset lets the chunks to come reuse the memory of those made so far, which the stream
	// has handed out (a Stream's slice is valid until its next Next).
	reset()
}

var _ chunkMaker = (*chunker)(nil)

// saifStream turns SAIF's SSE events into OpenAI chunks. The first event that names a specialist
// puts it in its chunk's "hayula" member; when that is the first event, also in the Response's
// header map, which the caller copies to the client after reading the first event. A data payload with "error", an event
// named error, or a body that ends before the done event is a *core.StreamError.
type saifStream struct {
	target       string
	key          core.Secret // redacted from an event an error quotes
	body         io.ReadCloser
	sse          *sseReader
	pool         *readerPool // where sse goes back on Close; nil for none
	out          chunkMaker
	header       http.Header
	includeUsage bool

	started bool  // an event was read
	named   bool  // an event named the specialist
	usage   Usage // the done event's counts, once read
	queue
}

func (s *saifStream) Next() ([]byte, error) { return s.next(s) }

func (s *saifStream) read() error {
	s.out.reset() // the queue is empty: the chunks made so far are handed out
	ev, err := s.sse.next()
	if err != nil {
		switch {
		case errors.Is(err, io.EOF):
			return &core.StreamError{Target: s.target, Message: "upstream closed the stream before the done event"}
		case errors.Is(err, errEventTooLarge):
			return &core.StreamError{Target: s.target, Message: err.Error(), Err: err}
		}
		return &core.StreamError{Target: s.target, Message: "upstream broke off: " + err.Error(), Err: err}
	}
	data := bytes.TrimSpace(ev.data)
	if len(data) == 0 {
		return nil
	}
	if msg, ok := errorEvent(ev.name, data); ok {
		return &core.StreamError{Target: s.target, Message: msg, Quoted: len(msg)}
	}
	e, err := decodeSAIFEvent(data, !s.named, true)
	if err != nil {
		if ev.cut {
			return &core.StreamError{Target: s.target, Message: "upstream closed the stream inside an event"}
		}
		q := snippet(redact(data, s.key))
		return &core.StreamError{Target: s.target, Message: "upstream sent an event that is not SAIF's: " + q, Err: err, Quoted: len(q)}
	}
	var hy *hayulaJSON
	if !s.named && e.Specialist != "" {
		// The first event that names a specialist says so in its chunk, the first event or a
		// later one (SAIF's router may send text before it has chosen); the header only when it
		// is the first, since the caller sends the head after reading that.
		s.named = true
		hy = &hayulaJSON{Specialist: e.Specialist}
		if !s.started {
			setSpecialist(s.header, e.Specialist)
		}
	}
	s.started = true
	if p := s.out.delta(e.Text, e.textJSON, "", nil, hy); p != nil {
		s.pending = append(s.pending, p)
	}
	if !e.Done {
		return nil
	}
	s.pending = append(s.pending, s.out.finish(saifFinish(e.FinishReason)))
	u, ok, usage := e.Usage.reported()
	s.usage = usage
	if s.includeUsage && ok {
		s.pending = append(s.pending, s.out.usage(&u))
	}
	return io.EOF
}

// Usage is the counts of the done event, asked for or not (UsageStream).
func (s *saifStream) Usage() Usage { return s.usage }

// Buffered reports whether Next will return without waiting on the upstream.
func (s *saifStream) Buffered() bool { return s.ready(s) }

func (s *saifStream) buffered() bool { return s.sse.buffered() }

func (s *saifStream) held() []byte { return s.out.held() }

// Close releases the connection. It is safe to call more than once.
// Close releases the connection and lends the SSE reader on, as ollamaStream's Close does its
// line reader. It is safe to call more than once.
func (s *saifStream) Close() error {
	err := s.close(s.body)
	s.pool.put(s.sse)
	s.sse = nil
	return err
}

// textChoiceJSON and textCompletionJSON are /v1/completions' answer shapes.
type textChoiceJSON struct {
	Text         string    `json:"text"`
	Index        int       `json:"index"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type textCompletionJSON = envelopeJSON[textChoiceJSON]

// textChunker builds the text_completion chunks of a streamed /v1/completions answer.
type textChunker struct {
	id      string
	created int64
	model   string
	started bool
	out     chunkBuf
}

func (c *textChunker) reset() { c.out.reset() }

func (c *textChunker) delta(text string, lit []byte, _ string, _ []toolCallJSON, hy *hayulaJSON) []byte {
	if lit != nil {
		text = literalText(lit) // a legacy completion's stream is rare: not worth a writer of its own
	}
	if c.started && text == "" && hy == nil {
		return nil
	}
	c.started = true
	return c.marshal(text, nil, hy)
}

func (c *textChunker) finish(reason string) []byte { return c.marshal("", &reason, nil) }

func (c *textChunker) held() []byte { return nil }

func (c *textChunker) usage(u *usageJSON) []byte {
	start := len(c.out.buf)
	c.out.buf = appendUsageChunk(c.out.buf, c.id, "text_completion", c.created, c.model, u)
	return c.out.add(start)
}

// marshal writes the chunk of text, as mustJSON would write its textCompletionJSON.
func (c *textChunker) marshal(text string, finish *string, hy *hayulaJSON) []byte {
	start := len(c.out.buf)
	c.out.buf = appendTextChunk(c.out.buf, c.id, c.created, c.model, text, finish, hy)
	return c.out.add(start)
}
