package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/echo"
	"github.com/hayula/gateway/internal/jsonx"
)

// Hayula request options. Each is read from a header and, under the same name, from a top-level
// body field, which is stripped before the body goes upstream.
const (
	optFallback = "x-fallback-on"
	optHint     = "x-route-hint"
	optPrivacy  = "x-hayula-privacy"
)

// stripOptions is body without its Hayula options, in every spelling encoding/json reads as one:
// it matches member names case-insensitively (Unicode simple folding) and after unescaping, so
// "X-Hayula-Privacy" and "x-hayula-priv\u0061cy" are the option as much as "x-hayula-privacy"
// is, and must not reach the upstream either (TestCaseFoldedHayulaFieldsStripped). With
// alsoModel it also drops the spellings of "model" other than "model" itself ("Model"): the
// gateway read the model from one, and the upstream is sent the target's model as "model", so
// such a member would reach it beside that one (TestModelSpellingsStripped). body is the
// original when it has none. opts are the values of every option member met, in any spelling.
func stripOptions(body []byte, alsoModel bool) (out []byte, opts bodyOptions) {
	var found []string // the spellings met: nearly always none
	it := jsonx.Object(body, false)
	for {
		q, v, ok := it.Next()
		if !ok {
			break
		}
		name, plain := jsonx.PlainKey(q)
		var s string
		switch {
		case plain:
			s = string(name)
		case json.Unmarshal(q, &s) != nil:
			continue
		}
		if !isOption([]byte(s)) && !(alsoModel && s != "model" && strings.EqualFold(s, "model")) {
			continue
		}
		found = append(found, s)
		var p string
		switch {
		case strings.EqualFold(s, optPrivacy) && json.Unmarshal(v, &p) == nil:
			opts.privacy = append(opts.privacy, p)
		case strings.EqualFold(s, optFallback):
			opts.fallback = append(opts.fallback, v)
		case strings.EqualFold(s, optHint) && json.Unmarshal(v, &p) == nil:
			opts.hint = append(opts.hint, p)
		}
	}
	if len(found) == 0 {
		return body, opts
	}
	return jsonx.Delete(body, found...), opts
}

// bodyOptions are the values of every Hayula option member of a body, in any spelling
// (stripOptions): a decoder keeps only the last of several, and readOptions counts them all, so
// that a later "default" or true cannot undo an earlier "strict" or false, and that two route
// hints that differ are refused.
type bodyOptions struct {
	privacy  []string
	fallback []json.RawMessage
	hint     []string
}

// isOption reports whether encoding/json would read the member name as a Hayula option.
func isOption(name []byte) bool {
	return bytes.EqualFold(name, []byte(optFallback)) || bytes.EqualFold(name, []byte(optHint)) ||
		bytes.EqualFold(name, []byte(optPrivacy))
}

// The same options as header names in canonical form, for headerValue.
const (
	hdrOptFallback = "X-Fallback-On"
	hdrOptHint     = "X-Route-Hint"
	hdrOptPrivacy  = "X-Hayula-Privacy"
)

// wireRequest is the part of a chat request the gateway reads, in the shape encoding/json decodes
// it into. Everything else passes through in the raw body untouched. The gateway works from a
// wireView of it.
type wireRequest struct {
	Model         *string         `json:"model"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	Messages      []core.Message  `json:"messages"`
	MaxTokens     *int            `json:"max_tokens"`
	MaxCompletion *int            `json:"max_completion_tokens"`
	Fallback      json.RawMessage `json:"x-fallback-on"`
	Hint          *string         `json:"x-route-hint"`
	Privacy       *string         `json:"x-hayula-privacy"`
	core.Params
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireView is a wireRequest with its optional scalars held as values beside a presence flag:
// a pointer field was an allocation on every request that sent the field. fastWire fills it,
// and a body fastWire declines is decoded by encoding/json into a wireRequest and converted.
type wireView struct {
	Model         opt[string]
	Stream        bool
	StreamOptions *streamOptions
	Messages      []core.Message
	MaxTokens     opt[int]
	MaxCompletion opt[int]
	Fallback      json.RawMessage
	Hint          opt[string]
	Privacy       opt[string]
	Temperature   opt[float64]
	TopP          opt[float64]
	Seed          opt[int64]
	FreqPenalty   opt[float64]
	PresPenalty   opt[float64]
	// Raw are the raw parameters; its pointer fields are always nil (see params).
	Raw core.Params
	// modelAt is where the "model" value lies in the body when fastWire met exactly one
	// "model" member (core.Request.ModelAt); models counts the members it met.
	modelAt [2]int
	// optionsMember: fastWire met a "stream_options" member (core.Request.NoStreamOptions).
	optionsMember bool
	models        int
	// bad is the first field passed upstream whose JSON kind OpenAI would refuse (passKinds).
	bad badField
	// topLogprobs and logprobs are set when the body has a top_logprobs neither null nor 0, and
	// logprobs true (checkPassed).
	topLogprobs, logprobs bool
	// openaiOnly is core.Request.OpenAIOnly (checkPassed).
	openaiOnly string
	// choices is n when the body asks for more than one choice (checkPassed).
	choices int
	// nativeFormat and hideReasoning are core.Request's NativeFormat and HideReasoning
	// (noteAsked).
	nativeFormat, hideReasoning bool
	// known is set when fastWire walked the body and met no member it does not decode
	// (core.Request.KnownMembers); a view decoded otherwise does not know.
	known bool
	// streamOn and streamNulled follow the "stream" members in order (noteStream).
	streamOn, streamNulled bool
	// options is set when a Hayula option's key is in the body, even with a null value that
	// asks for nothing: the key is stripped all the same. viewOf sets it, as encoding/json does
	// not tell a null from an absent key (jsonx.Delete then finds out).
	options bool
}

// opt is what a *T field holds, without the allocation behind the pointer: Set false is nil.
type opt[T any] struct {
	V   T
	Set bool
}

func optOf[T any](p *T) opt[T] {
	if p == nil {
		return opt[T]{}
	}
	return opt[T]{V: *p, Set: true}
}

// viewOf converts what encoding/json decoded.
func viewOf(w *wireRequest) wireView {
	v := wireView{
		Model: optOf(w.Model), Stream: w.Stream, StreamOptions: w.StreamOptions, Messages: w.Messages,
		MaxTokens: optOf(w.MaxTokens), MaxCompletion: optOf(w.MaxCompletion),
		Fallback: w.Fallback, Hint: optOf(w.Hint), Privacy: optOf(w.Privacy),
		Temperature: optOf(w.Temperature), TopP: optOf(w.TopP), Seed: optOf(w.Seed),
		FreqPenalty: optOf(w.FrequencyPenalty), PresPenalty: optOf(w.PresencePenalty), Raw: w.Params,
		options: true,
	}
	v.Raw.Temperature, v.Raw.TopP, v.Raw.Seed = nil, nil, nil
	v.Raw.FrequencyPenalty, v.Raw.PresencePenalty = nil, nil
	return v
}

// params are the request's parameters, their pointers into w: w lives as long as the request
// does (serveOp keeps both in one reqState).
func (w *wireView) params() core.Params {
	p := w.Raw
	if w.Temperature.Set {
		p.Temperature = &w.Temperature.V
	}
	if w.TopP.Set {
		p.TopP = &w.TopP.V
	}
	if w.Seed.Set {
		p.Seed = &w.Seed.V
	}
	if w.FreqPenalty.Set {
		p.FrequencyPenalty = &w.FreqPenalty.V
	}
	if w.PresPenalty.Set {
		p.PresencePenalty = &w.PresPenalty.V
	}
	return p
}

// inPlacer is a body the server holds whole already (internal/h1's, when the body came with
// its head): InPlace gives its bytes where they are, valid until the handler returns.
type inPlacer interface {
	InPlace() ([]byte, bool)
}

// readBody reads the whole body within the limit: where the server holds all of it already,
// the bytes where they are (inPlace: not a buffer to keep, and nothing of it kept past the
// request, as of buf); else into buf's array when it is large enough (serveOp lends one from
// the server's pool), and into a new one otherwise. A body read in place is not copied, and its
// request touches no buffer of its own: with many requests in flight, the buffer a pooled
// state lends was last written requests ago, and is out of the CPU's cache.
func readBody(r *http.Request, limit int64, buf []byte) (body []byte, inPlace bool, e *apiError) {
	if ce := field(r, "Content-Encoding"); ce != nil && !identity(ce) {
		return nil, false, unsupportedEncoding(ce)
	}
	if r.ContentLength > limit {
		return nil, false, tooLarge(limit)
	}
	if ip, ok := r.Body.(inPlacer); ok && r.ContentLength > 0 {
		if p, ok := ip.InPlace(); ok {
			if bytes.HasPrefix(p, utf8BOM) {
				return nil, false, byteOrderMark()
			}
			return p, true, nil
		}
	}
	buf, e = readInto(r, limit, buf)
	return buf, false, e
}

// readInto is readBody's read into buf.
func readInto(r *http.Request, limit int64, buf []byte) ([]byte, *apiError) {
	// One byte to spare, so that a body that fits is read to its EOF without growing. A stated
	// length above maxPrealloc is not allocated before its bytes come: a client may state
	// max_body_bytes and send a few (it has the body timeout for the rest), and each such request
	// held that much (TestReadBodyAllocatesAsBytesCome). The buffer doubles toward the length.
	want := 4096
	if r.ContentLength > 0 {
		want = int(r.ContentLength) + 1
	}
	if cap(buf) < min(want, maxPrealloc) {
		buf = make([]byte, 0, min(want, maxPrealloc))
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if grown := min(2*cap(buf), want); grown > cap(buf) {
				buf = append(make([]byte, 0, grown), buf...)
			} else {
				buf = append(buf, 0)[:len(buf)]
			}
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, tooLarge(limit)
		}
		if errors.Is(err, io.EOF) {
			if bytes.HasPrefix(buf, utf8BOM) {
				return nil, byteOrderMark()
			}
			return buf, nil
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &apiError{Status: http.StatusRequestTimeout, Type: typeInvalidRequest, Code: "request_timeout",
				Message: "the request body did not arrive in time"}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			// The connection ended before the body did: the client went away, and nothing it
			// sent was wrong (TestClientGoneMidBody).
			return nil, clientClosed()
		}
		if err != nil {
			return nil, badRequest("", "invalid_body", "could not read the request body: "+err.Error())
		}
	}
}

// identity reports whether the Content-Encoding values ce name no coding but identity.
func identity(ce []string) bool {
	for _, v := range ce {
		for v != "" {
			var tok string
			tok, v, _ = strings.Cut(v, ",")
			if tok = strings.Trim(tok, " \t"); tok != "" && !strings.EqualFold(tok, "identity") {
				return false
			}
		}
	}
	return true
}

// unsupportedEncoding refuses a body in a content coding (gzip, br, …): the gateway reads and
// passes on JSON as it is, and a coded body read as JSON would be refused as invalid JSON, or
// worse, served as a body it is not. writeError adds Accept-Encoding: identity (RFC 9110 §15.5.16).
func unsupportedEncoding(ce []string) *apiError {
	return &apiError{Status: http.StatusUnsupportedMediaType, Type: typeInvalidRequest, Code: "unsupported_content_encoding",
		Message: fmt.Sprintf("the request body's Content-Encoding \"%s\" is not supported: send the body uncompressed", echo.String(strings.Join(ce, ", ")))}
}

var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// byteOrderMark refuses a body that starts with a UTF-8 byte order mark, which JSON sent over a
// network must not carry (RFC 8259 §8.1): read as JSON it was "invalid character 'ï'", a
// character the client never wrote (TestByteOrderMarkRefusedClearly). Refused rather than
// skipped, since the body goes upstream as it came, and a server may refuse it there.
func byteOrderMark() *apiError {
	return badRequest("", "invalid_json",
		"the request body is not valid JSON: it starts with a byte order mark (U+FEFF); send it without one")
}

// maxPrealloc is the largest body buffer made before the body's bytes come (readBody).
const maxPrealloc = 1 << 20

// maxPooledBody is the largest body buffer kept for the next request (release): a chat request
// is a few KB, and a rare large one, up to max_body_bytes, should not pin its buffer for as long
// as the pool keeps the state (CONFIG.md, max_body_bytes; TestPooledBodyCapped).
const maxPooledBody = 64 << 10

func tooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalidRequest, Code: "request_too_large",
		Message: fmt.Sprintf("request body is larger than the gateway's limit of %d bytes", limit)}
}

// decodeChat turns the raw body and headers into the request view, built in st: &st.req. It
// reads the JSON once (see decodeWire). names are the models the gateway knows (see fastWire).
func decodeChat(r *http.Request, body []byte, st *reqState, names map[string]string) (*core.Request, *apiError) {
	return decodeChatWith(r, body, jsonx.Text(body, maxBodyDepth), st, names)
}

// decodeWritten is decodeChat for a chat body the gateway wrote itself, the Responses bridge's
// (toChat), and gives what decodeChat gives it (TestWrittenDecodesAsChat). The bridge writes it
// out of a client's body that one strict walk (textMembers; or checkText and a validating one)
// has taken whole, and what it writes is valid JSON in valid UTF-8 with no lone surrogate
// escape, as core.Request.Validated says of it. Its fast walk is then jsonx.Written, which checks
// no string again, only the nesting: the bridge writes a tool's parameters one level deeper
// (under "function") than the client sent them, so a body within maxBodyDepth as it came may
// not be as written, and must be refused as the chat endpoint refuses it. What the walk
// declines (too deep, a member it does not decode) goes on as decodeChat's does, to FixText and
// encoding/json, which word the refusal as before.
func decodeWritten(r *http.Request, body []byte, st *reqState, names map[string]string) (*core.Request, *apiError) {
	return decodeChatWith(r, body, jsonx.Written(body, maxBodyDepth), st, names)
}

// decodeChatWith is decodeChat with walk, a walk over body, as decodeWire's first.
func decodeChatWith(r *http.Request, body []byte, walk jsonx.Iter, st *reqState, names map[string]string) (*core.Request, *apiError) {
	w := &st.wire
	if err := decodeWireWith(body, walk, w, st.msgs, names); err != nil {
		return nil, jsonErrorIn(err, body)
	}
	if isNull(body) {
		return nil, jsonError(errNotObject)
	}
	if cap(w.Messages) > cap(st.msgs) {
		st.msgs = w.Messages[:0] // the array grew: keep the larger one
	}
	if e := finishChat(r, body, w, &st.req); e != nil {
		return nil, e
	}
	return &st.req, nil
}

// finishChat checks the decoded request and builds the view from it in *req. The view's
// parameters point into w.
func finishChat(r *http.Request, body []byte, w *wireView, req *core.Request) *apiError {
	if e := w.passedRefusal(); e != nil {
		// Sent on, the upstream refuses it or, worse, reads something else into it.
		return e
	}
	if w.Model.V == "" {
		return badRequest("model", "missing_required_parameter", "you must provide a model parameter")
	}
	if w.Messages == nil { // absent or null: the decoders give an empty array as non-nil
		return badRequest("messages", "missing_required_parameter", "Missing required parameter: 'messages'.")
	}
	if len(w.Messages) == 0 {
		return badRequest("messages", "empty_array",
			"Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	*req = core.Request{
		Model:    w.Model.V,
		Stream:   w.Stream,
		Messages: w.Messages,
		Params:   w.params(),
		// decodeWire refused any body that is not valid JSON in valid UTF-8 (the bridge's, which
		// decodeWritten does not check again, is written valid out of one it checked), and nothing
		// written into Body afterwards (a model's name, a member taken out) can make it invalid.
		Validated: true,
	}
	for i := range w.Messages {
		if w.Messages[i].Role == "" {
			return badRequest(fmt.Sprintf("messages[%d].role", i), "missing_required_parameter",
				fmt.Sprintf("Missing required parameter: 'messages[%d].role'.", i))
		}
		if c := w.Messages[i].Content; len(c) > 0 && c[0] == '[' {
			if e := foldedPart(c, i); e != nil {
				return e
			}
		}
	}
	if w.StreamOptions != nil {
		req.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	if e := checkToolChoice(w.Raw.ToolsRaw, w.Raw.ToolChoice); e != nil {
		return e
	}
	// Tools sent with tool_choice "none" are not offered, nor functions with function_call
	// "none": the answer is text, which a target without tools gives as well.
	req.Tools = req.Params.OffersTools() || req.Params.OffersFunctions()
	// Ollama's /api/chat takes images as base64 only and its adapter cannot fetch one: the
	// target is skipped (formatFilter), not the route refused, when a later target can.
	req.Images, req.RemoteImages = hasImages(w.Messages)
	req.Choices = w.choices
	req.Logprobs = w.logprobs
	req.OpenAIOnly = w.openaiOnly
	if req.OpenAIOnly == "" {
		req.OpenAIOnly = untranslatableChat(w.Raw.Functions, w.Messages)
	}
	if req.OpenAIOnly == "" && req.Params.OffersCustomTools() {
		// Ollama's tools are functions: given a custom tool it reads one with no name, which
		// the model cannot call (TestCustomToolsSkipOllama).
		req.OpenAIOnly = "custom"
	}
	req.Structured = structuredFormat(w.Raw.ResponseFormat)
	req.NativeFormat, req.HideReasoning = w.nativeFormat, w.hideReasoning
	req.KnownMembers = w.known
	// Each limit sent must be at least 1, as OpenAI holds them: 0 asks for no answer at all, and
	// a target that reads 0 as no limit (SAIF, Ollama's num_predict) answered without one; a
	// max_completion_tokens of 0 beside a max_tokens is refused too, as OpenAI refuses it, rather
	// than read as vLLM's "max_completion_tokens or max_tokens" reads it (TestTokenLimitBelowOne).
	// max_tokens is judged first, as before.
	for _, l := range [...]struct {
		name string
		v    opt[int]
	}{{"max_tokens", w.MaxTokens}, {"max_completion_tokens", w.MaxCompletion}} {
		if l.v.Set && l.v.V < 1 {
			return belowMin(l.name, l.v.V, 1)
		}
	}
	if w.MaxCompletion.Set {
		req.MaxTokens = w.MaxCompletion.V // it is the one a target reads when both are sent
	} else if w.MaxTokens.Set {
		req.MaxTokens = w.MaxTokens.V
	}

	req.Body = body
	var opts bodyOptions
	if w.options || w.models != 1 {
		// Not one plain "model": encoding/json decoded the body, and may have read the model
		// from another spelling of it. It is the only path a folded spelling takes (fastWire
		// declines them), so the walk for them costs the usual body nothing.
		if e := foldedSpelling(body, isChatKey, true); e != nil {
			return e
		}
		req.Body, opts = stripOptions(body, w.models != 1)
	} else {
		// The body as fastWire walked it: where its model lies, and whether it has stream_options.
		req.ModelAt, req.NoStreamOptions = w.modelAt, !w.optionsMember
	}
	return readOptions(r, w, opts, req)
}

// readOptions applies the Hayula options. A request can make itself stricter, never looser:
// x-fallback-on can only turn fallback off, x-hayula-privacy can only turn strictness on.
// opts are the body's option values beside the ones w holds (stripOptions).
func readOptions(r *http.Request, w *wireView, opts bodyOptions, req *core.Request) *apiError {
	fallback, privacy, hint := field(r, hdrOptFallback), field(r, hdrOptPrivacy), field(r, hdrOptHint)
	if fallback == nil && privacy == nil && hint == nil && len(w.Fallback) == 0 && w.Privacy.V == "" &&
		w.Hint.V == "" && opts.fallback == nil && opts.privacy == nil && opts.hint == nil {
		// None sent, as in nearly every request: what the walks below leave then.
		req.RouteHint = ""
		return nil
	}
	// Every value counts, not the one a decoder keeps: a header sent on several lines, a body
	// member sent twice (in any spelling), or a header beside a body member turns fallback off
	// when any of them says false, and is refused when any is neither true nor false
	// (TestFallbackAnyFalseCounts, TestFallbackAnyFalseInBody).
	for _, v := range fallback {
		if e := applyFallback(v, req); e != nil {
			return e
		}
	}
	for _, vs := range [...][]json.RawMessage{{w.Fallback}, opts.fallback} {
		for _, v := range vs {
			if e := applyFallbackJSON(v, req); e != nil {
				return e
			}
		}
	}

	// An absent body field is "", which asks for nothing, as an absent header does. Every value
	// counts, not the one a decoder keeps: a header sent twice, or a body member sent twice
	// (both decoders keep the last), is strict when any of them says so (TestPrivacyAnyStrictCounts).
	for _, vs := range [...][]string{privacy, {w.Privacy.V}, opts.privacy} {
		for _, p := range vs {
			if e := applyPrivacy(p, req); e != nil {
				return e
			}
		}
	}

	// One hint, however often it is sent: several that differ (case aside) are refused rather
	// than one of them taken, since a proxy in front that reads another line would have routed
	// the request elsewhere (TestHintSentTwiceMustAgree). An empty one asks for nothing.
	req.RouteHint = ""
	for _, vs := range [...][]string{hint, {w.Hint.V}, opts.hint} {
		for _, v := range vs {
			v = strings.TrimSpace(v)
			switch {
			case v == "" || strings.EqualFold(v, req.RouteHint):
			case req.RouteHint != "":
				return badRequest(optHint, "invalid_value", "x-route-hint was sent more than once with different "+
					"values: send one hint")
			default:
				req.RouteHint = v
			}
		}
	}
	return nil
}

// applyFallback applies one x-fallback-on value, a header line's or a body string's, to req:
// false turns fallback off, true (or nothing) asks for nothing.
func applyFallback(v string, req *core.Request) *apiError {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "1", "yes":
	case "false", "0", "no":
		req.NoFallback = true
	default:
		return badRequest(optFallback, "invalid_value", "x-fallback-on must be true or false")
	}
	return nil
}

// applyFallbackJSON applies one x-fallback-on body value: a boolean, a string read as a header
// line is, or null (or absent), which asks for nothing.
func applyFallbackJSON(v json.RawMessage, req *core.Request) *apiError {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	var b bool
	var s string
	switch {
	case json.Unmarshal(v, &b) == nil:
		if !b {
			req.NoFallback = true
		}
	case json.Unmarshal(v, &s) == nil:
		return applyFallback(s, req)
	default:
		return badRequest(optFallback, "invalid_value", "x-fallback-on must be true or false")
	}
	return nil
}

// applyPrivacy applies one x-hayula-privacy value to req: "strict" makes it strict, the default
// asks for nothing.
func applyPrivacy(p string, req *core.Request) *apiError {
	switch strings.ToLower(strings.TrimSpace(p)) {
	case "":
	case "strict":
		req.Strict = true
	case "default", "none":
		// Asking for the default never loosens a strict route or key.
	default:
		return badRequest(optPrivacy, "invalid_value", "x-hayula-privacy must be \"strict\" (or \"default\")")
	}
	return nil
}

// structuredFormat reports whether a response_format asks for JSON: a type other than "text"
// (json_object, json_schema, or one OpenAI adds later). rf is valid JSON, or empty when absent.
// Of several "type" members the last counts, as encoding/json, Python's json and llama-server's
// parser read it: the first would let {"type":"text","type":"json_object"} reach a target that
// cannot carry the JSON mode the upstream is asked for.
func structuredFormat(rf json.RawMessage) bool {
	if len(rf) == 0 || rf[0] != '{' {
		return false
	}
	it := jsonx.Object(rf, false)
	structured := false
	for {
		q, v, ok := it.Next()
		if !ok {
			return structured
		}
		if name, ok := jsonx.Unquote(q); ok && name == "type" {
			t, ok := jsonx.Unquote(v)
			structured = ok && t != "text"
		}
	}
}

// hasImages reports whether any message has an image part, and whether one is an http(s) URL
// to fetch (see imageRef). Each content is decoded once, its image URLs with it.
func hasImages(msgs []core.Message) (images, remote bool) {
	for i := range msgs {
		c := bytes.TrimSpace(msgs[i].Content)
		if len(c) == 0 || c[0] != '[' {
			continue
		}
		if !bytes.Contains(c, []byte("image")) && !bytes.Contains(c, escapeU) {
			// No part can be an image: its type would spell "image" in the bytes, unless a \u
			// escape spells a letter of it, which every JSON reader reads as the letter
			// (TestEscapedPartTypeSeenByEligibility).
			continue
		}
		var parts []struct {
			Type     string   `json:"type"`
			ImageURL imageRef `json:"image_url"`
		}
		if json.Unmarshal(c, &parts) != nil {
			continue
		}
		for _, p := range parts {
			if p.Type == "image_url" || p.Type == "input_image" || p.Type == "image" {
				images = true
				remote = remote || p.ImageURL.remote
			}
		}
	}
	return images, remote
}

// Words whose absence from a message's content spares untranslatableChat decoding its parts;
// and escapeU, the start of a \u escape, which may spell any of their letters (and hasImages').
var (
	audioPartWord = []byte(`"input_audio"`)
	filePartWord  = []byte(`"file"`)
	escapeU       = []byte(`\u`)
)

// untranslatableChat names what a chat request says that OpenAI's API serves and neither Ollama's
// /api/chat nor SAIF's prompt can say, for core.Request.OpenAIOnly: "functions", the legacy
// ones declared (not as tools), or the type of a content part that is neither text nor image,
// "input_audio" or "file". The ollama and saif adapters refused such a request with a 400 that
// stopped the chain although an openai target on the route served it; eligibility now skips them
// (TestUntranslatableChatSkipsTranslators). "" for none. A content without either word in it,
// nor a \u escape that could spell one (TestEscapedPartTypeSeenByEligibility), is not walked.
func untranslatableChat(functions json.RawMessage, msgs []core.Message) string {
	if core.NonEmptyArray(functions) {
		return "functions"
	}
	for i := range msgs {
		c := bytes.TrimSpace(msgs[i].Content)
		if len(c) == 0 || c[0] != '[' ||
			!bytes.Contains(c, audioPartWord) && !bytes.Contains(c, filePartWord) && !bytes.Contains(c, escapeU) {
			continue
		}
		parts := jsonx.Array(c, false)
		for {
			_, p, ok := parts.Next()
			if !ok {
				break
			}
			if p[0] != '{' {
				continue
			}
			if v, found := jsonx.Last(p, "type"); found {
				if typ, ok := jsonx.Unquote(v); ok && (typ == "input_audio" || typ == "file") {
					return typ
				}
			}
		}
	}
	return ""
}

// imageRef is a content part's image_url, {"url": …} or, in the Responses shape, the URL itself,
// read for one thing: whether the URL is one to fetch (http or https), not a data: URL that
// carries the image. A value of neither shape, or a url that is not a string, is no URL to
// fetch, and no error: the part is an image all the same.
type imageRef struct{ remote bool }

// UnmarshalJSON reads the URL from b, which encoding/json has checked is one JSON value.
func (r *imageRef) UnmarshalJSON(b []byte) error {
	r.remote = false
	switch {
	case len(b) > 0 && b[0] == '"':
		url, ok := jsonx.Unquote(b)
		r.remote = ok && fetchable(url)
	case len(b) > 0 && b[0] == '{':
		var o struct {
			URL string `json:"url"`
		}
		r.remote = json.Unmarshal(b, &o) == nil && fetchable(o.URL)
	}
	return nil
}

// fetchable reports whether url, spaces around it aside, begins http:// or https://, the scheme
// in any case.
func fetchable(url string) bool {
	url = strings.TrimSpace(url)
	return hasPrefixFoldASCII(url, "http://") || hasPrefixFoldASCII(url, "https://")
}

// hasPrefixFoldASCII reports whether s begins with the lower-case ASCII prefix in any case of
// ASCII letters only: strings.EqualFold would take the long s (ſ) for an s, which lower-casing
// does not.
func hasPrefixFoldASCII(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// headerValue is the first of a field's values (as field returns them), or "". It stands in
// for Header.Get, which runs every key through textproto's canonicalisation first: 0.6% of the
// gateway's CPU for the five keys read on every request.
func headerValue(vs []string) string {
	if len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// bearer returns the API key from Authorization: Bearer or x-api-key. malformed reports an
// Authorization field that carries something but is no "Bearer KEY" (a tab after Bearer, another
// scheme, a key without its scheme): the client sent a credential, one the gateway cannot read.
// "Bearer" with nothing after it is no key, and not malformed: like an empty Authorization, it
// leaves the key to x-api-key, which a client configured with an empty API key and an x-api-key
// field sends beside it (TestEmptyBearerReadsXAPIKey).
func bearer(r *http.Request) (key string, malformed bool) {
	if a := strings.TrimSpace(headerValue(field(r, "Authorization"))); a != "" {
		if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			return strings.TrimSpace(a[7:]), false // not empty: a ends in no space
		}
		if !strings.EqualFold(a, "bearer") {
			return "", true
		}
	}
	return strings.TrimSpace(headerValue(field(r, "X-Api-Key"))), false
}

// wireOther is the part of a /v1/completions or /v1/embeddings request the gateway reads.
type wireOther struct {
	Model         *string         `json:"model"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	Prompt        json.RawMessage `json:"prompt"`
	Input         json.RawMessage `json:"input"`
	MaxTokens     *int            `json:"max_tokens"`
	N             json.RawMessage `json:"n"`
	Logprobs      json.RawMessage `json:"logprobs"` // completions: an integer, or null
	// Echo and Suffix are a completions request's, which only the OpenAI protocol carries
	// (openaiOnlyOf).
	Echo      json.RawMessage `json:"echo"`
	Suffix    json.RawMessage `json:"suffix"`
	LogitBias json.RawMessage `json:"logit_bias"`
	// Stop and Temperature are a completions request's that the saif adapter sends on
	// (completionsKinds).
	Stop        json.RawMessage `json:"stop"`
	Temperature json.RawMessage `json:"temperature"`
	Fallback    json.RawMessage `json:"x-fallback-on"`
	Hint        *string         `json:"x-route-hint"`
	Privacy     *string         `json:"x-hayula-privacy"`
	// Dimensions and EncodingFormat are an embeddings request's: the ollama adapter acts on
	// them, so the server holds them to what OpenAI's API accepts (embedOptions).
	Dimensions     json.RawMessage `json:"dimensions"`
	EncodingFormat json.RawMessage `json:"encoding_format"`
}

// decodeOther decodes a completions or embeddings request. Its body passes through untouched but
// for the Hayula fields; eligibility sees no messages, so only privacy and health filter it.
func decodeOther(r *http.Request, body []byte, op core.Op) (*core.Request, *apiError) {
	if e := checkText(body); e != nil {
		return nil, e
	}
	var w wireOther
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, jsonError(err)
	}
	if isNull(body) {
		return nil, jsonError(errNotObject)
	}
	if w.Model == nil || *w.Model == "" {
		return nil, badRequest("model", "missing_required_parameter", "you must provide a model parameter")
	}
	field, raw := "prompt", w.Prompt
	if op == core.OpEmbeddings {
		field, raw = "input", w.Input
		if w.Stream {
			return nil, badRequest("stream", "invalid_value", "embeddings cannot be streamed")
		}
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, badRequest(field, "missing_required_parameter", fmt.Sprintf("Missing required parameter: '%s'.", field))
	}
	inputs := 0
	if op == core.OpEmbeddings {
		var e *apiError
		if inputs, e = embedInputs(raw); e != nil {
			return nil, e
		}
		if e := embedOptions(w.Dimensions, w.EncodingFormat); e != nil {
			return nil, e
		}
	}
	req := &core.Request{Op: op, Model: *w.Model, Stream: w.Stream}
	if op == core.OpEmbeddings {
		req.Dimensions, req.Inputs = dimensionsOf(w.Dimensions), inputs
		// embedOptions let through "float", "base64" or null, spelled as they are.
		req.Base64 = string(bytes.TrimSpace(w.EncodingFormat)) == `"base64"`
	}
	if op == core.OpCompletions {
		req.Prompt = raw
		// Any number asks for the sampled tokens' logprobs (and that many alternatives).
		lp := bytes.TrimSpace(w.Logprobs)
		req.Logprobs = len(lp) > 0 && lp[0] != 'n' && lp[0] != 'f'
		if e := completionsKinds(&w); e != nil {
			return nil, e
		}
	}
	req.OpenAIOnly = openaiOnlyOf(op, &w, raw)
	if w.StreamOptions != nil {
		req.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	if w.MaxTokens != nil && op == core.OpCompletions {
		// Embeddings generate nothing: a max_tokens there reserves no room in the window
		// (TestEmbeddingsMaxTokensReservesNothing). A negative one is refused in OpenAI's words, as
		// chat's is: read as 0, it went to SAIF as no limit (TestCompletionsNegativeMaxTokens). 0
		// passes here, where chat refuses it: with echo, a completions request scores its prompt
		// without generating (lm-evaluation-harness's loglikelihood requests send it).
		if *w.MaxTokens < 0 {
			return nil, belowMin("max_tokens", *w.MaxTokens, 0)
		}
		req.MaxTokens = *w.MaxTokens
		if req.MaxTokens == 0 && req.OpenAIOnly == "" {
			// SAIF's protocol cannot say 0: the saif adapter leaves it out, and SAIF answered
			// with no limit at all (TestCompletionsZeroMaxTokensSkipsSAIF).
			req.OpenAIOnly = "max_tokens"
		}
	}
	if n := bytes.TrimSpace(w.N); op == core.OpCompletions && len(n) > 0 && string(n) != "null" {
		// Held to what chat holds it to (an integer of at least 1, in OpenAI's words); embeddings
		// have no n, and theirs goes on as it came.
		if name, k := passKinds([]byte("n")); !fits(name, k, n) {
			return nil, badField{name: name, value: n}.refusal()
		}
		req.Choices = choicesOf(n)
	}
	isKey := isCompletionsKey
	if op == core.OpEmbeddings {
		isKey = isEmbedKey
	}
	if e := foldedSpelling(body, isKey, false); e != nil {
		return nil, e
	}
	if w.Stream {
		// Only a body that streams can have a null after a true (noteStream).
		var sv wireView
		it := jsonx.Object(body, false)
		for q, v, ok := it.Next(); ok; q, v, ok = it.Next() {
			if name, ok := jsonx.Unquote(q); ok && name == "stream" {
				sv.noteStream(v)
			}
		}
		if e := sv.passedRefusal(); e != nil {
			return nil, e
		}
	}
	// Stripped by name, not after a check of the decoded fields: a key sent as null goes too.
	var opts bodyOptions
	req.Body, opts = stripOptions(body, true) // encoding/json read the model, in whatever spelling
	view := wireView{Fallback: w.Fallback, Hint: optOf(w.Hint), Privacy: optOf(w.Privacy)}
	if e := readOptions(r, &view, opts, req); e != nil {
		return nil, e
	}
	return req, nil
}

// openaiOnlyOf names what a completions or embeddings request asks for that only the OpenAI
// protocol carries (core.Request.OpenAIOnly), so that eligibility skips the translating targets
// (TestUntranslatableSkipsTranslators): for completions, a logit_bias with an entry (as for
// chat), echo true, a non-empty suffix, or a prompt that is not one string (a batch, token ids), which SAIF's one prompt string cannot say;
// for embeddings, an input that is not text (token ids), which Ollama's /api/embed cannot take.
// raw is the prompt or the input, valid JSON and not null. The adapters refused each with a 400
// of class request, which stopped the chain though the route's next target served it.
func openaiOnlyOf(op core.Op, w *wireOther, raw json.RawMessage) string {
	if op == core.OpEmbeddings {
		if !textInput(raw) {
			return "input"
		}
		return ""
	}
	switch s, lb := bytes.TrimSpace(w.Suffix), bytes.TrimSpace(w.LogitBias); {
	case len(lb) > 0 && lb[0] == '{' && hasMember(lb):
		return "logit_bias"
	case string(bytes.TrimSpace(w.Echo)) == "true":
		return "echo"
	case len(s) > 2 && s[0] == '"':
		return "suffix"
	case promptTurn(raw) == nil:
		return "prompt"
	}
	return ""
}

// completionsKinds refuses a completions field the gateway or the saif adapter reads (echo,
// suffix, logit_bias, stop and its elements, temperature) when it is not of its kind, as chat's
// are refused (passKinds): the saif adapter answered a valid body with "not valid JSON", and sent
// a stop of 5 as none (TestCompletionsFieldKinds). null is no value.
func completionsKinds(w *wireOther) *apiError {
	for _, f := range [...]struct {
		name string
		k    kinds
		v    json.RawMessage
	}{
		{"echo", kBool, w.Echo}, {"suffix", kString, w.Suffix}, {"logit_bias", kObject, w.LogitBias},
		{"stop", kString | kArray, w.Stop}, {"temperature", kNumber, w.Temperature},
	} {
		v := bytes.TrimSpace(f.v)
		if len(v) == 0 {
			continue
		}
		if !fits(f.name, f.k, v) {
			return badRequest(f.name, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.",
				f.name, expected(f.k), article(kindName(v))))
		}
		if f.name == "stop" && v[0] == '[' {
			it := jsonx.Array(v, false)
			for i := 1; ; i++ {
				_, e, ok := it.Next()
				if !ok {
					break
				}
				if e[0] != '"' {
					return badField{name: "stop", value: e, elem: i}.refusal()
				}
			}
		}
	}
	return nil
}

// textInput reports whether an embeddings input is text: a string, or an array of strings. raw
// has passed embedInputs, whose walk holds every element to the first's kind, so the first
// element says it: the array is not walked again.
func textInput(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if raw[0] != '[' {
		return raw[0] == '"'
	}
	it := jsonx.Array(raw, false)
	_, v, ok := it.Next()
	return ok && v[0] == '"'
}

// dimensionsOf is an embeddings request's dimensions, which embedOptions has held to an integer
// from 1 to MaxInt32, or null; 0 for null or none.
func dimensionsOf(raw json.RawMessage) int {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 32)
	if err != nil {
		return 0
	}
	return int(n)
}

// maxInputs is how many items OpenAI's API takes in an embeddings input array.
const maxInputs = 2048

// embedInputs counts an embeddings input, and refuses one OpenAI's API refuses: an empty one ("", [], or an
// array holding "" or []: OpenAI says input "cannot be an empty string"; Ollama's /api/embed
// answers such an input 200 with no embeddings at all), an array of more than 2048 strings
// or token arrays (a flat array of token ids is one input, however long), and an input of
// another shape than a string, an array of strings, of token ids (integers) or of arrays of
// them (a number, an object, null or a number among strings, strings in a token array: a 400
// invalid_type, as OpenAI answers; the ollama adapter read a mixed array as token ids). raw is
// valid JSON, as encoding/json decoded the body (TestEmbeddingsEmptyInputRefused,
// TestEmbeddingsInputsAtMost2048, TestEmbeddingsInputShape). n is how many inputs it holds, which
// an answer's data must hold as many embeddings of (core.Request.Inputs): 1 for a string or an
// array of token ids, else the array's length.
func embedInputs(raw []byte) (n int, _ *apiError) {
	empty := badRequest("input", "invalid_value", "Invalid 'input': it cannot be an empty string or an empty array, nor hold one.")
	t := bytes.TrimSpace(raw)
	switch t[0] {
	case '"':
		if len(t) == 2 {
			return 0, empty
		}
		return 1, nil
	case '[':
	default:
		return 0, inputShape(kindName(t))
	}
	it := jsonx.Array(t, false)
	first := ""
	for {
		_, v, ok := it.Next()
		if !ok {
			break
		}
		kind := kindName(v)
		if n == 0 {
			first = kind
		}
		n++
		if string(v) == `""` || v[0] == '[' && len(bytes.TrimSpace(v[1:])) == 1 {
			return 0, empty
		}
		if kind != first || kind != "string" && kind != "integer" && kind != "array" {
			return 0, inputShape("an array holding " + article(kind))
		}
		if kind == "array" {
			tokens := jsonx.Array(v, false)
			for _, tok, ok := tokens.Next(); ok; _, tok, ok = tokens.Next() {
				if k := kindName(tok); k != "integer" {
					return 0, inputShape("an array of arrays holding " + article(k))
				}
			}
		}
	}
	switch {
	case n == 0:
		return 0, empty
	case first == "integer":
		return 1, nil // token ids: one input, however many
	case n > maxInputs:
		return 0, badRequest("input", "array_above_max_length", fmt.Sprintf(
			"Invalid 'input': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", maxInputs, n))
	}
	return n, nil
}

// inputShape refuses an embeddings input of the shape got.
func inputShape(got string) *apiError {
	if !strings.HasPrefix(got, "an ") {
		got = article(got)
	}
	return badRequest("input", "invalid_type", "Invalid type for 'input': expected a string, an array of strings, an array of "+
		"integers (token ids) or an array of arrays of integers, but got "+got+" instead.")
}

// embedOptions refuses an embeddings request's dimensions or encoding_format of a kind or value
// OpenAI's API refuses (dimensions an integer of at least 1; encoding_format "float" or
// "base64"; either may be null), before a target is asked: the ollama adapter acts on both, and
// took 0 or -3 for "the model's own width" and a string for a body that is not JSON
// (TestEmbeddingsDimensions).
func embedOptions(dims, format json.RawMessage) *apiError {
	if d := bytes.TrimSpace(dims); len(d) > 0 && d[0] != 'n' {
		if got := kindName(d); got != "integer" {
			return badRequest("dimensions", "invalid_type", fmt.Sprintf(
				"Invalid type for 'dimensions': expected an integer, but got %s instead.", article(got)))
		}
		if n, err := strconv.ParseInt(string(d), 10, 32); d[0] == '-' || err == nil && n < 1 {
			return badRequest("dimensions", "integer_below_min_value", fmt.Sprintf(
				"Invalid 'dimensions': integer below minimum value. Expected a value >= 1, but got %s instead.", d))
		} else if err != nil {
			return badRequest("dimensions", "integer_above_max_value", fmt.Sprintf(
				"Invalid 'dimensions': integer above maximum value. Expected a value <= %d, but got %s instead.", math.MaxInt32, d))
		}
	}
	if f := bytes.TrimSpace(format); len(f) > 0 && f[0] != 'n' {
		if got := kindName(f); got != "string" {
			return badRequest("encoding_format", "invalid_type", fmt.Sprintf(
				"Invalid type for 'encoding_format': expected a string, but got %s instead.", article(got)))
		}
		if s := string(f); s != `"float"` && s != `"base64"` {
			return badRequest("encoding_format", "invalid_value", fmt.Sprintf(
				"Invalid value: %s. Supported values are: 'float' and 'base64'.", echo.Bytes(f)))
		}
	}
	return nil
}

// jsonError answers a body encoding/json would not decode: not JSON at all, or a field of the
// wrong type.
// jsonErrorIn is jsonError for a chat body, with a message's index in the name of a type error in
// one of its members: encoding/json says "messages.role", not which message.
func jsonErrorIn(err error, body []byte) *apiError {
	e := jsonError(err)
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) && strings.HasPrefix(e.Param, "messages.") {
		if f := messageIndexed(e.Param, body, jsonType(ute.Type)); f != e.Param {
			e.Message = strings.Replace(e.Message, "'"+e.Param+"'", "'"+f+"'", 1)
			e.Param = f
		}
	}
	return e
}

// messageIndexed turns "messages.NAME" into "messages[i].NAME" for the first message whose NAME
// member is not of the kind want (as jsonType names it); field as it is when the member is
// nested deeper or no message has such a member.
func messageIndexed(field string, body []byte, want string) string {
	name, _ := strings.CutPrefix(field, "messages.")
	if strings.Contains(name, ".") {
		return field
	}
	it := jsonx.Object(body, false)
	for {
		q, v, ok := it.Next()
		if !ok {
			return field
		}
		if k, ok := jsonx.Unquote(q); !ok || !strings.EqualFold(k, "messages") {
			continue
		}
		msgs := jsonx.Array(v, false)
		for i := 0; ; i++ {
			_, m, ok := msgs.Next()
			if !ok {
				break
			}
			members := jsonx.Object(m, false)
			for {
				mq, mv, ok := members.Next()
				if !ok {
					break
				}
				if k, ok := jsonx.Unquote(mq); ok && strings.EqualFold(k, name) && !isKind(mv, want) {
					return "messages[" + strconv.Itoa(i) + "]." + name
				}
			}
		}
	}
}

// isKind reports whether the JSON value v is of the kind jsonType calls want; null is any kind,
// and an integer is a number.
func isKind(v []byte, want string) bool {
	got := kindName(v)
	return v[0] == 'n' || got == want || want == "number" && got == "integer"
}

func jsonError(err error) *apiError {
	var te *jsonx.TextError
	if errors.As(err, &te) {
		return badRequest("", "invalid_json", te.Error())
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		if ute.Field == "" {
			return badRequest("", "invalid_type", "the request body must be a JSON object")
		}
		// Field is the Go path, which names the struct core.Params is embedded as.
		field := strings.TrimPrefix(ute.Field, "Params.")
		return badRequest(field, "invalid_type",
			fmt.Sprintf("invalid type for '%s': expected %s", field, jsonType(ute.Type)))
	}
	return badRequest("", "invalid_json", "the request body is not valid JSON: "+err.Error())
}

// formNote adds to e, a body's refusal as invalid JSON, that the endpoint reads JSON, when r's
// Content-Type says the body is a form (multipart/form-data, application/x-www-form-urlencoded):
// the parser's "invalid character '-' in numeric literal" is about a character the client did not
// mean as JSON (TestFormBodyToldJSON). Only the refusal says so: a JSON body sent under a form's
// type (curl -d sends one so) is read as any other. It returns e.
func formNote(r *http.Request, e *apiError) *apiError {
	if e.Code != "invalid_json" {
		return e
	}
	mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	if mt == "multipart/form-data" || mt == "application/x-www-form-urlencoded" {
		e.Message += "; this endpoint reads a JSON body (Content-Type: application/json), and this one was sent as " + mt
	}
	return e
}

// jsonType names the JSON type a value of Go type t is decoded from, for a client that never saw
// the Go type's name.
func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}

// maxBodyDepth is the deepest nesting of arrays and objects a request body may have, the body's
// own object counting 1. It is what serde_json takes (its recursion limit of 128 refuses the
// 128th level): a Rust upstream refuses anything deeper, and a Python one may fail on it with a
// 5xx that counts against the target's health, while encoding/json would take up to 10,000
// levels. No request OpenAI's API defines comes near it: a tool's JSON schema, the deepest part,
// is a few levels per nested property.
const maxBodyDepth = 127

// checkText is the check FixText makes, for a body no one-pass walk read: a body that is not
// valid UTF-8 (RFC 8259 §8.1) or nests past maxBodyDepth is refused, and a lone surrogate escape
// is rewritten to \ufffd in place, so that the upstream reads what encoding/json read.
func checkText(body []byte) *apiError {
	if err := jsonx.FixText(body, maxBodyDepth); err != nil {
		return jsonError(err)
	}
	return nil
}

// decodeWire fills w as json.Unmarshal(body, w) would, for a body that is a JSON text every
// decoder reads alike: invalid UTF-8 and nesting past maxBodyDepth are a *jsonx.TextError, and a
// lone surrogate escape is rewritten to \ufffd in body first (jsonx.FixText), which the body
// then goes upstream with. encoding/json scans a body twice (checkValid, then the decode) and
// copies every message content; the fast walk (jsonx.Text) validates the body in one pass, UTF-8
// and surrogate pairs included, and keeps contents and tool calls as sub-slices of body (which
// nothing modifies afterwards). Whatever the walk does not take whole — invalid JSON or UTF-8, a
// lone surrogate, nesting past maxBodyDepth, a field of the wrong type, an escaped, non-ASCII or
// case-folded key (encoding/json matches names case-insensitively), "messages" twice — goes to
// FixText and then encoding/json from scratch, which then decides and words the error exactly as
// before. FuzzDecodeWire holds the two to the same answer.
// The messages are built in msgs's array when it is large enough (nil: a new one).
func decodeWire(body []byte, w *wireView, msgs []core.Message, names map[string]string) error {
	return decodeWireWith(body, jsonx.Text(body, maxBodyDepth), w, msgs, names)
}

// decodeWireWith is decodeWire with walk, a walk over body, as the fast walk's.
func decodeWireWith(body []byte, walk jsonx.Iter, w *wireView, msgs []core.Message, names map[string]string) error {
	*w = wireView{}
	if walkWire(walk, w, msgs, names) {
		return nil
	}
	if err := jsonx.FixText(body, maxBodyDepth); err != nil {
		*w = wireView{}
		return err
	}
	var wr wireRequest
	err := json.Unmarshal(body, &wr)
	*w = viewOf(&wr)
	if err == nil {
		passedKinds(body, w)
	}
	return err
}

// errNotObject is the error encoding/json gives a body that is not an object (jsonError words
// it), for the one it decodes into a struct without complaint: null.
var errNotObject = &json.UnmarshalTypeError{Value: "null", Type: reflect.TypeFor[wireRequest]()}

// isNull reports whether body, JSON that decoded into a struct, is null rather than an object.
func isNull(body []byte) bool {
	i := 0
	for i < len(body) && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	return i < len(body) && body[i] == 'n'
}

// fastWire is decodeWire's one pass into a zero w; false means "ask encoding/json", with w left
// partly filled. A model found in names (each name mapped to itself; nil is none) is names'
// string rather than a copy out of the body: the model is nearly always a route's name.
func fastWire(body []byte, w *wireView, msgs []core.Message, names map[string]string) bool {
	return walkWire(jsonx.Text(body, maxBodyDepth), w, msgs, names)
}

// walkWire is fastWire with it, a walk over the body, as its walk.
func walkWire(it jsonx.Iter, w *wireView, msgs []core.Message, names map[string]string) bool {
	messages := false
	w.known = true // until a member it does not decode comes
	for {
		q, ok := it.Key()
		if !ok {
			return it.Done()
		}
		name, plain := jsonx.PlainKey(q)
		if !plain {
			return false
		}
		if string(name) == "messages" {
			if messages {
				return false // a second array merges into the first in encoding/json
			}
			messages = true
			if w.Messages, ok = walkMessages(&it, msgs); !ok {
				return false
			}
			continue
		}
		v, ok := it.Value()
		if !ok {
			return false
		}
		switch string(name) {
		case "model":
			ok = setModel(&w.Model, v, names)
			w.models++
			w.modelAt = [2]int{it.Offset() - len(v), it.Offset()}
		case "stream":
			w.noteStream(v)
			ok = setBool(&w.Stream, v)
		case "stream_options":
			// Rare and small; encoding/json also reuses an earlier value's struct, as it would.
			ok = json.Unmarshal(v, &w.StreamOptions) == nil
			w.optionsMember = true
		case "functions":
			w.Raw.Functions = v
			w.checkPassed(name, v)
		case "function_call":
			w.Raw.FunctionCall = v
			w.checkPassed(name, v)
		case "max_tokens":
			ok = setOptInt(&w.MaxTokens, v)
		case "max_completion_tokens":
			ok = setOptInt(&w.MaxCompletion, v)
		case optFallback:
			w.Fallback, w.options = v, true
		case optHint:
			ok, w.options = setOptString(&w.Hint, v), true
		case optPrivacy:
			ok, w.options = setOptString(&w.Privacy, v), true
		case "temperature":
			ok = setOptFloat(&w.Temperature, v)
		case "top_p":
			ok = setOptFloat(&w.TopP, v)
		case "seed":
			ok = setOptInt64(&w.Seed, v)
		case "frequency_penalty":
			ok = setOptFloat(&w.FreqPenalty, v)
		case "presence_penalty":
			ok = setOptFloat(&w.PresPenalty, v)
		case "stop":
			w.Raw.Stop = v
			w.checkPassed(name, v)
		case "response_format":
			w.Raw.ResponseFormat = v
			w.checkPassed(name, v)
		case "tools":
			w.Raw.ToolsRaw = v
			w.checkPassed(name, v)
		case "tool_choice":
			w.Raw.ToolChoice = v
			w.checkPassed(name, v)
		default:
			w.known = false
			w.noteAsked(name, v)
			if !w.checkPassed(name, v) {
				ok = !foldsTo(name, isWireKey)
			}
		}
		if !ok {
			return false
		}
	}
}

func isWireKey(name string) bool {
	switch name {
	case "model", "stream", "stream_options", "messages", "functions", "function_call", "max_tokens", "max_completion_tokens",
		optFallback, optHint, optPrivacy, "temperature", "top_p", "seed", "frequency_penalty", "presence_penalty",
		"stop", "response_format", "tools", "tool_choice":
		return true
	}
	return false
}

// isChatKey reports a chat field the gateway decodes and passes on under the same name; "model"
// and the Hayula options are not among them, as they never reach the upstream as the client
// spelled them (stripOptions).
func isChatKey(name string) bool {
	return name != "model" && !isOption([]byte(name)) && isWireKey(name)
}

// isOtherKey is isChatKey for a completions or embeddings request (wireOther).
func isOtherKey(name string) bool {
	switch name {
	case "stream", "stream_options", "prompt", "input", "max_tokens", "n", "logprobs":
		return true
	}
	return false
}

// isCompletionsKey is isOtherKey for a completions request, whose echo, suffix and logit_bias
// decide which targets may serve it (openaiOnlyOf), and whose stop and temperature the saif
// adapter reads with encoding/json, which would take "TEMPERATURE" for the field.
func isCompletionsKey(name string) bool {
	switch name {
	case "echo", "suffix", "logit_bias", "stop", "temperature":
		return true
	}
	return isOtherKey(name)
}

// isEmbedKey is isOtherKey for an embeddings request, whose dimensions and encoding_format the
// ollama adapter acts on.
func isEmbedKey(name string) bool {
	return name == "dimensions" || name == "encoding_format" || isOtherKey(name)
}

// foldedSpelling refuses a member that encoding/json reads as a field the gateway decides on but
// that names it in another case: "Messages", "STREAM", "MAX_TOKENS", "me\u017f\u017fages" (ſ folds to
// s), and in messages "Content" or "ROLE". The gateway would decide on that member (the last of
// the spellings wins) while a Python or C++ upstream, whose decoders match names exactly, reads
// the "messages" or "content" beside it: a short prompt window-checked and routed, a long one
// run; max_tokens 1 fitted, 100000 asked; stream false answered, true sent
// (TestFoldedSpellingRefused). No client means either; OpenAI's own API refuses the name as
// unknown, and so does the gateway, with the name as the client spelled it. body is valid JSON
// (encoding/json decoded it); inMessages also checks the members of every message.
func foldedSpelling(body []byte, isKey func(string) bool, inMessages bool) *apiError {
	it := jsonx.Object(body, false)
	for {
		q, v, ok := it.Next()
		if !ok {
			return nil
		}
		name, ok := jsonx.Unquote(q)
		if !ok {
			continue
		}
		if k, folded := foldedName(name, isKey); folded {
			return unknownParam(name, k)
		}
		if !inMessages || name != "messages" || v[0] != '[' {
			continue
		}
		msgs := jsonx.Array(v, false)
		for i := 0; ; i++ {
			_, m, ok := msgs.Next()
			if !ok {
				break
			}
			if m[0] != '{' {
				continue
			}
			if n, k, folded := foldedMember(m, isMessageKey); folded {
				return unknownParam(fmt.Sprintf("messages[%d].%s", i, n), k)
			}
		}
	}
}

// foldedPart refuses a member of a content part (of message i) spelled as foldedSpelling
// refuses one: the gateway reads parts with encoding/json, for the auto-router's text
// ({"type":"text","text":"…","Text":"…"} classified on "Text") and for images ({"type":"image_url",
// "Type":"text"} judged to need no vision), while a Python upstream reads the exact names
// (TestFoldedPartRefused). A part whose keys are plain lower case, nearly all, costs a byte scan.
func foldedPart(content []byte, i int) *apiError {
	parts := jsonx.Array(content, false)
	for j := 0; ; j++ {
		_, p, ok := parts.Next()
		if !ok {
			return nil
		}
		if p[0] != '{' {
			continue
		}
		if n, k, folded := foldedMember(p, isPartKey); folded {
			return unknownParam(fmt.Sprintf("messages[%d].content[%d].%s", i, j, n), k)
		}
	}
}

// foldedMember returns the first member of the object obj whose name is not a field isKey names
// but folds to one (foldedName), with that field. A name in plain lower-case ASCII, nearly all,
// cannot fold to anything else and costs a byte scan.
func foldedMember(obj []byte, isKey func(string) bool) (name, field string, found bool) {
	members := jsonx.Object(obj, false)
	for {
		q, _, ok := members.Next()
		if !ok {
			return "", "", false
		}
		if raw, plain := jsonx.PlainKey(q); plain && !mayFold(raw) {
			continue
		}
		if n, ok := jsonx.Unquote(q); ok {
			if k, folded := foldedName(n, isKey); folded {
				return n, k, true
			}
		}
	}
}

// isPartKey reports a content part's member the gateway reads (hasImages, the auto-router).
func isPartKey(name string) bool { return name == "type" || name == "text" || name == "image_url" }

// mayFold reports whether a name has a byte that could fold into a lower-case ASCII letter of
// another name: an upper-case ASCII letter, or any non-ASCII byte (K, the Kelvin sign, and ſ).
func mayFold(b []byte) bool {
	for _, c := range b {
		if c >= 'A' && c <= 'Z' || c >= 0x80 {
			return true
		}
	}
	return false
}

// foldedName reports whether name is not a field isKey names but equals one under Unicode
// simple case folding, as encoding/json matches names, and returns that field. The fields are
// lower-case ASCII, which only ASCII letters, K (U+212A, Kelvin) and ſ (U+017F, long s) fold to.
func foldedName(name string, isKey func(string) bool) (string, bool) {
	if isKey(name) {
		return "", false
	}
	var buf [32]byte
	n := 0
	for _, r := range name {
		switch {
		case n == len(buf):
			return "", false // longer than any field name
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case r == '\u212a':
			r = 'k'
		case r == '\u017f':
			r = 's'
		case r >= utf8.RuneSelf:
			return "", false
		}
		buf[n] = byte(r)
		n++
	}
	k := string(buf[:n])
	return k, k != name && isKey(k)
}

// unknownParam refuses the member param, a spelling of the field named field, in OpenAI's words
// for a name it does not know.
func unknownParam(param, field string) *apiError {
	return badRequest(param, "unknown_parameter", fmt.Sprintf(
		"Unknown parameter: '%s'. Names are case-sensitive: did you mean '%s'?", param, field))
}

func isMessageKey(name string) bool {
	switch name {
	case "role", "content", "name", "tool_calls", "tool_call_id", "refusal", "reasoning_content", "reasoning":
		return true
	}
	return false
}

// foldsTo reports whether the plain key name, which matched no field exactly, would still match
// one case-insensitively in encoding/json. Field names are lower case, so only a name with an upper
// case letter can.
func foldsTo(name []byte, isKey func(string) bool) bool {
	var buf [32]byte
	if len(name) > len(buf) {
		return false // longer than any field name
	}
	upper := false
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
			upper = true
		}
		buf[i] = c
	}
	return upper && isKey(string(buf[:len(name)]))
}

// walkMessages reads the messages array that it, the body's walk, stopped at (Key), with
// contents and tool calls in place, into buf's array (nil: a new one), and moves it past the
// array. The array and each message are walked member by member as the body's walk validates
// them (jsonx.Iter.Enter), so that a message's bytes are read once, not scanned whole as the
// array's value and then twice more to take it apart.
func walkMessages(it *jsonx.Iter, buf []core.Message) ([]core.Message, bool) {
	switch it.At() {
	case 'n':
		_, ok := it.Value()
		return nil, ok
	case '[':
	default:
		return nil, false
	}
	arr, ok := it.Enter()
	if !ok {
		return nil, false
	}
	msgs := buf[:0]
	if msgs == nil {
		msgs = make([]core.Message, 0, 4) // non-nil even when empty, as encoding/json decodes []
	}
	for {
		if _, ok := arr.Key(); !ok {
			return msgs, it.Resume(&arr)
		}
		var m core.Message
		switch arr.At() {
		case 'n': // null decodes to the zero message, which then lacks a role
			if _, ok := arr.Value(); !ok {
				return nil, false
			}
		case '{':
			obj, ok := arr.Enter()
			if !ok || !walkMessage(&obj, &m) || !arr.Resume(&obj) {
				return nil, false
			}
		default:
			return nil, false
		}
		msgs = append(msgs, m)
	}
}

// walkMessage reads a message's members from it, the walk Enter started over it, to its end.
func walkMessage(it *jsonx.Iter, m *core.Message) bool {
	for {
		q, v, ok := it.Next()
		if !ok {
			return it.Done()
		}
		name, plain := jsonx.PlainKey(q)
		if !plain {
			return false
		}
		switch string(name) {
		case "role":
			ok = setString(&m.Role, v)
		case "content":
			m.Content = v
		case "name":
			ok = setString(&m.Name, v)
		case "tool_calls":
			m.ToolCalls = v
		case "tool_call_id":
			ok = setString(&m.ToolCallID, v)
		case "refusal":
			m.Refusal = v
		case "reasoning_content":
			m.ReasoningContent = v
		case "reasoning":
			m.Reasoning = v
		default:
			ok = !foldsTo(name, isMessageKey)
		}
		if !ok {
			return false
		}
	}
}

// The setters take a validated JSON value and store it as encoding/json would into a field of
// their type (an opt standing for a pointer): null leaves a string or bool alone and sets a
// pointer to nil; a value of another type (or a number out of range) is false, for
// encoding/json to report.

func setString(p *string, v []byte) bool {
	switch v[0] {
	case 'n':
		return true
	case '"':
		*p = internString(v)
		return true
	}
	return false
}

// internString unquotes a validated string literal, without allocating for the usual roles.
func internString(v []byte) string {
	switch string(v) {
	case `"user"`:
		return "user"
	case `"assistant"`:
		return "assistant"
	case `"system"`:
		return "system"
	case `"tool"`:
		return "tool"
	case `"developer"`:
		return "developer"
	}
	s, _ := jsonx.Unquote(v)
	return s
}

func setOptString(p *opt[string], v []byte) bool {
	switch v[0] {
	case 'n':
		*p = opt[string]{}
		return true
	case '"':
		*p = opt[string]{V: internString(v), Set: true}
		return true
	}
	return false
}

// setModel is setOptString, taking the string from names when the literal has no escape and
// names has it: a literal without a backslash unquotes to its own bytes when they are valid UTF-8,
// as a name in names is.
func setModel(p *opt[string], v []byte, names map[string]string) bool {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 {
		if name, ok := names[string(v[1:len(v)-1])]; ok {
			*p = opt[string]{V: name, Set: true}
			return true
		}
	}
	return setOptString(p, v)
}

func setBool(p *bool, v []byte) bool {
	switch v[0] {
	case 'n':
	case 't':
		*p = true
	case 'f':
		*p = false
	default:
		return false
	}
	return true
}

func isNumber(v []byte) bool { return v[0] == '-' || v[0] >= '0' && v[0] <= '9' }

func setOptInt(p *opt[int], v []byte) bool {
	var n int64
	if !parseInt(&n, v, strconv.IntSize) {
		return false
	}
	if v[0] == 'n' {
		*p = opt[int]{}
		return true
	}
	*p = opt[int]{V: int(n), Set: true}
	return true
}

func setOptInt64(p *opt[int64], v []byte) bool {
	var n int64
	if !parseInt(&n, v, 64) {
		return false
	}
	if v[0] == 'n' {
		*p = opt[int64]{}
		return true
	}
	*p = opt[int64]{V: n, Set: true}
	return true
}

// parseInt parses an integer of the given size as encoding/json does (strconv.ParseInt of the
// number's text, so 1.0 and 1e3 are errors); null is accepted and leaves *p alone.
func parseInt(p *int64, v []byte, bits int) bool {
	if v[0] == 'n' {
		return true
	}
	if !isNumber(v) {
		return false
	}
	n, err := strconv.ParseInt(string(v), 10, bits)
	if err != nil {
		return false
	}
	*p = n
	return true
}

func setOptFloat(p *opt[float64], v []byte) bool {
	if v[0] == 'n' {
		*p = opt[float64]{}
		return true
	}
	if !isNumber(v) {
		return false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return false
	}
	*p = opt[float64]{V: f, Set: true}
	return true
}

// belowMin is OpenAI's refusal of the integer field name whose value v is below min.
func belowMin[I int | int64](name string, v I, least int) *apiError {
	return badRequest(name, "integer_below_min_value", fmt.Sprintf(
		"Invalid '%s': integer below minimum value. Expected a value >= %d, but got %d instead.", name, least, v))
}

// checkToolChoice refuses a tool_choice that no target can honour, as OpenAI and vLLM do, so that
// every target answers it alike instead of each its own way (an OpenAI-compatible server's 400,
// Ollama's refusal, or a model that calls another tool): a mode that is none of "none", "auto"
// and "required"; "required" or a named function with no tools to call; a named function that
// tools does not define. "none" and "auto" without tools are harmless and pass, and so does
// every other object (allowed_tools, custom tools), which the targets judge.
func checkToolChoice(tools, choice json.RawMessage) *apiError {
	choice = bytes.TrimSpace(choice)
	if len(choice) == 0 || string(choice) == "null" {
		return nil
	}
	hasTools := core.NonEmptyArray(tools)
	if choice[0] == '"' {
		var mode string
		if json.Unmarshal(choice, &mode) != nil {
			return nil // not a string kinds let through: the kind check says so
		}
		switch mode {
		case "none", "auto":
			return nil
		case "required":
			if !hasTools {
				return badRequest("tool_choice", "invalid_value",
					"Invalid value for 'tool_choice': \"required\" is only allowed when 'tools' are specified.")
			}
			return nil
		}
		return badRequest("tool_choice", "invalid_value", fmt.Sprintf(
			"Invalid value for 'tool_choice': \"%s\" (expected \"none\", \"auto\", \"required\" or an object naming a function).",
			echo.String(mode)))
	}
	// An allowed_tools choice, in either shape (core.AllowedFunctions), lists functions that must
	// be declared as a named one must: an openai target was sent one that listed another, and
	// the ollama adapter refused it its own way (TestToolChoiceNamesUndeclaredTool). One that
	// lists none (an empty list, custom tools alone) offers no function and is let through, and
	// so is one sent without tools, which offers nothing (a target without tools serves it, sent
	// no tool_choice: TestToolChoiceWithoutToolsNotSentToATargetWithout).
	// It is looked for by its bytes first, so that a named function's choice is not decoded twice.
	if bytes.Contains(choice, []byte(`allowed_tools`)) {
		if names, param, ok := core.AllowedFunctions(choice); ok {
			if len(names) == 0 || !hasTools {
				return nil
			}
			return undeclaredFunction(tools, names, param)
		}
	}
	// A named function, in chat's shape ({"type":"function","function":{"name":…}}) or in the
	// Responses API's, which the gateway takes on chat too (the ollama adapter's namedTool reads
	// both, the function's name first): each is refused naming the member that names it.
	var named struct {
		Type     string  `json:"type"`
		Name     *string `json:"name"`
		Function *struct {
			Name *string `json:"name"`
		} `json:"function"`
	}
	if choice[0] != '{' || json.Unmarshal(choice, &named) != nil || named.Type != "function" {
		return nil
	}
	var name, param string
	switch {
	case named.Function != nil && named.Function.Name != nil:
		name, param = *named.Function.Name, "tool_choice.function.name"
	case named.Name != nil:
		name, param = *named.Name, "tool_choice.name"
	default:
		return nil
	}
	if !hasTools {
		return badRequest("tool_choice", "invalid_value",
			"Invalid value for 'tool_choice': a named function is only allowed when 'tools' are specified.")
	}
	return undeclaredFunction(tools, []string{name}, param)
}

// undeclaredFunction refuses the first of names, functions a tool_choice names (param: the
// member that names them), that tools declare no function of; tools that cannot be read are the
// targets' to judge. tools are read once, whatever the number of names.
func undeclaredFunction(tools json.RawMessage, names []string, param string) *apiError {
	var defs []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(tools, &defs) != nil {
		return nil // tools' own shape is the targets' to judge
	}
	declared := make(map[string]bool, len(defs))
	for _, d := range defs {
		if d.Type == "function" || d.Type == "" {
			declared[d.Function.Name] = true
		}
	}
	for _, name := range names {
		if !declared[name] {
			return badRequest(param, "invalid_value", fmt.Sprintf(
				"Invalid value for '%s': \"%s\" is not a function defined in 'tools'.", param,
				echo.String(name)))
		}
	}
	return nil
}
