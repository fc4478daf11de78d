package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/coding"
	"github.com/hayula/gateway/internal/jsonx"
	"github.com/hayula/gateway/internal/keepalive"
)

// Response is an adapter's answer in OpenAI shape.
type Response struct {
	// Header holds extra headers for the client; may be nil. It is read only: an adapter may
	// share one map, and its values, between answers (a saif target's specialists').
	Header http.Header
	// Body is the chat.completion JSON of a non-streaming answer (Stream is nil).
	Body []byte
	// Stream yields the events of a streaming answer (Body is nil). The caller must Close it.
	Stream Stream
	// Usage are Body's token counts when the adapter built Body itself (a translation) and so
	// knows them: the caller need not parse them back out of the JSON. nil (an answer passed
	// through as the upstream sent it): read them from Body. A pointer, so that a Response
	// stays in its 64-byte allocation.
	Usage *Usage
	// UpstreamID is the upstream's own ID for the request, its answer's X-Request-Id (OpenAI's
	// and OpenRouter's carry one); "" when it sent none. It is for the gateway's log line, not
	// for the client, whose ID is the gateway's.
	UpstreamID string
	// UsageAsked: the adapter asked the upstream for the stream's usage, which the client did not
	// ask for (stream_options.include_usage, see asksUsage). The usage-only chunk (no choices)
	// that then comes is the gateway's to count, not the client's to get.
	UsageAsked bool
	// Aborted: a whole answer (Body) whose finish_reason is "abort", with something in it, relayed
	// as it came but not whole (see AbortedError); the request line says cut=aborted.
	Aborted bool

	// owner is the memory the Response and its Body live in, when Release may give it back.
	owner *h1Answer
}

// Usage is an answer's token counts, as its JSON's "usage" member reports them.
type Usage struct {
	Prompt, Completion uint64
	// Reported is false when the answer reports no count at all: nothing is counted.
	Reported bool
}

// usageCounts is the Usage of an answer whose JSON usage has the counts prompt and completion or, with
// completion -1, has no completion_tokens: what metrics.Usage reads from that JSON (a negative
// count is no count, and reads as 0).
func usageCounts(prompt, completion int) Usage {
	return Usage{Prompt: uint64(max(prompt, 0)), Completion: uint64(max(completion, 0)),
		Reported: prompt >= 0 || completion >= 0}
}

// Release gives the memory of the Response and its Body back for another answer to use, once
// the caller is done with both (the server: once the answer is written). Neither may be touched
// afterwards, and Release is called once. For a Response with nothing to give back (a stream's,
// an adapter's translation, an answer over net/http) it does nothing.
func (r *Response) Release() {
	if a := r.owner; a != nil {
		a.release()
	}
}

// Stream yields OpenAI chat.completion.chunk payloads: the bytes after "data: " of one SSE event,
// without the trailing newlines, always on one line (the newlines joining multi-line data become
// spaces, which JSON ignores). Next returns io.EOF after [DONE] (or a clean end of stream), a
// *core.StreamError when the upstream broke off or sent an error event. The slice Next returns is
// valid only until the next call to Next or Close: buffers are reused so that relaying an event
// does not allocate. Close releases the connection.
type Stream interface {
	Next() ([]byte, error)
	Close() error
}

// BufferedStream is a Stream that can tell whether its next event is already in memory. A relay
// flushes its writes to the client only when Buffered is false, so that a burst of events that
// arrived together goes out in one write while an event never waits for the upstream's next.
// Buffered may parse what is buffered, so it invalidates the slice the last Next returned.
type BufferedStream interface {
	Stream
	// Buffered reports whether Next will return without reading from the upstream: a complete
	// next event (or the stream's end) is already in memory. A buffered comment or an event that
	// yields nothing does not count.
	Buffered() bool
}

// UsageStream is a Stream that knows the usage of the answer it translates, whether or not its
// client asked for it: a translating adapter reads the counts off its upstream's own end (Ollama's
// done line, SAIF's done event) and puts them in a chunk only when stream_options.include_usage
// asked, so that what the client gets is what it asked for, while the gateway's metrics and a
// key's tpm count what the upstream reported. A stream passed through has no UsageStream: its
// usage is in its events, for the caller to read.
type UsageStream interface {
	Stream
	// Usage is the answer's token counts once the stream has read its upstream's end, the same
	// that metrics.Usage reads from the usage chunk include_usage adds; Reported is false
	// before. It allocates nothing, and stays valid after Close.
	Usage() Usage
}

// FramedStream is a stream that can hand back the event its Next returned last as its upstream
// framed it for SSE (openaiStream.Framed): see FramedEvent.
type FramedStream interface {
	Stream
	Framed() []byte
}

var _ FramedStream = (*openaiStream)(nil)

// FramedEvent is the SSE frame of ev, "data: " + ev + "\n\n", as st read it from its upstream,
// when st keeps one and ev is the very bytes inside it (changed in place, if at all); nil
// otherwise. A relay writes it in one piece where it would write the three.
func FramedEvent(st FramedStream, ev []byte) []byte {
	if st == nil || len(ev) == 0 {
		return nil
	}
	f := st.Framed()
	const head, tail = len("data: "), len("\n\n")
	if len(f) != head+len(ev)+tail || &f[head] != &ev[0] || string(f[:head]) != "data: " || string(f[len(f)-tail:]) != "\n\n" {
		return nil
	}
	return f
}

var (
	_ UsageStream = (*saifStream)(nil)
	_ UsageStream = (*ollamaStream)(nil)
)

var (
	_ BufferedStream = (*openaiStream)(nil)
	_ BufferedStream = (*saifStream)(nil)
	_ BufferedStream = (*ollamaStream)(nil)
	_ BufferedStream = (*thinkStream)(nil)
)

// Adapter sends one chat request to one target.
type Adapter interface {
	Chat(ctx context.Context, t *core.Target, req *core.Request) (*Response, error)
}

var _ Adapter = (*Set)(nil)

// Options configures a Set.
type Options struct {
	// DialTimeout bounds connecting to a target; 0 means 10s.
	DialTimeout time.Duration
	// Transport is a template cloned per target, and then every target uses net/http's client;
	// nil means sensible defaults (keep-alive, up to maxIdlePerTarget idle connections per
	// target, no transparent gzip so that SSE events are not held back), with plain http://
	// targets served by the synchronous client of h1client.go.
	Transport *http.Transport
	// Now is the clock for Retry-After dates and for the "created" stamp of answers the
	// translating adapters build; nil means time.Now.
	Now func() time.Time
	// NewID makes the ids of answers and tool calls that translating adapters build; nil means
	// 24 random hex digits. Tests inject a counter.
	NewID func() string
	// Proxy picks the proxy for a request to a public target; nil means the environment's
	// (HTTP_PROXY, HTTPS_PROXY, NO_PROXY). A private target is never reached through a proxy: a
	// proxy is a third party, and a strict route's prompts must reach no one but its targets.
	Proxy func(*http.Request) (*url.URL, error)
}

const defaultDialTimeout = 10 * time.Second

// maxIdlePerTarget is how many idle keep-alive connections a target's pool keeps. The pool must
// hold as many connections as there are requests in flight to the target, or every answer above
// that count closes its connection and the next request dials again (with 32, the bench's c=64
// rounds opened 8,397 connections). 256 is what an inference server serves at once: vLLM's
// default max_num_seqs is 256, llama-server and Ollama run far fewer slots, and requests beyond
// that wait in the server's queue either way. An idle connection costs a socket and two small
// buffers, and IdleConnTimeout closes the ones a burst left behind.
const maxIdlePerTarget = 256

// Set holds one http.Client per target (its own connection pool, keep-alive, a response header
// timeout that is the target's Timeout, and a bound on each wait for the body's bytes that is its
// idle timeout) and dispatches by Target.Adapter. A plain http://
// target without a proxy is served by the synchronous client of h1client.go; https://, proxied
// targets and every target when Options.Transport is given use net/http's Transport.
type Set struct {
	readers readerPool     // lent to the streams of every target
	clients []*http.Client // by core.Target.Index
	names   []string       // the target each client was built for
	models  [][]byte       // each target's Model as a JSON string (jsonx.Quote), by Index
	// specialists are a saif target's answer headers, one a specialist it lists, by Index
	// (specialistHeaders).
	specialists [][]specialistHeader
	now         func() time.Time
	newID       func() string
}

// NewSet builds the clients for targets. Targets are identified by Index (checked against the
// name), so a caller may pass a copy of a target with another URL, as a managed process's live
// address.
func NewSet(targets []*core.Target, o Options) *Set {
	n := 0
	for _, t := range targets {
		n = max(n, t.Index+1)
	}
	s := &Set{clients: make([]*http.Client, n), names: make([]string, n), models: make([][]byte, n),
		specialists: make([][]specialistHeader, n), now: o.Now, newID: o.NewID}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = randomID
	}
	for _, t := range targets {
		s.names[t.Index] = t.Name
		s.models[t.Index] = jsonx.Quote(t.Model)
		if t.Adapter == core.AdapterSAIF {
			s.specialists[t.Index] = specialistHeaders(t.Specialists)
		}
		tr := newTransport(o, t)
		// Target.IdleTimeout: a wait for the body's next bytes that runs out fails the read
		// with an *IdleTimeoutError and closes the connection.
		idle := t.IdleTimeout
		var rt http.RoundTripper = tr
		if o.Transport == nil && strings.HasPrefix(t.URL, "http://") && !proxied(proxyFor(o, t), t.URL) {
			rt = newH1Transport(tr, t.Name, t.Timeout, idle)
		} else {
			if t.Timeout > 0 {
				rt = &headTransport{next: rt, timeout: t.Timeout}
			}
			if idle > 0 {
				rt = &idleTransport{next: rt, target: t.Name, idle: idle}
			}
		}
		s.clients[t.Index] = &http.Client{
			Transport: rt,
			// A redirect is not an answer from an inference server, and following one would turn
			// the POST into a GET; hand it back as a status instead.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return s
}

// proxied reports whether the environment sends requests to rawURL through a proxy, which only
// net/http's Transport knows how to do. Loopback addresses never are.
func proxied(proxy func(*http.Request) (*url.URL, error), rawURL string) bool {
	if proxy == nil {
		return false
	}
	req, err := http.NewRequest(http.MethodPost, rawURL, nil)
	if err != nil {
		return false
	}
	u, err := proxy(req)
	return err != nil || u != nil
}

// proxyFor is the proxy function of t's transport: none for a private target, Options.Proxy
// (the environment's by default) for a public one.
func proxyFor(o Options, t *core.Target) func(*http.Request) (*url.URL, error) {
	if !t.Privacy.MayUseProxy() {
		return nil
	}
	if o.Proxy != nil {
		return o.Proxy
	}
	return http.ProxyFromEnvironment
}

func newTransport(o Options, t *core.Target) *http.Transport {
	var tr *http.Transport
	if o.Transport != nil {
		tr = o.Transport.Clone()
	} else {
		tr = &http.Transport{
			Proxy:             proxyFor(o, t),
			ForceAttemptHTTP2: true,
			// Each target has its own Transport talking to one host, so both limits are the same
			// one.
			MaxIdleConns:          maxIdlePerTarget,
			MaxIdleConnsPerHost:   maxIdlePerTarget,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			DisableCompression:    true,
		}
	}
	var dialBound time.Duration // the dialer's own Timeout, when this function made the dialer
	if o.DialTimeout > 0 || tr.DialContext == nil {
		d := &net.Dialer{Timeout: o.DialTimeout}
		if d.Timeout <= 0 {
			d.Timeout = defaultDialTimeout
		}
		// Probes for a target on another machine only (TestLoopbackDialHasNoProbes).
		tr.DialContext = keepalive.Dialer(d, net.KeepAliveConfig{Idle: 30 * time.Second})
		dialBound = d.Timeout
	}
	// A target's timeout longer than the dialer's own (the targets' default, 120 s, against 10 s)
	// never ends a connect first: the dialer's Timeout alone bounds it. The context and timer
	// dialWithin would put around it were seven allocations on every new upstream connection,
	// for nothing (TestDialTimeoutsAlloc).
	if t.Timeout > 0 && (dialBound == 0 || t.Timeout <= dialBound) {
		tr.DialContext = dialWithin(tr.DialContext, t.Timeout)
	}
	if !t.Privacy.MayUseProxy() {
		tr.Proxy = nil // a template's proxy too
	}
	if tr.Proxy != nil {
		tr.Proxy = quietProxy(tr.Proxy)
	}
	tr.ResponseHeaderTimeout = t.Timeout
	// A head over the synchronous client's bound is an answer it cannot read, a server_error;
	// net/http's own is 10 MiB, and took such a head as an answer (TestMalformedHeadParity).
	tr.MaxResponseHeaderBytes = maxAnswerHead
	if t.Timeout > 0 {
		// The target's timeout counts from the request's sending, its TLS handshake included
		// (headTransport): a handshake within it is not cut short, nor reported as a target that
		// did not answer within a timeout that had not run out (TestTLSHandshakeWithinTimeout).
		// Nor does one outlast it by much: net/http dials apart from the request, and the
		// handshake with a wedged server went on for 10s after each attempt that gave up on it
		// (TestTLSHandshakeStallTimesOut). Not 0 either, for that reason.
		tr.TLSHandshakeTimeout = t.Timeout
	}
	return tr
}

// dialWithin bounds each of dial's connects by timeout, the target's: net/http dials apart from
// the request, and a connect that does not complete (SYNs dropped, a server too busy to accept)
// went on for Options.DialTimeout (10 s in the gateway) after headTransport had failed the
// attempt as a timeout, a goroutine and a socket per attempt, as the TLS handshake did before
// TLSHandshakeTimeout took the target's timeout. The synchronous client dials through it too
// (h1Transport.do). A connect that the bound ends is errConnectTimeout, not the dialer's
// *net.OpError, which the adapters read as a connection error: on an https:// target the
// dial's end and headTransport's timer, both the target's timeout, raced, and the attempt failed
// as a connection error 3 times in 20 (TestConnectWithinTimeout, -count=20; 0 in 30 after).
func dialWithin(dial func(ctx context.Context, network, addr string) (net.Conn, error), timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		c, err := dial(dctx, network, addr)
		// The dialer's poller may end the connect at the deadline before the context's timer
		// says so: the deadline passed is what tells.
		if dl, _ := dctx.Deadline(); err != nil && ctx.Err() == nil && !time.Now().Before(dl) {
			return nil, errConnectTimeout
		}
		return c, err
	}
}

// ProxyError is a proxy setting that names no proxy net/http can use. Its value is not repeated:
// net/http's error quotes an invalid HTTPS_PROXY whole, password included, and it went into the
// log with every attempt (TestInvalidProxyNotQuoted).
type ProxyError struct{}

func (*ProxyError) Error() string {
	return "the proxy setting (HTTPS_PROXY or HTTP_PROXY) is not a valid URL"
}

// quietProxy is f with its errors replaced by a *ProxyError.
func quietProxy(f func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(r *http.Request) (*url.URL, error) {
		u, err := f(r)
		if err != nil {
			return nil, &ProxyError{}
		}
		return u, nil
	}
}

// UnknownTargetError is a target the Set was not built with.
type UnknownTargetError struct{ Target string }

func (e *UnknownTargetError) Error() string {
	return fmt.Sprintf("upstream: target %q is not in this set", e.Target)
}

// UnsupportedAdapterError is a target whose wire protocol has no adapter yet.
type UnsupportedAdapterError struct {
	Target  string
	Adapter core.AdapterKind
}

func (e *UnsupportedAdapterError) Error() string {
	return fmt.Sprintf("upstream: target %q: the %s adapter is not implemented yet", e.Target, e.Adapter)
}

// Chat sends req to t with the adapter t names, without a request ID.
func (s *Set) Chat(ctx context.Context, t *core.Target, req *core.Request) (*Response, error) {
	return s.ChatID(ctx, t, req, "")
}

// ChatID is Chat with the gateway's ID for the request, sent to the target as X-Request-Id so
// that the target's own logs can be matched with the gateway's line. An id that is empty, longer
// than MaxRequestID or not a token of printable ASCII is not sent.
func (s *Set) ChatID(ctx context.Context, t *core.Target, req *core.Request, id string) (*Response, error) {
	if t.Index < 0 || t.Index >= len(s.clients) || s.names[t.Index] != t.Name {
		return nil, &UnknownTargetError{Target: t.Name}
	}
	if !ValidRequestID(id) {
		id = ""
	}
	c := s.clients[t.Index]
	switch t.Adapter {
	case core.AdapterOpenAI:
		return (&openaiOpenAI{t: t, c: c, now: s.now, readers: &s.readers, model: s.models[t.Index], id: id}).chat(ctx, req)
	case core.AdapterOllama:
		return (&openaiOllama{t: t, c: c, now: s.now, newID: s.newID, id: id, readers: &s.readers}).chat(ctx, req)
	case core.AdapterSAIF:
		return (&openaiSAIF{t: t, c: c, now: s.now, newID: s.newID, id: id, readers: &s.readers,
			headers: s.specialists[t.Index]}).chat(ctx, req)
	}
	return nil, &UnsupportedAdapterError{Target: t.Name, Adapter: t.Adapter}
}

// Close closes idle connections. Streams still open keep theirs until they are closed.
func (s *Set) Close() {
	for _, c := range s.clients {
		if c != nil {
			c.CloseIdleConnections()
		}
	}
}

// Draining a finished stream's tail lets its connection go back to the pool: an upstream
// usually writes [DONE] (or its done line) before the end of the chunked body, and a body closed
// before that end costs the connection. The tail is a few bytes; more than maxDrain, or longer
// than drainWait, is not a tail, and the connection is closed instead.
const (
	maxDrain  = 4 << 10
	drainWait = 50 * time.Millisecond
)

// tailDrainer is a body that can drain itself within its own bounds (the pooled HTTP/1.1
// client's, which sets a read deadline rather than a timer).
type tailDrainer interface {
	drainTail()
}

// closeDrained closes a stream's body after the stream ended cleanly, reading the rest of it
// first (bounded by maxDrain and drainWait) so that the connection can be reused.
func closeDrained(body io.ReadCloser) error {
	if d, ok := body.(tailDrainer); ok {
		d.drainTail()
		return body.Close()
	}
	// Closing the body from the timer unblocks a read that waits on an upstream that keeps the
	// connection open after its last event; net/http allows Close concurrently with Read.
	stop := time.AfterFunc(drainWait, func() { _ = body.Close() })
	_, _ = io.CopyN(io.Discard, body, maxDrain)
	stop.Stop()
	return body.Close()
}

// post sends body to t.URL+path on t and returns a 2xx response; a transport failure or any
// other status comes back as an error of the core types. The request is JSON, accepts accept
// (the stream's media type, or application/json), carries the target's key as a Bearer
// token when it has one (the key is never logged), and the gateway's request ID as X-Request-Id
// when id is not empty. The response's Header is good until its body has been read to the end
// or closed (see h1Transport.post). body is the caller's, passed by its address: a payload is
// five slices, and passed by value it was a copy in each frame down to the wait for the answer.
func post(ctx context.Context, c *http.Client, t *core.Target, path string, body *payload, accept, id string,
	now func() time.Time) (*http.Response, error) {
	if h1, ok := c.Transport.(*h1Transport); ok {
		if resp, sent, err := h1.post(ctx, t.URL, path, t, body, accept, id); sent {
			return checkAnswer(ctx, t, resp, err, now)
		}
	}
	return postHTTP(ctx, c, t, path, body, accept, id, now)
}

// postHTTP is post over net/http's client, for a URL the synchronous client does not serve
// (HTTPS, a user in the URL, a host net/http rewrites) or a client without it. A function of its
// own, so that its locals are not a part of post's frame on every request's stack, down to the
// wait for the answer.
//
//go:noinline
func postHTTP(ctx context.Context, c *http.Client, t *core.Target, path string, body *payload, accept, id string,
	now func() time.Time) (*http.Response, error) {
	url := t.URL + path
	// net/http's Transport may go on reading a request body after RoundTrip has returned (an
	// answer that came before the whole body was sent): it gets its own copy, since the
	// client's bytes are in a buffer the server lends to the next request once this one is over.
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body.owned()))
	if err != nil {
		// Only a malformed target URL gets here, which config should have refused.
		return nil, &core.ConnError{Target: t.Name, Err: err}
	}
	// Assigned, not Set: Set builds a one-element slice per field, on every request. The ID's
	// field costs one; the fixed ones, prebuilt, none.
	hreq.Header["Content-Type"] = jsonValue
	hreq.Header["User-Agent"] = userAgentValue
	hreq.Header["Accept"] = acceptValue(accept)
	// Set, net/http neither asks for gzip nor decodes it, as the synchronous client does not
	// (see checkAnswer): a template Transport with compression on did both.
	hreq.Header["Accept-Encoding"] = identityValue
	if t.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+string(t.APIKey))
	}
	if id != "" {
		hreq.Header[hdrRequestID] = []string{id}
	}
	var at answerTrace
	hreq = hreq.WithContext(httptrace.WithClientTrace(ctx, at.trace()))
	resp, err := c.Do(hreq)
	if err != nil && at.unreadable(err) {
		err = &unreadableAnswerError{err: err}
	}
	return checkAnswer(ctx, t, resp, err, now)
}

// answerTrace tells, for net/http's client, an answer it could not read from a connection that
// failed: net/http reports a malformed status or header line, or a bad Content-Length, as it
// reports a dropped connection, where the synchronous client has a badAnswerError.
type answerTrace struct {
	ct            httptrace.ClientTrace
	answered      atomic.Bool // a byte of the answer came (over HTTP/2: its whole head)
	informational atomic.Bool // a 1xx came first: what fails later may be the connection's
}

func (a *answerTrace) trace() *httptrace.ClientTrace {
	a.ct.GotFirstResponseByte = func() { a.answered.Store(true) }
	a.ct.Got1xxResponse = func(int, textproto.MIMEHeader) error {
		a.informational.Store(true)
		return nil
	}
	return &a.ct
}

// unreadable reports whether err, with which the client's Do failed, is an answer net/http
// could not read: bytes of one came, and the failure is none of the connection's (it ended or
// was reset inside the head, a timeout, the caller gone), which transportError knows as such.
func (a *answerTrace) unreadable(err error) bool {
	if !a.answered.Load() || a.informational.Load() {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return false
	}
	ne, ok := errors.AsType[net.Error](err)
	return !ok || !ne.Timeout()
}

// unreadableAnswerError is an answer net/http's client could not read (answerTrace), which
// transportError makes a *core.ProtocolError, as it does the synchronous client's
// badAnswerError: the upstream answered, with something that is not HTTP.
type unreadableAnswerError struct{ err error }

func (e *unreadableAnswerError) Error() string { return e.err.Error() }
func (e *unreadableAnswerError) Unwrap() error { return e.err }

// netHTTPBroken is how net/http's HTTP/1 client prefixes the error of an answer it could not read.
const netHTTPBroken = "net/http: HTTP/1.x transport connection broken: "

// quoted is the error as a badAnswerError's quote is: what net/http says of the answer, which
// quotes the upstream's bytes, with key replaced and then cut to a few times maxQuote, as words
// the log leaves out.
func (e *unreadableAnswerError) quoted(key string) error {
	inner := e.err
	if ue, ok := errors.AsType[*url.Error](inner); ok {
		inner = ue.Err // its URL is the upstream's address
	}
	text := strings.TrimPrefix(inner.Error(), netHTTPBroken)
	if key != "" {
		text = strings.ReplaceAll(text, key, "[redacted]")
	}
	if len(text) > 2*maxQuote {
		text = strings.ToValidUTF8(text[:2*maxQuote], "") + "…"
	}
	return &quotedError{what: errBadAnswer.Error(), words: text}
}

// Header values the net/http path assigns rather than Sets (see post). Never modified: net/http
// only reads them, and an append to a slice of length and capacity 1 copies it.
var (
	jsonValue      = []string{"application/json"}
	userAgentValue = []string{"hayula-gateway"}
	sseValue       = []string{"text/event-stream"}
	ndjsonValue    = []string{"application/x-ndjson"}
	identityValue  = []string{"identity"}
)

// acceptValue is the Accept field's value for accept, prebuilt for the media types adapters ask.
func acceptValue(accept string) []string {
	switch accept {
	case "application/json":
		return jsonValue
	case "text/event-stream":
		return sseValue
	case "application/x-ndjson":
		return ndjsonValue
	}
	return []string{accept}
}

// payload is a request body in up to five pieces sent one after another, so that the client's
// bytes around the values the gateway replaces or adds (the model, jsonx.SetQuotedSplit, and a
// stream's stream_options, usageSplice) are written to the socket as they are, not copied into
// one slice first.
type payload [5][]byte

func whole(b []byte) payload { return payload{b} }

func (p *payload) len() int {
	n := 0
	for _, b := range p {
		n += len(b)
	}
	return n
}

// owned is the body in a new slice of its own.
func (p *payload) owned() []byte {
	out := make([]byte, 0, p.len())
	for _, b := range p {
		out = append(out, b...)
	}
	return out
}

// checkAnswer turns a failed send and a non-2xx answer into the typed errors errmap reads.
func checkAnswer(ctx context.Context, t *core.Target, resp *http.Response, err error, now func() time.Time) (*http.Response, error) {
	if err != nil {
		return nil, transportError(ctx, t, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(t, resp, now)
	}
	if ce, ok := resp.Header["Content-Encoding"]; ok && !coding.Identity(ce) {
		// Every request says Accept-Encoding: identity, since without the field a server may pick
		// any coding (RFC 9110 §12.5.3), and no 2xx answer is decoded (an error's body is, in
		// statusError): the readers of answers and streams stay as they are. Read as it came, a
		// gzipped whole answer failed as "not JSON" quoting the compressed bytes to the client,
		// and a stream as one closed early (TestCodedAnswerRefused). The body is left unread, so
		// the connection is closed, not reused.
		_ = resp.Body.Close()
		return nil, &core.ProtocolError{Target: t.Name, Err: &CodedAnswerError{Coding: strings.Join(ce, ", ")}}
	}
	return resp, nil
}

// accept is the Accept header for an answer streamed as streamType, or a whole JSON one.
func accept(stream bool, streamType string) string {
	if stream {
		return streamType
	}
	return "application/json"
}
