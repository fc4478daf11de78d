package upstream

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

// This file holds what the translating adapters (ollama, saif) share: reading OpenAI message
// content, building OpenAI answers and chunks, and the 4xx errors an adapter raises itself.

// randomID is the default id source: 12 random bytes in hex, unique enough for response and
// tool-call ids without any shared counter.
func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requestError is a 400 the adapter raises before sending anything: the request cannot be said
// in the upstream's protocol. Class request: the chain stops and the client sees why.
func requestError(t *core.Target, code, param, msg string) *core.StatusError {
	return &core.StatusError{Target: t.Name, Status: http.StatusBadRequest, Type: "invalid_request_error",
		Code: code, Param: param, Message: msg}
}

// Serves reports whether the adapter a serves the endpoint op: the one statement of it, which the
// adapters answer by and the server's eligibility skips a target by, so that it is never tried
// for what it does not serve (a try stopped a request that would not fall through on its 404).
func Serves(a core.AdapterKind, op core.Op) bool {
	switch a {
	case core.AdapterOllama:
		return op != core.OpCompletions
	case core.AdapterSAIF:
		return op != core.OpEmbeddings
	}
	return true
}

// OneChoice reports whether the adapter a answers with one choice whatever the client's n: the
// ollama and saif adapters make one call upstream, whose protocols have no n. The server's
// eligibility skips such a target for a request that asks for more (TestChoicesSkipOneChoice).
func OneChoice(a core.AdapterKind) bool {
	return a == core.AdapterOllama || a == core.AdapterSAIF
}

// CarriesFormat reports whether the adapter a can carry a request's JSON response_format and its
// logprobs to the upstream: SAIF's protocol has neither field, so its answer would be prose
// without logprobs whatever the client asked for. The server's eligibility skips such a target
// for a request that asks for either (TestFormatSkipsSAIF).
func CarriesFormat(a core.AdapterKind) bool {
	return a != core.AdapterSAIF
}

// CarriesOpenAIOnly reports whether the adapter a can carry the fields only the OpenAI protocol
// has (core.Request.OpenAIOnly: logit_bias, audio output): Ollama's /api/chat and SAIF have
// neither, and their adapters would answer without them. The server's eligibility skips such a
// target for a request that sets one (TestOpenAIOnlyParamsSkipTranslators).
func CarriesOpenAIOnly(a core.AdapterKind) bool {
	return a == core.AdapterOpenAI
}

// FetchesImages reports whether the adapter a can serve an image given by http(s) URL
// (core.Request.RemoteImages): the OpenAI adapter passes it on for the upstream to fetch, while
// Ollama's /api/chat takes base64 images only and SAIF's protocol no image at all, and their
// adapters refuse it. The server's eligibility skips such a target for such a request
// (TestRemoteImageSkipsOllama).
func FetchesImages(a core.AdapterKind) bool {
	return a == core.AdapterOpenAI
}

// unsupportedOp is a 404 for an endpoint the adapter does not serve (see Serves). Class
// endpoint: the chain moves on to a target that may serve it.
func unsupportedOp(t *core.Target, op core.Op) *core.StatusError {
	return &core.StatusError{Target: t.Name, Status: http.StatusNotFound, Type: "invalid_request_error",
		Code:    "unsupported_endpoint",
		Message: fmt.Sprintf("target %s: the %s adapter does not serve /v1%s", t.Name, t.Adapter, op.Path())}
}

// contentPart is one element of an array-valued message content.
type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Refusal  string          `json:"refusal"`   // an assistant's refusal part, sent back in the history
	ImageURL json.RawMessage `json:"image_url"` // {"url": …, "detail": …}, or a bare string
}

// imageURL reads an image part's URL from either shape.
func (p *contentPart) imageURL() string {
	raw := bytes.TrimSpace(p.ImageURL)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var o struct {
		URL string `json:"url"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.URL
}

// flatContent is a message content read for a protocol that takes plain text: the text parts
// joined with newlines, and the images in order.
type flatContent struct {
	// text is the text, unless literal holds it (see str).
	text string
	// literal is the content's JSON string as the client wrote it, when it is exactly what
	// mustJSON writes for its text (plain, without a line separator), so that a translated
	// request can carry it as it came; the text is then the literal's bytes between its quotes,
	// not copied out into text until a writer needs it as a string; nil otherwise.
	literal []byte
	images  []imagePart
	// other is the type of the first part that is neither text nor image ("" when none).
	other string
}

// imagePart is an image of a content: its URL, and the index of its part in the content, which
// an error about it names (messages[i].content[part].image_url).
type imagePart struct {
	url  string
	part int
}

// errNotContent is a message content that is neither a string nor an array of parts.
var errNotContent = errors.New("message content must be a string or an array of content parts")

// str is the content's text: text, or literal's between its quotes.
func (fc *flatContent) str() string {
	if fc.literal != nil {
		return string(fc.literal[1 : len(fc.literal)-1])
	}
	return fc.text
}

// readContent reads a message's content as the translating adapters send it: its text, its
// images, the first part of another kind. valid says raw is known to be one valid JSON value in
// valid UTF-8 (core.Request.Validated): a string without a backslash is then plain, its text
// its bytes, which one vector search finds, where jsonx.UnquotePlain tests every word and checks
// the UTF-8 (for a message of text outside ASCII, more than the rest of its reading) and copies
// it out.
func readContent(raw json.RawMessage, valid bool) (flatContent, error) {
	raw = bytes.TrimSpace(raw)
	var fc flatContent
	if len(raw) == 0 || string(raw) == "null" {
		return fc, nil
	}
	if raw[0] == '"' {
		if valid && bytes.IndexByte(raw, '\\') < 0 {
			if !hasLineSeparator(raw) {
				fc.literal = raw
			} else {
				fc.text = string(raw[1 : len(raw)-1])
			}
			return fc, nil
		}
		// The string as json.Unmarshal reads it, without its validating pass and its decoder.
		text, plain, ok := jsonx.UnquotePlain(raw)
		if !ok {
			return fc, errNotContent
		}
		if plain && !hasLineSeparator(raw) {
			fc.literal = raw
		} else {
			fc.text = text
		}
		return fc, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return fc, err
	}
	var texts []string
	for i := range parts {
		switch p := &parts[i]; p.Type {
		case "text", "input_text":
			texts = append(texts, p.Text)
		case "refusal":
			// What the assistant said, as OpenAI's assistant content parts carry it.
			texts = append(texts, p.Refusal)
		case "image_url", "input_image", "image":
			fc.images = append(fc.images, imagePart{url: p.imageURL(), part: i})
		default:
			if fc.other == "" {
				fc.other = p.Type
				if fc.other == "" {
					fc.other = "(none)"
				}
			}
		}
	}
	fc.text = strings.Join(texts, "\n")
	return fc, nil
}

// hasLineSeparator reports whether s holds U+2028 or U+2029, which encoding/json escapes: a
// plain literal (jsonx.UnquotePlain) is what mustJSON writes for its text when it holds neither.
func hasLineSeparator(s []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(s[i:], 0xe2)
		if j < 0 {
			return false
		}
		i += j + 1
		if i+1 < len(s) && s[i] == 0x80 && (s[i+1] == 0xa8 || s[i+1] == 0xa9) {
			return true
		}
	}
}

// assistantText is the text sent for message m: its content's text, or, for an assistant
// message without any, its refusal (core.Message.Refusal, decoded with the rest). When both are
// there the content is what is sent: OpenAI never answers both, and a client that keeps both has
// most likely copied the one into the other.
func assistantText(m *core.Message, text string) string {
	if text == "" && m.Role == "assistant" && len(m.Refusal) > 0 && m.Refusal[0] == '"' {
		if s, ok := jsonx.Unquote(m.Refusal); ok {
			return s
		}
	}
	return text
}

// dataURLBase64 returns the payload of a data: URL as base64. ok is false for any other URL.
func dataURLBase64(u string) (b64 string, ok bool, err error) {
	if !strings.HasPrefix(u, "data:") {
		return "", false, nil
	}
	meta, data, found := strings.Cut(u[len("data:"):], ",")
	if !found {
		return "", true, fmt.Errorf("data URL without a comma")
	}
	if strings.HasSuffix(meta, ";base64") {
		// Some clients wrap or URL-encode long base64; the upstream wants it clean.
		data = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
				return -1
			}
			return r
		}, data)
		if strings.Contains(data, "%") {
			if d, err := url.PathUnescape(data); err == nil {
				data = d
			}
		}
		if _, err := base64.StdEncoding.DecodeString(data); err != nil {
			if raw, err2 := base64.RawStdEncoding.DecodeString(strings.TrimRight(data, "=")); err2 == nil {
				return base64.StdEncoding.EncodeToString(raw), true, nil
			}
			return "", true, fmt.Errorf("data URL payload is not base64: %v", err)
		}
		return data, true, nil
	}
	plain, err := url.PathUnescape(data)
	if err != nil {
		return "", true, fmt.Errorf("data URL payload: %v", err)
	}
	return base64.StdEncoding.EncodeToString([]byte(plain)), true, nil
}

// usageJSON is OpenAI's usage object.
type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// reportedUsage is the usage of an answer whose server sent the counts prompt and completion,
// either nil when it left it out: the usage object the client is told (ok false when there is
// none) and its Usage, which is what metrics.Usage reads from that object. A server that left
// out both reported no usage: there is no object (no usage member, no usage chunk) and Reported
// is false, so that the server charges a key's tpm the prompt's lower bound, as for an openai
// answer without usage, rather than a fabricated 0/0. A count left out beside the other is 0
// (Ollama omits a 0). The object is a value, so that a whole answer's, written at once
// (appendCompletion), stays in its caller's frame rather than being allocated (orNil).
func reportedUsage(prompt, completion *int) (u usageJSON, ok bool, n Usage) {
	if prompt == nil && completion == nil {
		return usageJSON{}, false, Usage{}
	}
	var p, c int
	if prompt != nil {
		p = *prompt
	}
	if completion != nil {
		c = *completion
	}
	return usageJSON{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}, true, usageCounts(p, c)
}

// orNil is u, or nil when there is no usage object (!ok): the envelope's Usage.
func (u *usageJSON) orNil(ok bool) *usageJSON {
	if !ok {
		return nil
	}
	return u
}

// toolCallJSON is an OpenAI tool call; Index is set in stream deltas only.
type toolCallJSON struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// messageJSON is the assistant message of a chat.completion. Content is null only when the
// answer is tool calls alone, as OpenAI sends it.
type messageJSON struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	// contentJSON is the content as its literal, Content then nil: written as it is by
	// appendCompletion, the only writer of a message that has one (completionMessage's lit).
	contentJSON      []byte
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallJSON `json:"tool_calls,omitempty"`
}

type choiceJSON struct {
	Index        int           `json:"index"`
	Message      messageJSON   `json:"message"`
	Logprobs     *logprobsJSON `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

// logprobsJSON is a choice's logprobs: one entry per token of the answer (of the chunk).
type logprobsJSON struct {
	Content []logprobJSON `json:"content"`
}

// logprobJSON is one token's entry, in OpenAI's shape, which is also Ollama's (its api.Logprob)
// except that Ollama leaves out empty bytes and top_logprobs; newLogprobs fills the latter in.
type logprobJSON struct {
	Token       string           `json:"token"`
	Logprob     float64          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []topLogprobJSON `json:"top_logprobs"`
	// raw is the entry as an OpenAI-compatible upstream sent it, when it is relayed rather than
	// built (reasoning.go's think-tags rewrite): only Token is read from it.
	raw json.RawMessage
}

// topLogprobJSON is one alternative at a token's place.
type topLogprobJSON struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// newLogprobs is the logprobs of a choice whose tokens are entries: nil (null) for none, as an
// upstream that was not asked, or does not know the field, gives none. An entry without
// alternatives gets top_logprobs [], as OpenAI's always carry the member.
func newLogprobs(entries []logprobJSON) *logprobsJSON {
	if len(entries) == 0 {
		return nil
	}
	for i := range entries {
		if entries[i].TopLogprobs == nil {
			entries[i].TopLogprobs = []topLogprobJSON{}
		}
	}
	return &logprobsJSON{Content: entries}
}

// logprobsKey is the raw key logprobsAsked looks for before walking a body.
var logprobsKey = []byte(`"logprobs"`)

// logprobsAsked reads a chat body's logprobs (true) and top_logprobs (a count, 0 for none or
// null). The server has checked their kinds and that top_logprobs comes with logprobs true.
// A body without a raw "logprobs" is not walked.
func logprobsAsked(body []byte) (on bool, top int) {
	if !bytes.Contains(body, logprobsKey) {
		return false, 0
	}
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
		case "logprobs":
			on = string(v) == "true"
		case "top_logprobs":
			var n float64
			if json.Unmarshal(v, &n) == nil && n > 0 && n <= math.MaxInt32 {
				top = int(n)
			}
		}
	}
	if !on {
		top = 0
	}
	return on, top
}

// hayulaJSON is the gateway's own top-level member on SAIF answers.
type hayulaJSON struct {
	Specialist string   `json:"specialist,omitempty"`
	RoutedBy   string   `json:"routed_by,omitempty"`
	Confidence *float64 `json:"confidence,omitempty"`
}

// envelopeJSON is the envelope every answer the translating adapters build shares; only its
// choices differ (a whole message, a chunk's delta, a completion's text).
type envelopeJSON[C any] struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Choices []C         `json:"choices"`
	Usage   *usageJSON  `json:"usage,omitempty"`
	Hayula  *hayulaJSON `json:"hayula,omitempty"`
}

// completionJSON is a non-streaming chat.completion.
type completionJSON = envelopeJSON[choiceJSON]

// deltaJSON is a chunk's delta. Content is a pointer so that the first chunk can carry "" next
// to the role, as OpenAI's does.
type deltaJSON struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallJSON `json:"tool_calls,omitempty"`
}

type chunkChoiceJSON struct {
	Index        int           `json:"index"`
	Delta        deltaJSON     `json:"delta"`
	Logprobs     *logprobsJSON `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// chunkJSON is a chat.completion.chunk.
type chunkJSON = envelopeJSON[chunkChoiceJSON]

// chunker builds the chat.completion.chunk payloads of one streamed answer: the role goes on the
// first delta, reasoning is split out of the content when the target asks for it, and the held
// part of a <think> tag is flushed into the finishing chunk.
type chunker struct {
	id      string
	created int64
	model   string
	started bool
	think   *thinkSplitter // nil when reasoning is passthrough
	// logprobs are the upstream's for the tokens read since the last chunk, carried by the next
	// one (set by setLogprobs).
	logprobs *logprobsJSON
	// thinkLP keeps the content's logprobs out of all the tokens' (nil when reasoning is
	// passthrough).
	thinkLP *thinkLogprobs
	// hide drops the reasoning, the upstream's and what think splits out, instead of sending it
	// as reasoning_content (the reasoning object's exclude: TestOllamaReasoningSwitches).
	hide bool
	// out holds the chunks made since the stream last reset it (chunkjson.go).
	out chunkBuf
	// head is every chunk's envelope up to its choices (id, object, created and model, which
	// are the stream's), written by the first chunk and copied by the others: written anew,
	// escaped byte by byte, it was a third of what relaying an Ollama token cost.
	head []byte
}

// reset lets the chunks to come reuse the buffer of those made so far, which their stream has
// handed out: called before the stream reads its next upstream event.
func (c *chunker) reset() { c.out.reset() }

func newChunker(id string, created int64, model string, r core.Reasoning) *chunker {
	c := &chunker{id: id, created: created, model: model}
	if r != core.ReasoningPassthrough {
		sp := newThinkSplitter(r)
		c.think, c.thinkLP = &sp, newThinkLogprobs(r)
	}
	return c
}

// upstreamReasoned says the upstream sent reasoning of its own (Ollama's thinking): the content
// beside and after it is read as besideUpstreamReasoning says.
func (c *chunker) upstreamReasoned() {
	if c.think != nil {
		c.think.upstreamReasoned()
		c.thinkLP.sp.upstreamReasoned()
	}
}

// setLogprobs gives the next chunk the entries of the tokens read since the last one: those of
// the content, with think-tags (the entries of a held, undecided part wait, as its text does).
func (c *chunker) setLogprobs(entries []logprobJSON) {
	if c.thinkLP != nil {
		entries = c.thinkLP.take(entries)
	}
	c.logprobs = newLogprobs(entries)
}

// delta returns a chunk for text, reasoning and tool calls, or nil when there is nothing to say
// (the first chunk is always said, for its role). lit, when not nil, is the text instead, as
// the JSON string literal appendJSONString would write for it (plainToken), text then "": the
// chunk copies it; the think splitter, which reads the text, is given it unquoted.
func (c *chunker) delta(text string, lit []byte, reasoning string, calls []toolCallJSON, hy *hayulaJSON) []byte {
	if reasoning != "" {
		c.upstreamReasoned()
	}
	if lit != nil && c.think != nil {
		text, lit = literalText(lit), nil
	}
	if c.think != nil && text != "" {
		var r string
		text, r = c.think.split(text)
		reasoning += r
	}
	if c.hide {
		reasoning = ""
	}
	if c.started && text == "" && lit == nil && reasoning == "" && len(calls) == 0 && hy == nil && c.logprobs == nil {
		return nil
	}
	d := deltaParts{reasoning: reasoning, calls: calls}
	if !c.started || text != "" || lit != nil {
		d.content, d.contentJSON, d.hasContent = text, lit, true
	}
	if !c.started {
		d.role = "assistant"
		c.started = true
	}
	return c.marshal(d, nil, hy)
}

// finish returns the finishing chunk, carrying whatever a half-seen tag still held.
func (c *chunker) finish(reason string) []byte {
	var d deltaParts
	if c.think != nil {
		text, r := c.think.flush()
		if !c.hide {
			d.reasoning = r
		}
		if text != "" {
			d.content, d.hasContent = text, true
		}
		if held := c.thinkLP.flush(); len(held) > 0 {
			c.logprobs = newLogprobs(held)
		}
	}
	if !c.started {
		d.role = "assistant"
		c.started = true
	}
	return c.marshal(d, &reason, nil)
}

// held returns a chunk with what a half-seen tag still held, for a stream that ends without its
// finishing chunk; nil when nothing is held, before the first chunk, or when what was held comes
// to nothing: think-open's leading whitespace, dropped as whitespace inside the block is, would
// be an empty delta that tells the client nothing (TestThinkOpenBrokenOffHoldingWhitespace).
func (c *chunker) held() []byte {
	if c.think == nil || !c.started || !c.think.holding() {
		return nil
	}
	text, r := c.think.flush()
	held := c.thinkLP.flush()
	if c.hide {
		r = ""
	}
	if text == "" && r == "" && len(held) == 0 {
		return nil
	}
	d := deltaParts{reasoning: r}
	if text != "" {
		d.content, d.hasContent = text, true
	}
	if len(held) > 0 {
		c.logprobs = newLogprobs(held)
	}
	return c.marshal(d, nil, nil)
}

// usage returns the include_usage chunk: no choices, only usage.
func (c *chunker) usage(u *usageJSON) []byte {
	start := len(c.out.buf)
	c.out.buf = appendUsageChunk(c.out.buf, c.id, "chat.completion.chunk", c.created, c.model, u)
	return c.out.add(start)
}

// deltaParts are a chunk's delta members (deltaJSON's, content set when hasContent is), given
// by value so that a delta's text need not move to the heap to be pointed at.
type deltaParts struct {
	role, content string
	contentJSON   []byte // the content as its literal, written as it is (chunker.delta's lit)
	hasContent    bool
	reasoning     string
	calls         []toolCallJSON
}

// marshal writes the chunk of one choice with delta d, as mustJSON would write its chunkJSON.
func (c *chunker) marshal(d deltaParts, finish *string, hy *hayulaJSON) []byte {
	if c.head == nil {
		// Written once, in one array: the envelope's fixed bytes and created's digits are
		// under 100, and an id or a model's name rarely needs an escape.
		c.head = appendEnvelopeHead(make([]byte, 0, 100+len(c.id)+len(c.model)), c.id, "chat.completion.chunk", c.created, c.model)
		// The chunks of one upstream event, a token's or the finishing and usage chunks, fit
		// in one array, which every later event reuses (reset).
		c.out.buf = make([]byte, 0, 1024)
	}
	start := len(c.out.buf)
	c.out.buf = appendChunkChoices(append(c.out.buf, c.head...), d.role, d.content, d.contentJSON, d.hasContent,
		d.reasoning, d.calls, c.logprobs, finish, nil, hy)
	c.logprobs = nil
	return c.out.add(start)
}

// completionMessage is the assistant message of a whole answer, reasoning split out when the
// target asks for it. lit, when not nil, is the text instead, as chunker.delta's: the message
// carries it to appendCompletion, which copies it, unless the reasoning split reads the text.
func completionMessage(r core.Reasoning, text string, lit []byte, reasoning string, calls []toolCallJSON) messageJSON {
	if r = besideUpstreamReasoning(r, reasoning != ""); r != core.ReasoningPassthrough {
		if lit != nil {
			text, lit = literalText(lit), nil
		}
		var extra string
		text, extra = splitThink(text, r)
		reasoning += extra
	}
	m := messageJSON{Role: "assistant", ReasoningContent: reasoning, ToolCalls: calls}
	if lit != nil {
		m.contentJSON = lit
	} else if text != "" || len(calls) == 0 {
		m.Content = new(text) // a copy made here, not text moved to the heap for every call
	}
	return m
}

// literalText is the text of lit, a literal plainToken took (a valid JSON string).
func literalText(lit []byte) string {
	s, _ := jsonx.Unquote(lit)
	return s
}

// openAIFinish maps an upstream's stop reason to OpenAI's: length stays length, anything else
// that ended generation is stop.
func openAIFinish(reason string) string {
	switch reason {
	case "length", "max_tokens":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "content_filter":
		return "content_filter"
	}
	return "stop"
}
