package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxBody caps what is kept of one response; conformance never needs more
// and a runaway stream must not exhaust memory.
const maxBody = 8 << 20

// exchange is one probe's request and what came back, kept raw so every
// check can judge it and quote it.
type exchange struct {
	method, path string
	reqBody      []byte

	err    error // transport error: no (complete) response
	status int
	header http.Header
	body   []byte
	// json is the decoded body when it was JSON (nil otherwise).
	json    any
	jsonErr error
	// stream is the parsed body when it was an event stream.
	stream *sseStream
	// chunks are the stream's data events decoded, in order; an entry is
	// nil when that event's data was not JSON.
	chunks []any

	// skip, when set, makes every check on this probe SKIP with it as the
	// reason (endpoint absent, feature refused, precondition missing).
	skip string

	// sdk holds what the SDK-driven probes observed.
	sdk *sdkResult

	// throttled is the answer this exchange retried (a 429, or a 503 with
	// Retry-After: see transient), kept for errors.retry_after; nil when the
	// first answer is the one above.
	throttled *exchange
}

func (x *exchange) contentType() string {
	if x.header == nil {
		return ""
	}
	mt, _, err := mime.ParseMediaType(x.header.Get("Content-Type"))
	if err != nil {
		return strings.ToLower(x.header.Get("Content-Type"))
	}
	return mt
}

// errorMessage digs a human-readable message out of an error body, whatever
// its shape, for SKIP reasons.
func (x *exchange) errorMessage() string {
	for _, p := range [][]any{{"error", "message"}, {"message"}, {"error"}, {"detail"}} {
		if v, ok := at(x.json, p...); ok {
			if s, ok := v.(string); ok {
				return clip(s, 120)
			}
		}
	}
	return clip(strings.TrimSpace(string(x.body)), 120)
}

// errorInside finds an error where a 200's result belongs: a JSON body, or
// a stream chunk, that is an error object (the "error" envelope, or vLLM's
// flat {"object": "error"}) instead of a completion. The server failed that
// request, and openai-go reports a streamed one as an error; judging its
// fields one by one would report each as absent and hide the message. A
// stream may also fail before its first event, its body a JSON error, or
// name its error in an "error:" line (llama.cpp), which SSE clients ignore.
func (x *exchange) errorInside() (where string, ok bool) {
	if x.status != http.StatusOK {
		return "", false
	}
	if x.errorInBody() {
		return "the body", true
	}
	if x.stream == nil {
		return "", false
	}
	for i, c := range x.chunks {
		if isErrorObject(c) {
			return fmt.Sprintf("data event %d", i), true
		}
	}
	if x.stream.ErrorField != "" {
		return `an "error:" line`, true
	}
	return "", false
}

// errorInBody: the body itself is an error object, as a JSON answer or as a
// stream's body with no event in it.
func (x *exchange) errorInBody() bool {
	return isErrorObject(x.json) && (x.stream == nil || len(x.stream.Events) == 0)
}

func isErrorObject(v any) bool {
	m, ok := asObject(v)
	if !ok {
		return false
	}
	if m["object"] == "error" {
		return true
	}
	_, hasChoices := m["choices"]
	_, hasData := m["data"]
	return m["error"] != nil && !hasChoices && !hasData
}

// errorInsideMessage is the message of the error errorInside found, and the
// raw text it came in for the excerpt's focus when it was streamed.
func (x *exchange) errorInsideMessage() (msg, focus string) {
	if x.stream == nil || x.errorInBody() {
		return (&exchange{json: x.json}).errorMessage(), ""
	}
	for i, c := range x.chunks {
		if isErrorObject(c) {
			return (&exchange{json: c}).errorMessage(), x.stream.dataEvents()[i].Data
		}
	}
	if f := x.stream.ErrorField; f != "" {
		// llama.cpp's value is an error object without the envelope; any other
		// text is its own message.
		if v, err := decodeJSON([]byte(f)); err == nil {
			if msg := (&exchange{json: v}).errorMessage(); msg != "" {
				return msg, f
			}
		}
		return clip(f, 120), f
	}
	return "", ""
}

// statusLine summarises the response for evidence.
func (x *exchange) statusLine() string {
	if x.err != nil && x.status != 0 {
		return fmt.Sprintf("HTTP %d, then %v after %d bytes", x.status, x.err, len(x.body))
	}
	if x.err != nil {
		return "request failed: " + x.err.Error()
	}
	s := fmt.Sprintf("HTTP %d", x.status)
	if ct := x.header.Get("Content-Type"); ct != "" {
		s += " (" + ct + ")"
	}
	if x.status >= 400 {
		s += ": " + x.errorMessage()
	}
	return s
}

// excerptAt is the short copy of the raw exchange that goes into evidence.
// The quoted answer starts at the line holding focus, when given and found.
func (x *exchange) excerptAt(focus string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "> %s %s\n", x.method, x.path)
	if len(x.reqBody) > 0 {
		fmt.Fprintf(&b, "> %s\n", clip(string(x.reqBody), 300))
	}
	if x.err != nil && x.status == 0 {
		fmt.Fprintf(&b, "< (no response: %v)", x.err)
		return b.String()
	}
	fmt.Fprintf(&b, "< HTTP %d", x.status)
	if ct := x.header.Get("Content-Type"); ct != "" {
		fmt.Fprintf(&b, " Content-Type: %s", ct)
	}
	b.WriteString("\n")
	// Blank lines (SSE event separators) are dropped: they carry nothing a
	// reader needs and would halve what fits.
	body := string(x.body)
	if i := strings.Index(body, focus); focus != "" && i > 0 {
		if nl := strings.LastIndex(body[:i], "\n"); nl >= 0 {
			b.WriteString("< …\n")
			body = body[nl+1:]
		}
	}
	text := clip(body, 900)
	if x.err != nil && len(body) > 900 {
		// The answer broke off (a stream that never ended, a reset):
		// where it stopped is what the reader needs, so its tail.
		text = body[len(body)-900:]
		if nl := strings.Index(text, "\n"); nl >= 0 {
			text = text[nl+1:]
		}
		lines := strings.Split(strings.TrimSpace(text), "\n")
		var kept []string
		for _, l := range lines {
			if strings.TrimSpace(l) != "" {
				kept = append(kept, l)
			}
		}
		text = strings.Join(kept[max(0, len(kept)-10):], "\n")
		b.WriteString("< …\n")
	}
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if n == 10 {
			b.WriteString("< …\n")
			break
		}
		fmt.Fprintf(&b, "< %s\n", clip(line, 240))
		n++
	}
	if x.err != nil {
		fmt.Fprintf(&b, "< (answer broken off: %v)", x.err)
	}
	return strings.TrimRight(b.String(), "\n")
}

// client speaks raw HTTP to the server under test; no SDK in the way, so the
// checks see exactly what came over the wire.
type client struct {
	root    string // ".../v1", no trailing slash
	apiKey  string
	hc      *http.Client
	timeout time.Duration
	now     func() time.Time
	sleep   func(context.Context, time.Duration) error
}

// maxRetryWait bounds the wait before a throttled request is sent again, so
// a Retry-After of an hour cannot stall the run.
const maxRetryWait = 10 * time.Second

// retryWait is how long to wait after a 429: what Retry-After asks (seconds
// or an HTTP date), 1s when it asks nothing usable, never more than
// maxRetryWait or the request timeout.
func retryWait(h http.Header, now time.Time, timeout time.Duration) time.Duration {
	d := time.Second
	v := strings.TrimSpace(h.Get("Retry-After"))
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		// Compared before it is multiplied: a number of seconds past what a Duration holds
		// wrapped to a negative wait, the request sent again at once.
		d = maxRetryWait
		if n < uint64(maxRetryWait/time.Second) {
			d = time.Duration(n) * time.Second
		}
	} else if t, err := http.ParseTime(v); err == nil {
		d = max(t.Sub(now), 0)
	}
	return min(d, maxRetryWait, timeout)
}

// do sends r, and once more after the server's Retry-After when its answer
// is transient: the reference allows a rate limit on any endpoint, and a run
// of thirty requests, four at a time, meets one on hosted servers and
// proxies. A conformance failure is such an answer that persists.
func (c *client) do(ctx context.Context, r request) *exchange {
	x := c.once(ctx, r)
	if x.err != nil || !transient(x.status, x.header) {
		return x
	}
	if err := c.sleep(ctx, retryWait(x.header, c.now(), c.timeout)); err != nil {
		return x
	}
	again := c.once(ctx, r)
	again.throttled = x
	return again
}

// transient says whether an answer asks to be tried again later: a 429, or a
// 503 that says when with Retry-After (RFC 9110: the server is unavailable
// for that long, loading a model or shedding load; OpenAI answers 503 when
// overloaded, and its SDKs try again). A 503 without it is judged as it is.
func transient(status int, h http.Header) bool {
	return status == http.StatusTooManyRequests ||
		status == http.StatusServiceUnavailable && validRetryAfter(h.Get("Retry-After"))
}

type request struct {
	method string
	path   string // below root, e.g. "/chat/completions"
	body   any    // marshalled as JSON unless raw is set
	raw    []byte
	// key overrides the API key (for the bad-key probe).
	key    string
	noKey  bool // send no Authorization header at all
	stream bool // parse the answer as an event stream
}

func (c *client) once(ctx context.Context, r request) *exchange {
	x := &exchange{method: r.method, path: "/v1" + r.path}
	switch {
	case r.raw != nil:
		x.reqBody = r.raw
	case r.body != nil:
		b, err := json.Marshal(r.body)
		if err != nil {
			x.err = err
			return x
		}
		x.reqBody = b
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var body io.Reader
	if x.reqBody != nil {
		body = bytes.NewReader(x.reqBody)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.root+r.path, body)
	if err != nil {
		x.err = err
		return x
	}
	if x.reqBody != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	key := c.apiKey
	if r.key != "" {
		key = r.key
	}
	if key != "" && !r.noKey {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		x.err = timedOut(err, c.timeout, "began")
		return x
	}
	defer res.Body.Close()
	x.status = res.StatusCode
	x.header = res.Header
	x.body, err = io.ReadAll(&capBody{rc: res.Body, left: maxBody})
	// The key a server repeats is removed before any judge reads the answer or any excerpt of it
	// is cut (a cut could leave part of it): see hideKey.
	x.body = hideKeyIn(x.body, c.apiKey)
	for _, vs := range x.header {
		for i, v := range vs {
			vs[i] = string(hideKeyIn([]byte(v), c.apiKey))
		}
	}
	if err != nil {
		x.err = fmt.Errorf("reading body: %w", timedOut(err, c.timeout, "ended"))
		return x
	}
	x.decode(r.stream)
	return x
}

// decode fills json or stream. A stream request is parsed as an event stream
// when the server labelled it so or it plainly is one, so a wrong
// Content-Type is reported by its own check instead of hiding every other.
func (x *exchange) decode(stream bool) {
	trimmed := bytes.TrimSpace(x.body)
	if stream && x.status == http.StatusOK &&
		(x.contentType() == "text/event-stream" || bytes.HasPrefix(trimmed, []byte("data:"))) {
		x.stream = parseSSE(bytes.NewReader(x.body))
		for _, ev := range x.stream.dataEvents() {
			v, err := decodeJSON([]byte(ev.Data))
			if err != nil {
				v = nil
			}
			x.chunks = append(x.chunks, v)
		}
		if len(x.stream.Events) == 0 && len(trimmed) > 0 {
			// No event at all: the body may be a JSON error written after the stream's head
			// went out, which errorInside reports.
			x.json, x.jsonErr = decodeJSON(x.body)
		}
		return
	}
	if len(trimmed) > 0 {
		// The body itself: bytes.TrimSpace would also drop what is not
		// JSON whitespace (a form feed, U+00A0), which a client rejects.
		x.json, x.jsonErr = decodeJSON(x.body)
	}
}

// recorder is an http.RoundTripper that keeps a copy of the last exchange
// the SDK made, so SDK checks can quote the wire like the raw ones do.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	x    exchange
	buf  *cappedBuffer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil && req.GetBody != nil {
		if rc, err := req.GetBody(); err == nil {
			reqBody, _ = io.ReadAll(io.LimitReader(rc, 4096))
			rc.Close()
		}
	}
	res, err := r.base.RoundTrip(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.x = exchange{method: req.Method, path: req.URL.Path, reqBody: reqBody, err: err}
	if err != nil {
		return res, err
	}
	r.x.status = res.StatusCode
	r.x.header = res.Header
	r.buf = &cappedBuffer{max: 64 << 10}
	// The SDK reads whatever it is given: a whole 1 GB answer into memory,
	// an endless stream until the timeout. The cap is the raw client's.
	res.Body = &teeBody{rc: &capBody{rc: res.Body, left: maxBody}, w: r.buf}
	return res, nil
}

// last returns the recorded exchange with the body read so far.
func (r *recorder) last() *exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	x := r.x
	if r.buf != nil {
		x.body = r.buf.bytes()
	}
	return &x
}

type cappedBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *cappedBuffer) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.b...)
}

type teeBody struct {
	rc io.ReadCloser
	w  io.Writer
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 {
		_, _ = t.w.Write(p[:n])
	}
	return n, err
}

func (t *teeBody) Close() error { return t.rc.Close() }

// timeoutError is a request that --timeout ended: "context deadline exceeded" alone names
// neither the flag nor what it cut short, and a server that stalls mid-stream is a common fault.
type timeoutError struct {
	timeout time.Duration
	// what the timeout came before: "began" (no response head) or "ended" (the body).
	what string
	err  error
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("--timeout %v ran out before the answer %s (%v)", e.timeout, e.what, e.err)
}

func (e *timeoutError) Unwrap() error { return e.err }

// timedOut wraps err in a *timeoutError when it is the per-request deadline's.
func timedOut(err error, timeout time.Duration, what string) error {
	if errors.Is(err, context.DeadlineExceeded) && timeout > 0 {
		return &timeoutError{timeout: timeout, what: what, err: err}
	}
	return err
}

// errTooLong ends a body at maxBody. Cutting it silently would read as
// "not JSON: unexpected end" or "no [DONE]", blaming the wrong thing.
var errTooLong = fmt.Errorf("answer longer than %d MiB, more than any probe asks for", maxBody>>20)

// capBody fails a read once more than left bytes have come.
type capBody struct {
	rc   io.ReadCloser
	left int64
}

func (c *capBody) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errTooLong
	}
	// One byte beyond the cap tells "exactly maxBody" from "more".
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n + int(c.left), errTooLong
	}
	return n, err
}

func (c *capBody) Close() error { return c.rc.Close() }
