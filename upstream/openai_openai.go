package upstream

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
	"github.com/hayula/gateway/internal/swar"
)

// maxBody caps a non-streaming answer.
const maxBody = 32 << 20

// maxEmbedBody caps an embeddings answer, which for a batch OpenAI's API takes is larger than any
// chat answer: 2048 inputs of a 3072-wide model, written as OpenAI writes its floats (about 20
// bytes a value), are some 130 MB, and 4096-wide models exist. Held to maxBody, such an answer
// failed as a server_error and counted toward the target's cooldown (TestEmbeddingsLargeBatch).
const maxEmbedBody = 256 << 20

// openaiOpenAI relays one OpenAI chat request to an OpenAI-compatible upstream. The client's
// bytes go through as they are, with only "model" replaced, so that fields the gateway does not
// know about (vendor extensions, new OpenAI parameters) reach the upstream untouched.
type openaiOpenAI struct {
	t       *core.Target
	c       *http.Client
	now     func() time.Time
	readers *readerPool // nil: each stream its own reader
	model   []byte      // t.Model quoted (jsonx.Quote), built with the Set
	id      string      // the gateway's request ID, sent as X-Request-Id; "" for none
}

func (a *openaiOpenAI) chat(ctx context.Context, req *core.Request) (*Response, error) {
	if p := &req.Params; !a.t.Tools && (len(p.ToolsRaw) > 0 || len(p.ToolChoice) > 0 || len(p.Functions) > 0 || len(p.FunctionCall) > 0) {
		// Eligibility gave a target without tools a request with tools only because it offers
		// none (core.Params.OffersTools: tool_choice "none", or an allowed_tools listing no
		// function): the tools do not go to an upstream that may refuse them (llama-server
		// without --jinja does). Nor does a tool_choice sent without tools, as openai-go sends
		// ToolChoice set alone: that llama-server answers any but "auto" with a 500
		// (TestToolChoiceWithoutToolsNotSentToATargetWithout). So for the legacy functions with
		// function_call "none" (TestFunctionsWithCallNoneNotSentToATargetWithout).
		req = withoutTools(req)
	}
	var sp splice
	ask := asksUsage(a.t, req)
	if ask {
		sp, ask = usageSplice(req.Body, req.NoStreamOptions, req.ChargesUsage)
	}
	body := a.outgoing(req, sp, ask)
	resp, err := post(ctx, a.c, a.t, req.Op.Path(), &body, accept(req.Stream, "text/event-stream"), a.id, a.now)
	if ask && refusedAsk(err) {
		ask = false
		body = a.outgoing(req, sp, ask)
		resp, err = post(ctx, a.c, a.t, req.Op.Path(), &body, accept(req.Stream, "text/event-stream"), a.id, a.now)
	}
	if err != nil {
		return nil, err
	}
	think := a.t.Reasoning != core.ReasoningPassthrough && req.Op == core.OpChat
	// After think's split, which may put reasoning there (see hideReasoningStream).
	hide := req.HideReasoning && req.Op == core.OpChat
	if req.Stream {
		r, err := a.stream(resp)
		if err == nil {
			r.UsageAsked = ask
			if think {
				r.Stream = newThinkStream(r.Stream, a.t.Reasoning)
			}
			if hide {
				r.Stream = &hideReasoningStream{Stream: r.Stream, target: a.t.Name}
			}
		}
		return r, err
	}
	r, err := a.body(ctx, resp, req)
	if err == nil && think {
		r.Body = splitThinkBody(r.Body, a.t.Reasoning)
	}
	if err == nil && hide {
		r.Body = withoutReasoningBody(r.Body)
		if r.Aborted && !carriesAnswer(r.Body) {
			// Aborted when it had only reasoned, which this client does not get: it has said
			// nothing, and the chain moves on (TestAbortWithOnlyHiddenReasoningMovesOn).
			r.Release()
			return nil, &core.ProtocolError{Target: a.t.Name, Err: &AbortedAnswerError{}}
		}
	}
	return r, err
}

// withoutTools is a copy of req whose body has no tools, tool_choice, parallel_tool_calls,
// functions or function_call. A function of its own, so that the copy of the request, which
// only a target without tools ever needs, is not a part of chat's frame on every request's
// stack, down to the wait for the answer.
//
//go:noinline
func withoutTools(req *core.Request) *core.Request {
	r := *req
	r.Body, r.ModelAt = jsonx.Delete(req.Body, "tools", "tool_choice", "parallel_tool_calls", "functions", "function_call"), [2]int{}
	return &r
}

func (a *openaiOpenAI) body(ctx context.Context, resp *http.Response, req *core.Request) (*Response, error) {
	op := req.Op
	upID := upstreamID(resp, a.t.APIKey) // before the body: once it is read, the connection's next answer may reuse the header
	limit := int64(maxBody)
	if op == core.OpEmbeddings {
		limit = maxEmbedBody
	}
	body, err := readAnswerUpTo(ctx, a.t, resp, limit)
	if err != nil {
		return nil, err
	}
	// A proxy's HTML error page with a 200 must fall through, not reach the client as a
	// completion. Every OpenAI answer is one JSON object, so its first and last bytes say enough;
	// a full validating scan of every answer (json.Valid) cost more than the check is worth, and
	// a body cut short is caught by its length.
	if !looksLikeObject(body) {
		return nil, &core.ProtocolError{Target: a.t.Name, Err: &NotJSONError{Body: redact(capBytes(body, maxErrorBody), a.t.APIKey)}}
	}
	// So must an error object sent with a 200 (some proxies and servers do): the client's SDK
	// would read it as a completion with no choices. Only a body with a raw "error" looks
	// further: in a completion's strings those quotes would be escaped.
	// A raw "error", looked for once: the key, or the finish below; and a raw "abort" in the
	// same pass (rawErrorAbort).
	errorKey, abortKey := rawErrorAbort(body)
	if msg, ok := errorEventKeyed(nil, body, errorKey); ok {
		return nil, &core.ProtocolError{Target: a.t.Name, Err: &ErrorAnswerError{Message: msg}}
	}
	// And so must an answer with nothing in it: openai-go's Choices[0] panics in the client's
	// code. The server refuses n < 1 and an empty embeddings input, so a 2xx without a choice
	// (or an embedding) never answers what was asked (TestNonStreamAnswerWithoutChoices).
	// An embeddings answer's data that is there and empty is the count checkEmbeddings judges
	// (0 embeddings for the inputs), as an ollama target's empty embeddings list is
	// (TestEmbeddingsOpenAIEmptyDataIsCountMismatch); missing, or no array, it is a broken answer.
	if key := itemsKey(op); !jsonx.NonEmptyArray(body, key) && !(op == core.OpEmbeddings && req.Inputs > 0 && emptyArray(body, key)) {
		return nil, &core.ProtocolError{Target: a.t.Name, Err: &EmptyAnswerError{Key: key}}
	}
	// And so must an answer the upstream's engine gave up before it said anything
	// (finish_reason "abort": see AbortedError), which relayed is an empty answer that says it
	// is one (TestAbortBeforeAnythingMovesOn). One with something in it goes as it came,
	// Aborted (TestAbortAfterContentIsCut). The raw search finds no `"abort"` in nearly every
	// answer, and reads nothing more of it.
	// And so must an answer whose choice failed with nothing in it (OpenRouter's finish_reason
	// "error", the failure on the choice), which relayed is an empty completion that looks like
	// a success. The raw search above first: `"error"` is in no answer that did not fail but in
	// its text.
	if op != core.OpEmbeddings && errorKey && saysReason(body, errorQuoted) && !carriesAnswer(body) {
		msg, quoted := choiceError(body)
		return nil, &core.ProtocolError{Target: a.t.Name, Err: &ChoiceFailedError{Message: msg, quoted: quoted}}
	}
	aborted := false
	if op != core.OpEmbeddings && abortKey && saysAbort(body) {
		if !carriesAnswer(body) {
			return nil, &core.ProtocolError{Target: a.t.Name, Err: &AbortedAnswerError{}}
		}
		aborted = true
	}
	// And so must embeddings as many as the inputs, or of another width than dimensions asked
	// for, which the client would take for what it asked (TestEmbeddingsOpenAICountMismatch,
	// TestEmbeddingsOpenAIDimensions), or embeddings a client cannot read, null or missing
	// (TestEmbeddingsOpenAIUnusableEmbedding). The walk counts data's elements, looks at each
	// embedding's first element, and reads each one's width only for a request with dimensions;
	// the answer is relayed as it came.
	if op == core.OpEmbeddings {
		if err := checkEmbeddings(a.t, body, req.Inputs, req.Dimensions, req.Base64); err != nil {
			return nil, err
		}
	}
	r := &responseFor(resp).Response
	r.Body, r.UpstreamID, r.Aborted = body, upID, aborted
	r.owner = ownerOf(resp, r) // the body as read: nothing else of it is kept
	return r, nil
}

// withModel is req.Body with the target's model in place of the client's: spliced where the
// server's decode found the model's value (req.ModelAt), or where jsonx finds it.
func (a *openaiOpenAI) withModel(req *core.Request) payload {
	b := req.Body
	if s, e := req.ModelAt[0], req.ModelAt[1]; 0 < s && s+2 <= e && e <= len(b) && b[s] == '"' && b[e-1] == '"' {
		return payload{b[:s:s], a.model[:len(a.model):len(a.model)], b[e:]}
	}
	var out payload
	out[0], out[1], out[2] = jsonx.SetQuotedSplit(b, "model", a.t.Model, a.model)
	return out
}

// looksLikeObject reports whether b, without surrounding whitespace, starts with '{' and ends
// with '}'.
func looksLikeObject(b []byte) bool {
	b = trimSpace(b)
	return len(b) >= 2 && b[0] == '{' && b[len(b)-1] == '}'
}

// ErrorAnswerError is a 2xx non-streaming answer whose top-level "error" is not null.
type ErrorAnswerError struct {
	Message string // the upstream's
}

func (e *ErrorAnswerError) Error() string { return "a 2xx answer that is an error: " + e.Message }

// Unquoted is the error without the upstream's message (core.Quoting).
func (e *ErrorAnswerError) Unquoted() string {
	return fmt.Sprintf("a 2xx answer that is an error (message of %d bytes, not logged)", len(e.Message))
}

// UpstreamMessage is what the upstream said, for errmap, which classifies an overflow by it.
func (e *ErrorAnswerError) UpstreamMessage() string { return e.Message }

// AbortedAnswerError is a 2xx non-streaming answer whose finish_reason is "abort" (vLLM's and
// SGLang's for a request their engine gave up) with nothing in it: no text, reasoning, refusal or
// call in any choice.
type AbortedAnswerError struct{}

func (e *AbortedAnswerError) Error() string {
	return `the upstream aborted the request (finish_reason "abort") before any of its answer`
}

// AbortedError is how a stream ends whose upstream said finish_reason "abort" after the stream
// began: vLLM and SGLang end so a request their engine gave up (a preemption, an engine error, a
// shutdown, a scale-down), with a 200, the chunk that says it and [DONE], and no error event
// before it (vLLM issue 57082). The stream is relayed as it came, the abort chunk too, which is
// how the client can tell; but the answer is not whole, and the relay logs and counts it so
// (stream=aborted). It Is io.EOF: whatever reads a stream to its end ([DONE]) takes it for that
// end, and only what asks for an AbortedError tells the two apart. A stream whose first event is
// the abort, with nothing in it, fails instead (a *core.StreamError), before anything went to the
// client: the chain moves on (TestAbortBeforeAnythingMovesOn).
type AbortedError struct {
	Target string
}

func (e *AbortedError) Error() string {
	return e.Target + `: stream: the upstream aborted the request (finish_reason "abort")`
}

// Is reports io.EOF as the error: the stream ended as the upstream ends one.
func (e *AbortedError) Is(target error) bool { return target == io.EOF }

// FinishAbort is the finish_reason vLLM and SGLang end an answer their engine gave up with.
const FinishAbort = "abort"

// abortQuoted is FinishAbort as a JSON string, raw: a finish_reason that says it, or (rarely) a
// key or value of another member.
var abortQuoted = []byte(`"` + FinishAbort + `"`)

// saysAbort reports whether a finish_reason of data, an answer or a chunk, is "abort". Asked only
// of one that holds a raw "abort" (a whole answer) or whose finish_reason says a finish (a
// chunk): once a stream.
func saysAbort(data []byte) bool { return saysReason(data, abortQuoted) }

// saysReason reports whether a finish_reason of data is the JSON string quoted.
func saysReason(data, quoted []byte) bool {
	const finishKey = `"finish_reason"`
	for at := 0; ; {
		i := bytes.Index(data[at:], []byte(finishKey))
		if i < 0 {
			return false
		}
		at += i + len(finishKey)
		if j := reasonAt(data[at:]); j >= 0 && bytes.HasPrefix(data[at+j:], quoted) {
			return true
		}
	}
}

// FinishError is the finish_reason OpenRouter ends a choice with when its provider failed while
// generating, after its 200: the choice carries the failure as an "error" object of its own
// (its response schema's choices[].error: {"code":502,"message":"Provider returned error"}),
// beside, in a stream, or instead of a top-level "error".
const FinishError = "error"

// errorQuoted is FinishError as a JSON string, raw; also the "error" key itself, which every
// answer that says the finish carries, so that one raw search finds both.
var errorQuoted = []byte(`"` + FinishError + `"`)

// rawErrorAbort reports whether body, a whole answer, holds a raw `"error"` (errorQuoted) and a
// raw `"abort"` (abortQuoted), as bytes.Contains would say of each. Not by scanKeys, as an
// event's is: an answer's text is long and full of 'r's, each a stop for scanKeys.
//
// bytes.Contains looks from quote to quote with bytes.IndexByte until the quotes of an answer's
// head make it give up, and then tests every position of the rest, its text included: two
// searches cost 170 ns on the bench's answer (150 bytes of text) and 1.3 µs on one of 4 KB of
// prose. An answer is searched once instead, a word at a time where its quotes are dense and by
// IndexByte across its text where they are not (the words' quotes are six bytes apart): 66 ns on
// the bench's answer, 110 on the 4 KB of prose, 140 (against 195) on 300 bytes of escaped JSON,
// and level with the two searches on 4 KB of it, whose quotes are everywhere
// (BenchmarkRawErrorAbort). The one pass is the quicker on short answers too, though it runs
// more instructions than bytealg.Index (about 1,600 against 1,400 on the bench's answer).
func rawErrorAbort(body []byte) (errorKey, abortKey bool) {
	check := func(j int) { // body[j] and body[j+6] are quotes
		switch string(body[j+1 : j+6]) {
		case FinishError:
			errorKey = true
		case FinishAbort:
			abortKey = true
		}
	}
	i, quiet := 0, 0
	for i <= len(body)-14 {
		q := swar.Is(binary.LittleEndian.Uint64(body[i:]), '"')
		if q == 0 {
			// Three words without a quote: text, where IndexByte's vector search goes faster.
			if quiet++; quiet < 3 {
				i += 8
				continue
			}
			quiet = 0
			k := bytes.IndexByte(body[i+8:], '"')
			if k < 0 {
				return errorKey, abortKey
			}
			i += 8 + k
			continue
		}
		quiet = 0
		// A quote at j in this word whose pair is at j+6 in the word six bytes on. Is may mark
		// a byte just above a true quote that is none ('#'): at j, that is checked; at j+6, the
		// true quote is at j+5, where check wants a letter.
		for p := q & swar.Is(binary.LittleEndian.Uint64(body[i+6:]), '"'); p != 0; p &= p - 1 {
			if j := i + bits.TrailingZeros64(p)>>3; body[j] == '"' {
				check(j)
			}
		}
		i += 8
	}
	for ; i < len(body)-6; i++ {
		if body[i] == '"' && body[i+6] == '"' {
			check(i)
		}
	}
	return errorKey, abortKey
}

// choiceError is the message of the failure a choice of data reports (finish_reason "error"):
// its own error's message, or, when it has none, words saying the finish. Quoted is how many of
// the message's last bytes are the upstream's (core.StreamError.Quoted).
func choiceError(data []byte) (msg string, quoted int) {
	var v struct {
		Choices []struct {
			Error json.RawMessage `json:"error"`
		} `json:"choices"`
	}
	_ = json.Unmarshal(data, &v)
	for _, c := range v.Choices {
		if !says(c.Error) {
			continue
		}
		if m, _, _, _ := errorFields(append(append([]byte(`{"error":`), c.Error...), '}')); m != "" {
			return m, len(m)
		}
	}
	return `the upstream ended the answer with finish_reason "error"`, 0
}

// ChoiceFailedError is a 2xx non-streaming answer whose choice says it failed (finish_reason
// "error", see FinishError) with nothing in it: no answer, which falls through as a 5xx would
// (TestOpenRouterChoiceErrorMovesOn). One with something in it goes as it came.
type ChoiceFailedError struct {
	Message string
	quoted  int
}

func (e *ChoiceFailedError) Error() string {
	return `a 2xx answer whose choice failed (finish_reason "error"): ` + e.Message
}

// Unquoted is the error without the upstream's message (core.Quoting).
func (e *ChoiceFailedError) Unquoted() string {
	if e.quoted == 0 {
		return e.Error()
	}
	return fmt.Sprintf(`a 2xx answer whose choice failed (finish_reason "error"; message of %d bytes, not logged)`, e.quoted)
}

// UpstreamMessage is what the upstream said (errmap's upstreamWords).
func (e *ChoiceFailedError) UpstreamMessage() string { return e.Message }

// answerParts is what a choice's delta (a chunk's) or message (a whole answer's) may carry.
type answerParts struct {
	Content          json.RawMessage `json:"content"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	Refusal          json.RawMessage `json:"refusal"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
	FunctionCall     json.RawMessage `json:"function_call"`
}

// carriesAnswer reports whether data, a chat or completions answer or chunk, carries anything of
// an answer in a choice: text (a completion's too), reasoning, a refusal or a call. One that
// cannot be read is taken to carry something: it goes on as it came.
func carriesAnswer(data []byte) bool {
	var v struct {
		Choices []struct {
			Delta   *answerParts    `json:"delta"`
			Message *answerParts    `json:"message"`
			Text    json.RawMessage `json:"text"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &v) != nil {
		return true
	}
	for _, c := range v.Choices {
		if says(c.Text) {
			return true
		}
		for _, p := range [...]*answerParts{c.Delta, c.Message} {
			if p != nil && (says(p.Content) || says(p.ReasoningContent) || says(p.Reasoning) || says(p.Refusal) ||
				says(p.ToolCalls) || says(p.FunctionCall)) {
				return true
			}
		}
	}
	return false
}

// says reports whether v, a raw JSON value, has something in it: it is neither missing, null,
// nor an empty string, array or object.
func says(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	switch string(v) {
	case "", "null", `""`, "[]", "{}":
		return false
	}
	return true
}

// EmptyAnswerError is a 2xx non-streaming answer whose top-level array of results (Key:
// "choices", or "data" for embeddings) is empty, missing, or not an array.
type EmptyAnswerError struct {
	Key string
}

func (e *EmptyAnswerError) Error() string {
	return "a 2xx answer with no " + e.Key + ": nothing for the client to read"
}

// emptyArray reports whether body's top-level member key is an array with nothing in it.
func emptyArray(body []byte, key string) bool {
	v, ok := jsonx.Last(body, key)
	if !ok {
		return false
	}
	v = bytes.TrimSpace(v)
	return len(v) >= 2 && v[0] == '[' && len(bytes.TrimSpace(v[1:len(v)-1])) == 0 && v[len(v)-1] == ']'
}

// itemsKey is the top-level member an answer to op carries its results in.
func itemsKey(op core.Op) string {
	if op == core.OpEmbeddings {
		return "data"
	}
	return "choices"
}

// NotJSONError is a 2xx non-streaming answer that is not JSON.
type NotJSONError struct {
	Body []byte // capped at 64 KiB
}

func (e *NotJSONError) Error() string {
	snippet := e.Body
	if len(snippet) > 200 {
		snippet = snippet[:200]
	}
	if snippet = bytes.TrimSpace(snippet); len(snippet) == 0 {
		return "response is not JSON: it is empty" // a 200 or 204 with no body (TestNotJSONErrorText)
	}
	return fmt.Sprintf("response is not JSON: %s", snippet)
}

// Unquoted is the error without the body's bytes, which may be the answer itself (core.Quoting).
func (e *NotJSONError) Unquoted() string {
	return fmt.Sprintf("response is not JSON (%d bytes, not logged)", len(e.Body))
}

func capBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func (a *openaiOpenAI) stream(resp *http.Response) (*Response, error) {
	ct := resp.Header.Get("Content-Type")
	if !isEventStream(ct) {
		return nil, notEventStream(a.t, resp, ct)
	}
	r := responseFor(resp)
	r.s.init(a.t.Name, resp.Body, a.readers)
	r.Stream, r.UpstreamID = &r.s, upstreamID(resp, a.t.APIKey)
	return &r.Response, nil
}

// streamResponse is a streamed answer and its stream in one allocation (a whole answer uses
// only the Response).
type streamResponse struct {
	Response
	s openaiStream
}

// openaiStream relays an OpenAI SSE stream. It decides how the stream ended: [DONE] is the end;
// an error event or a broken connection is a *core.StreamError; a body that simply ends is a
// clean end only if some chunk arrived and a finish_reason was seen (the usage chunk that
// include_usage adds after the finishing chunk carries none, so the flag is sticky).
type openaiStream struct {
	target    string
	body      io.ReadCloser
	sse       *sseReader
	events    int
	sawFinish bool
	aborted   bool // an event said finish_reason "abort": the stream's end is an AbortedError
	// err is the terminal result, returned again by every later Next; set with the event that
	// Next returns when that event ends the stream (finish_reason "error" with content), so that
	// the next Next fails without reading.
	err  error
	pool *readerPool // where sse goes back on Close; nil for none
}

// newOpenAIStream reads body through a reader borrowed from readers (nil: a new one).
func newOpenAIStream(target string, body io.ReadCloser, readers *readerPool) *openaiStream {
	s := new(openaiStream)
	s.init(target, body, readers)
	return s
}

func (s *openaiStream) init(target string, body io.ReadCloser, readers *readerPool) {
	*s = openaiStream{target: target, body: body, sse: readers.sse(body), pool: readers}
}

var doneMarker = []byte("[DONE]")

// errStreamClosed is Next after Close.
var errStreamClosed = errors.New("upstream: stream closed")

func (s *openaiStream) Next() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	for {
		ev, err := s.sse.next()
		if err != nil {
			s.err = s.endError(err)
			return nil, s.err
		}
		data := trimSpace(ev.data)
		if len(data) == 0 {
			continue
		}
		if bytes.Equal(data, doneMarker) {
			s.err = s.end()
			return nil, s.err
		}
		// The stream ended inside this event's last line. Its data may be cut short, unless it
		// is a whole JSON object, which nothing can follow: then the upstream closed right after
		// its last event's data, and the event is read as if its blank line had come: an error
		// event gives its message, and a stream finished by then (a usage chunk after the
		// finishing one, or the finishing chunk itself) is whole, as one whose body ends after
		// its blank line is (TestSSEFinishedStreamLastEventWithoutLineEnd). Unfinished, it broke
		// off all the same, and says so before the event goes out: when it is the first, the
		// chain moves on. Valid is asked once a stream, of its last event.
		if ev.cut && !jsonx.Valid(data) {
			s.err = &core.StreamError{Target: s.target, Message: "upstream closed the stream inside an event"}
			return nil, s.err
		}
		errorKey, finish, nullReason := scanKeys(data)
		if msg, ok := errorEventKeyed(ev.name, data, errorKey); ok {
			s.err = &core.StreamError{Target: s.target, Message: msg, Quoted: len(msg)}
			return nil, s.err
		}
		if ev.cut && !s.sawFinish && !finish {
			s.err = &core.StreamError{Target: s.target, Message: "upstream closed the stream inside an event"}
			return nil, s.err
		}
		if errorKey {
			// A top-level "error" that says none (null, "") leaves a chunk, but openai-go ends
			// the client's stream at any event with a top-level "error", whatever its value
			// (its ssestream asks gjson whether the member exists), so the member goes
			// (TestSDKReadsChunksWithNullError). Delete returns data itself when the raw
			// "error" is not a top-level key.
			data = jsonx.Delete(data, "error")
		}
		// Relayed, a broken event fails the client's SDK on a parse error instead of a stream
		// error event; the first and last bytes are the same cheap check a whole answer gets.
		if !looksLikeObject(data) {
			s.err = &core.StreamError{Target: s.target, Message: "upstream sent an event that is not a JSON object"}
			return nil, s.err
		}
		// SSE joins multi-line data with newlines. Outside strings they are JSON whitespace (a
		// raw newline cannot occur inside one), so spaces keep the chunk the same JSON and let
		// the caller write it back as a single "data:" line. (sseReader ends lines at a bare CR
		// too, as a client's parser does, so none is left inside one; CR stays in the check so
		// that no reader change can let one through to split the client's event.)
		// Two byte searches, not ContainsAny, which reads the event a byte at a time: it was
		// 2,300 of the 9,000 instructions an event cost (bench --count); none for the event
		// nearly every upstream sends, one data line that the reader took whole.
		if !ev.oneLine && (bytes.IndexByte(data, '\n') >= 0 || bytes.IndexByte(data, '\r') >= 0) {
			for i, c := range data {
				if c == '\n' || c == '\r' {
					data[i] = ' '
				}
			}
		}
		if nullReason {
			nullReasons(data)
		}
		if finish && saysAbort(data) {
			// The engine gave the request up. Before anything went out, with nothing in it, the
			// stream failed (see AbortedError).
			if s.events == 0 && !carriesAnswer(data) {
				s.err = &core.StreamError{Target: s.target, Message: AbortedEarlyMessage}
				return nil, s.err
			}
			s.aborted = true
		}
		if finish && errorKey && saysReason(data, errorQuoted) {
			// OpenRouter's provider failed mid-answer, the failure on the choice and no top-level
			// error (see FinishError). Relayed with its [DONE] after it, the client's stream
			// ended as if whole (TestOpenRouterChoiceErrorInStream): it is a stream that broke
			// off, and the event's content, if any, goes out first.
			msg, quoted := choiceError(data)
			s.err = &core.StreamError{Target: s.target, Message: msg, Quoted: quoted}
			if !carriesAnswer(data) {
				return nil, s.err
			}
			// The event goes out and the next Next fails, on s.err: a field of its own, in the
			// stream every answer's Response holds, took that to the next size class (16 bytes
			// a request, BenchmarkChat1KB's upstream-set).
		}
		s.events++
		if finish {
			s.sawFinish = true
		}
		return data, nil
	}
}

// Framed is the event Next returned last as the upstream sent it, "data: " and the blank line
// around it, when Next read it so: a relay that would write those same bytes around the event
// writes them at once, without putting them together. It may frame another event's bytes (Next
// changed the event in hand: an "error" member taken out, spaces trimmed), and so it is used only
// when it frames the event's own bytes, byte for byte and in place (upstream.FramedEvent).
func (s *openaiStream) Framed() []byte {
	if s.sse == nil {
		return nil // closed
	}
	return s.sse.frame
}

func (s *openaiStream) endError(err error) error {
	switch {
	case errors.Is(err, io.EOF):
		if s.events > 0 && s.sawFinish {
			return s.end()
		}
		return &core.StreamError{Target: s.target, Message: "upstream closed the stream early"}
	case errors.Is(err, errEventTooLarge):
		return &core.StreamError{Target: s.target, Message: err.Error(), Err: err}
	}
	// The body read fails with the context's error when the caller gave up; keeping it wrapped
	// lets errmap see a client that went away rather than an upstream that broke.
	return &core.StreamError{Target: s.target, Message: "upstream broke off: " + err.Error(), Err: err}
}

// end is the stream's clean end: io.EOF, or an AbortedError for one an event said was aborted.
func (s *openaiStream) end() error {
	if s.aborted {
		return &AbortedError{Target: s.target}
	}
	return io.EOF
}

// Buffered reports whether Next will return without waiting on the upstream.
func (s *openaiStream) Buffered() bool {
	return s.err != nil || s.sse.buffered()
}

// Close releases the connection. It is safe to call more than once.
func (s *openaiStream) Close() error {
	if s.err == nil {
		s.err = errStreamClosed
	}
	// Next answers s.err from now on and never reads again, so the reader can be lent on
	// (once: a second Close finds none).
	defer s.pool.put(s.sse)
	s.sse = nil
	if errors.Is(s.err, io.EOF) {
		return closeDrained(s.body)
	}
	return s.body.Close()
}

// errorEvent recognises an error sent inside the stream: an "error" event, or a data payload
// whose top-level "error" is not null (vLLM and llama-server send {"error":{…}} mid-stream). It
// returns the upstream's message.
func errorEvent(name, data []byte) (string, bool) {
	return errorEventKeyed(name, data, hasErrorKey(data))
}

// errorEventKeyed is errorEvent for data whose raw `"error"` was looked for already (errorKey:
// found; see scanKeys).
func errorEventKeyed(name, data []byte, errorKey bool) (string, bool) {
	isErrorName := string(name) == "error"
	if !isErrorName && (!errorKey || !jsonx.Has(data, "error")) {
		return "", false
	}
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(data, &env)
	if !isErrorName && text(env.Error) == "" {
		return "", false
	}
	msg, _, _, _ := errorFields(data)
	if msg == "" {
		msg = text(env.Error)
	}
	if msg == "" && isErrorName {
		msg = string(data)
	}
	if msg == "" {
		msg = "upstream sent an error event"
	}
	return msg, true
}

// hasErrorKey reports whether data, an event, holds a raw `"error"`, the quick check before
// errorEvent decodes. (A whole answer's is bytes.Contains: see openaiOpenAI.body.)
func hasErrorKey(data []byte) bool {
	errorKey, _, _ := scanKeys(data)
	return errorKey
}

// scanKeys looks for both in one pass over a stream's event: errorKey, a raw `"error"`
// (hasErrorKey), and finish, a finish_reason that says one: a `"finish_reason"` followed by a
// colon and a string that SaysFinish, read raw (reasonValue), the keys taken one after the other,
// as a search from the end of the last would find them; nullReason, a finish_reason before the
// first that says one is the string "null" (KoboldCpp's; see nullReasons). A raw
// `"finish_reason"` can only be a key or a whole string value (inside other strings its quotes
// would be escaped), so that is enough, without decoding. Both hold an 'r' (the third byte of
// one, the ninth of the other) and every other byte of theirs is common in a chunk, a quote above
// all, which opens every key and string: a search that starts at their first byte, or at '_',
// stops at every field or at "system_fingerprint", and two of them were 1,250 of the 2,300
// instructions an event cost (bench --count). Each 'r' of the event is found by IndexByte, and
// the byte before it tells which key it may be in: 'e' for "error", '_' for "finish_reason",
// and most 'r's are in neither (the bench's chunk: 755 instructions → 642, BenchmarkScanKeys).
// A word-at-a-time search for the 'r's cost more: 19 instructions a word where IndexByte's
// vector loop passes over the bytes between two 'r's at a fraction of that.
// TestKeySearchesAgree holds the answers to plain searches for either key.
func scanKeys(data []byte) (errorKey, finish, nullReason bool) {
	const errKey, finishKey = `"error"`, `"finish_reason"`
	from := 0 // where the last "finish_reason" found ends: the next is looked for after it
	for at := 0; ; {
		i := bytes.IndexByte(data[at:], 'r')
		if i < 0 {
			break
		}
		p := at + i
		if at = p + 1; p < 2 {
			continue
		}
		switch data[p-1] {
		case 'e':
			if !errorKey && p+5 <= len(data) && string(data[p-2:p+5]) == errKey {
				errorKey = true
			}
		case '_':
			if !finish && p-8 >= from && p+7 <= len(data) && string(data[p-8:p+7]) == finishKey {
				from = p + 7
				var null bool
				finish, null = reasonValue(data[from:])
				nullReason = nullReason || null
			}
		}
	}
	return errorKey, finish, nullReason
}

// SaysFinish reports whether a finish_reason, read as a string (JSON null as ""), says the
// answer ended: the one rule every check of a finish keeps, the relay's raw one (reasonValue),
// the think-tags splitter's and the Responses bridge's. Neither "" (SGLang 0.4.3 and others send
// it where OpenAI has null, on every chunk: TestSSEEmptyFinishReasonIsNoFinish) nor the string
// "null" (KoboldCpp, on every chunk before the last: TestSSENullStringFinishReasonIsNoFinish)
// says one: a stream of such chunks that ends without [DONE] broke off.
func SaysFinish(reason string) bool { return reason != "" && reason != nullString }

// nullString is KoboldCpp's finish_reason before its last chunk: null written as a string.
const nullString = "null"

// reasonAt is where the value after a key begins in data, which follows the key: past spaces, a
// colon and spaces; -1 when there is no colon.
func reasonAt(data []byte) int {
	j := 0
	for j < len(data) && isSpace(data[j]) {
		j++
	}
	if j >= len(data) || data[j] != ':' {
		return -1
	}
	for j++; j < len(data) && isSpace(data[j]); j++ {
	}
	return j
}

// reasonValue reads the value after a finish_reason key as SaysFinish does, raw: finish, a string
// that is neither empty nor "null"; null, the string "null". (An escaped spelling of "null" is
// taken for a finish: no server sends one.)
func reasonValue(data []byte) (finish, null bool) {
	if len(data) > 1 && data[0] == ':' && data[1] == 'n' {
		return false, false // ":null", every chunk's but the last in compact JSON: no call to reasonAt
	}
	j := reasonAt(data)
	if j < 0 || j+1 >= len(data) || data[j] != '"' || data[j+1] == '"' {
		return false, false
	}
	if len(data)-j >= len(nullString)+2 && string(data[j+1:j+len(nullString)+2]) == nullString+`"` {
		return false, true
	}
	return true, false
}

// nullReasons writes JSON null, and two spaces after it, in place of each finish_reason of data
// that is the string "null": relayed as KoboldCpp sent it, openai-go (whose finish_reason is a
// string) reads the reason "null", and a client that stops at the first chunk with a reason stops
// at the first token (TestSSENullStringFinishReasonIsNoFinish). The length stays, so the event is
// rewritten where it lies; only an event that has such a reason (scanKeys) is searched again.
func nullReasons(data []byte) {
	const finishKey = `"finish_reason"`
	for at := 0; ; {
		i := bytes.Index(data[at:], []byte(finishKey))
		if i < 0 {
			return
		}
		at += i + len(finishKey)
		if _, null := reasonValue(data[at:]); null {
			j := at + reasonAt(data[at:])
			copy(data[j:], `null  `)
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
