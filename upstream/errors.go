package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/coding"
)

// maxErrorBody caps what is kept of a non-2xx body.
const maxErrorBody = 64 << 10

// NotSSEError is a streaming request answered 200 with something other than text/event-stream,
// typically a whole chat.completion JSON from a server that ignored "stream": true. The gateway
// cannot relay it as a stream, so it travels inside a *core.ProtocolError.
type NotSSEError struct {
	ContentType string
	Body        []byte // capped at 64 KiB
}

func (e *NotSSEError) Error() string {
	snippet := e.Body
	if len(snippet) > 200 {
		snippet = snippet[:200]
	}
	return fmt.Sprintf("stream requested but upstream answered %q: %s", e.ContentType, bytes.TrimSpace(snippet))
}

// Unquoted is the error without the body's bytes, which may be the answer itself (core.Quoting).
func (e *NotSSEError) Unquoted() string {
	return fmt.Sprintf("stream requested but upstream answered %q (%d bytes, not logged)", e.ContentType, len(e.Body))
}

// CodedAnswerError is a 2xx answer in a content coding (Content-Encoding: gzip…), which the
// gateway asked not to get and does not decode; it travels inside a *core.ProtocolError.
type CodedAnswerError struct {
	Coding string // the answer's Content-Encoding, its values joined
}

func (e *CodedAnswerError) Error() string {
	return fmt.Sprintf("answered in Content-Encoding %q, which it asked not to get (Accept-Encoding: identity) and does not decode", e.coding())
}

// coding is Coding cut to what an error quotes of an upstream's header.
func (e *CodedAnswerError) coding() string {
	c := e.Coding
	if len(c) > maxQuote {
		c = strings.ToValidUTF8(c[:maxQuote], "")
	}
	return c
}

// quotedError is an adapter's error whose text ends with the upstream's words: what it says
// without them is what, and the log has only that (core.Quoting).
type quotedError struct {
	what, words string
}

func (e *quotedError) Error() string { return e.what + ": " + e.words }

// Unquoted is what without the upstream's words.
func (e *quotedError) Unquoted() string {
	return fmt.Sprintf("%s: [the upstream's words: %d bytes, not logged]", e.what, len(e.words))
}

var (
	_ core.Quoting = (*NotSSEError)(nil)
	_ core.Quoting = (*NotJSONError)(nil)
	_ core.Quoting = (*ErrorAnswerError)(nil)
	_ core.Quoting = (*ChoiceFailedError)(nil)
	_ core.Quoting = (*quotedError)(nil)
)

// notEventStream is the error for a 2xx answer to a stream request whose Content-Type ct is not
// an event stream: a *core.ProtocolError with the start of the body, read and closed here. A body
// that fails while read (the idle timeout, the caller gone) is a *core.StreamError wrapping that
// failure instead, as readAnswer's is, so that errmap classifies what happened rather than the
// bytes that came before it.
func notEventStream(t *core.Target, resp *http.Response, ct string) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	if err != nil {
		return &core.StreamError{Target: t.Name, Message: "upstream broke off the response body: " + err.Error(), Err: err}
	}
	body = redact(body, t.APIKey)
	if looksLikeObject(body) {
		if msg, ok := errorEvent(nil, body); ok {
			// An error object answered 200 to a stream request, as to a whole one
			// (TestRealUpstreamErrors): what it says is the upstream's failure.
			return &core.ProtocolError{Target: t.Name, Err: &ErrorAnswerError{Message: msg}}
		}
	}
	return &core.ProtocolError{Target: t.Name, Err: &NotSSEError{ContentType: ct, Body: body}}
}

// redact is b with every copy of key replaced by "[redacted]", for an answer an error quotes the
// start of (NotJSONError, NotSSEError, a stream line's snippet). An upstream may echo the
// Authorization header it was sent, and the server's redaction looks for the whole key: a cut
// that fell inside the key would leave it a piece it cannot find, for the client and the log.
func redact(b []byte, key core.Secret) []byte {
	if key == "" || !bytes.Contains(b, []byte(key)) {
		return b
	}
	return bytes.ReplaceAll(b, []byte(key), []byte("[redacted]"))
}

// transportError maps a failed http.Client.Do to the core types.
func transportError(ctx context.Context, t *core.Target, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("upstream %s: %w", t.Name, ctxErr)
	}
	var ue *url.Error
	inner := err
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	// A dial that timed out never reached the server: that is a connection failure, unlike a
	// server that accepted the request and then said nothing in time.
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return &core.ConnError{Target: t.Name, Err: inner}
	}
	if ie, ok := errors.AsType[*IdleTimeoutError](err); ok {
		return ie // a 2xx head came while the request was being written, and then nothing
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &core.TimeoutError{Target: t.Name, After: t.Timeout}
	}
	if bad, ok := errors.AsType[*badAnswerError](err); ok {
		// The server answered, with something that is not HTTP/1.1: its fault, not the
		// connection's, and the client is told so (bad_upstream_response) rather than that the
		// upstream was unreachable. The key is redacted before the quote is cut (see
		// badAnswerError).
		return &core.ProtocolError{Target: t.Name, Err: bad.quoted(string(t.APIKey))}
	}
	if bad, ok := errors.AsType[*unreadableAnswerError](err); ok {
		// The same from net/http's client (https://, proxied targets): as a connection failure
		// it told the client a cause the upstream had not given, and the log the line whole, the
		// key in it when the upstream echoed it (TestMalformedHeadParity).
		return &core.ProtocolError{Target: t.Name, Err: bad.quoted(string(t.APIKey))}
	}
	return &core.ConnError{Target: t.Name, Err: inner}
}

// statusError reads a non-2xx answer into a *core.StatusError. The body is closed. The header
// is read, and copied, first: the synchronous client's next answer on the connection may reuse
// its map once the body has ended. A 429 without a readable Retry-After header takes its wait
// from the headers an aggregator relays in the body instead (bodyRetryAfter).
func statusError(t *core.Target, resp *http.Response, now func() time.Time) *core.StatusError {
	wait := retryAfterMs(resp.Header.Get("Retry-After-Ms"))
	if wait <= 0 {
		wait = retryAfter(resp.Header.Get("Retry-After"), now)
	}
	e := &core.StatusError{
		Target:     t.Name,
		Status:     resp.StatusCode,
		RetryAfter: wait,
		Header:     resp.Header.Clone(),
	}
	var body []byte
	if ce, ok := resp.Header["Content-Encoding"]; ok && !coding.Identity(ce) {
		// Asked for identity, some servers code every answer anyway (a reverse proxy in front
		// of vLLM or Ollama that gzips whatever it sends): an error's words are what tell an
		// overflow, a bad key or a missing model, so a coding the standard library decodes is
		// decoded, and the body is read as it would have been plain (TestCodedErrorBodyRead).
		// Any other, or a body that does not decode, has no words to read: quoted, its bytes
		// would be binary. The client is told the body was coded (TestCodedErrorBodySaid).
		// Left unread, the connection is closed, not reused.
		var decoded bool
		body, decoded = coding.Decode(ce, resp.Body, maxErrorBody)
		_ = resp.Body.Close()
		if !decoded {
			e.Coding = (&CodedAnswerError{Coding: strings.Join(ce, ", ")}).coding()
			return e
		}
	} else {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
	}
	e.Body = body
	e.Message, e.Type, e.Code, e.Param = errorFields(body)
	if e.Status == http.StatusTooManyRequests && e.RetryAfter <= 0 {
		// No header, or one that says no wait (unreadable, past, absurd): the body may, or the
		// rate-limit headers OpenAI and Groq send, which errmap weighs (a quota's say nothing).
		e.RetryAfter = bodyRetryAfter(body, now)
		if e.RetryAfter <= 0 {
			e.LimitReset = limitReset(e.Header)
		}
	}
	return e
}

// retryAfterMs parses a retry-after-ms header, which OpenAI sends beside Retry-After and its
// SDKs read first: the wait in milliseconds, finer than Retry-After's whole seconds. 0 when absent,
// unreadable, not positive or absurd; Retry-After is read then.
func retryAfterMs(v string) time.Duration {
	ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(ms > 0 && ms <= maxRetryAfter.Seconds()*1000) {
		return 0
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// limitReset is the wait a 429's x-ratelimit-* headers name, as OpenAI and Groq send them:
// x-ratelimit-remaining-requests and -tokens, what is left of each limit, and
// x-ratelimit-reset-requests and -tokens, the time until it is whole again as a Go-style duration
// ("1s", "6m0s", "2m59.56s", "12ms"; a bare number is taken for seconds). The wait is the reset
// of the limit that ran out (remaining "0"), the longer when both did; when neither did, the
// tokens' (a request larger than the tokens left). 0 when no reset is readable, past or absurd
// (TestRetryAfterFromRateLimitHeaders); the cooldown is then the doubling's.
func limitReset(h http.Header) time.Duration {
	var wait time.Duration
	ranOut := false
	for _, limit := range [...]struct{ remaining, reset string }{
		{"X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"},
		{"X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"},
	} {
		if strings.TrimSpace(h.Get(limit.remaining)) == "0" {
			ranOut = true
			wait = max(wait, resetDuration(h.Get(limit.reset)))
		}
	}
	if !ranOut && h.Get("X-Ratelimit-Remaining-Tokens") != "" {
		wait = resetDuration(h.Get("X-Ratelimit-Reset-Tokens"))
	}
	return wait
}

// resetDuration reads an x-ratelimit-reset-* value: a Go-style duration, or a number of seconds;
// 0 when unreadable, not positive or absurd.
func resetDuration(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if d, err := time.ParseDuration(v); err == nil {
		return plausible(d)
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 && secs <= maxRetryAfter.Seconds() {
		return time.Duration(secs * float64(time.Second))
	}
	return 0
}

// bodyRetryAfter is the wait a 429's body names in the rate-limit headers it relays under
// error.metadata.headers, as OpenRouter does: its own limits as X-RateLimit-Reset, in
// milliseconds since the epoch ({"error":{"message":"Rate limit exceeded: free-models-per-min.",
// "code":429,"metadata":{"headers":{"X-RateLimit-Limit":"20","X-RateLimit-Remaining":"0",
// "X-RateLimit-Reset":"1741305600000"}}}}), a provider's 429 as that provider's Retry-After,
// which is taken first. Header names match in any case; either value may be a string or a
// number. It is read as a Retry-After header is: 0 when absent, unreadable, past, or absurd.
func bodyRetryAfter(body []byte, now func() time.Time) time.Duration {
	var env struct {
		Error struct {
			Metadata struct {
				Headers map[string]json.RawMessage `json:"headers"`
			} `json:"metadata"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil {
		return 0
	}
	var reset time.Duration
	for k, v := range env.Error.Metadata.Headers {
		switch {
		case strings.EqualFold(k, "Retry-After"):
			if d := retryAfter(text(v), now); d > 0 {
				return d
			}
		case strings.EqualFold(k, "X-RateLimit-Reset"):
			reset = resetAfter(text(v), now)
		}
	}
	return reset
}

// resetAfter is the wait until a rate-limit reset given in milliseconds since the epoch; 0 when
// v is not an integer, or the reset is past or absurd. A reset given in seconds reads as a
// moment in January 1970, long past, and so is ignored rather than taken for a wait of decades.
func resetAfter(v string, now func() time.Time) time.Duration {
	ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0
	}
	return plausible(time.UnixMilli(ms).Sub(now()))
}

// maxRetryAfter bounds a wait an upstream asks for: anything longer (about 32 years) is a broken
// value, not a wait, and is ignored.
const maxRetryAfter = 1e9 * time.Second

// plausible is d when it is a wait an upstream can mean (positive, at most maxRetryAfter), else 0.
func plausible(d time.Duration) time.Duration {
	if d <= 0 || d > maxRetryAfter {
		return 0
	}
	return d
}

// errorFields reads the OpenAI error fields from an error body. Besides OpenAI's
// {"error":{"message","type","code","param"}} it accepts the shapes local servers use: Ollama's
// {"error":"…"}, older vLLM's top-level {"object":"error","message",…}, FastAPI's {"detail":…}.
// code may be a number upstream (vLLM, llama-server send 400); it is kept as its text.
func errorFields(body []byte) (message, typ, code, param string) {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
		Param   json.RawMessage `json:"param"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &env) != nil {
		return "", "", "", ""
	}
	if len(env.Error) > 0 && env.Error[0] == '{' {
		var inner struct {
			Message json.RawMessage `json:"message"`
			Type    json.RawMessage `json:"type"`
			Code    json.RawMessage `json:"code"`
			Param   json.RawMessage `json:"param"`
		}
		if json.Unmarshal(env.Error, &inner) == nil {
			return text(inner.Message), text(inner.Type), text(inner.Code), text(inner.Param)
		}
	}
	if m := text(env.Error); m != "" {
		return m, "", "", ""
	}
	if m := text(env.Message); m != "" {
		return m, text(env.Type), text(env.Code), text(env.Param)
	}
	return text(env.Detail), "", "", ""
}

// text is a JSON value as a string: a string's contents, null as "", anything else as written.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP-date. Past dates, negative,
// unparseable or absurd (over maxRetryAfter) values are 0.
func retryAfter(v string, now func() time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if !(secs > 0 && secs <= maxRetryAfter.Seconds()) { // so that NaN is refused too
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	when, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return plausible(when.Sub(now()))
}

// IdleTimeoutError is an answer whose body sent nothing for the target's idle timeout once its
// head had come. It wraps a *core.TimeoutError, so that errmap classifies it as a timeout like a
// head that did not come; its own message says which wait ran out.
type IdleTimeoutError struct {
	Timeout *core.TimeoutError
}

func newIdleTimeoutError(target string, after time.Duration) *IdleTimeoutError {
	return &IdleTimeoutError{Timeout: &core.TimeoutError{Target: target, After: after, Idle: true}}
}

func (e *IdleTimeoutError) Error() string {
	return fmt.Sprintf("no bytes of the answer's body for %s (idle_timeout)", e.Timeout.After)
}

func (e *IdleTimeoutError) Unwrap() error { return e.Timeout }
