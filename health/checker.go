package health

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/coding"
	"github.com/hayula/gateway/internal/keepalive"
)

// CheckError is a failed active check: no answer (Err set), or a status that is neither 2xx nor
// loading (Status set).
type CheckError struct {
	Target string
	Status int
	Err    error
}

func (e *CheckError) Error() string {
	if e.Err != nil {
		return e.Target + ": health check: " + e.Err.Error()
	}
	return fmt.Sprintf("%s: health check: status %d", e.Target, e.Status)
}

func (e *CheckError) Unwrap() error { return e.Err }

// CheckerOptions configure a Checker. The zero value is usable.
type CheckerOptions struct {
	// Clock schedules the rounds and measures each check's latency; nil means SystemClock.
	Clock TimerClock
	// Client sends the checks; nil means a client of the Checker's own, closed by Close.
	Client *http.Client
	// URL says where to check t now; ok false skips this round, as for a managed target whose
	// process is not running. nil means t.HealthURL.
	URL func(t *core.Target) (url string, ok bool)
	// Logger receives the first failed check of a run of them at warn level, the others at
	// debug, and the first check that passes after them at info; nil discards.
	Logger *slog.Logger
	// Proxy picks the proxy for a check of a public target when the Checker builds its own
	// client; nil means the environment's. A private target's check never goes through one.
	Proxy func(*http.Request) (*url.URL, error)
}

// defaultConnectBound bounds the dial and the TLS handshake of the Checker's own client when no
// target has a health_timeout (config requires one; a Target built by hand may lack it).
const defaultConnectBound = 10 * time.Second

// maxCheckBody caps what a check reads of an answer: enough for any status document.
const maxCheckBody = 64 << 10

// Checker runs the active health checks: for every target with a HealthURL and a HealthInterval,
// one goroutine GETs the URL every interval and reports the outcome to the Tracker. Build it with
// NewChecker, run it with Start, stop it with Close.
type Checker struct {
	tr      *Tracker
	targets []*core.Target // those with active checks
	clock   TimerClock
	client  *http.Client
	own     bool
	url     func(*core.Target) (string, bool)
	log     *slog.Logger

	ctx    context.Context // ends at Close, and with it every check in flight
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex // guards started and closed, so that Start never races Close's Wait
	started bool
	closed  bool

	failMu  sync.Mutex
	failing map[*core.Target]bool // targets whose last reported check failed
}

// NewChecker returns a Checker for the targets that have active checks; it starts nothing.
func NewChecker(tr *Tracker, targets []*core.Target, o CheckerOptions) *Checker {
	c := &Checker{tr: tr, clock: o.Clock, client: o.Client, url: o.URL, log: o.Logger, failing: map[*core.Target]bool{}}
	if c.clock == nil {
		c.clock = SystemClock{}
	}
	if c.client == nil {
		c.own = true
		// net/http dials apart from the request: a check that gives up at its health_timeout
		// does not end its dial, nor the TLS handshake that follows. Unbounded, a server that
		// accepts and never answers the hello kept one of each, and a socket, for as long as it
		// kept the connection, one more every interval (TestWedgedTLSCheckLeavesNothingBehind).
		// Bounded by the longest health_timeout, neither outlives a check by more than that.
		bound := time.Duration(0)
		for _, t := range targets {
			bound = max(bound, t.HealthTimeout)
		}
		if bound <= 0 {
			bound = defaultConnectBound
		}
		c.client = &http.Client{
			Transport: &http.Transport{Proxy: publicOnly(o.Proxy), MaxIdleConnsPerHost: 1,
				IdleConnTimeout: 2 * time.Minute, DisableCompression: true,
				DialContext:         keepalive.Dialer(&net.Dialer{Timeout: bound}, net.KeepAliveConfig{Idle: 30 * time.Second}),
				TLSHandshakeTimeout: bound},
			// A redirect is not a health answer.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if c.url == nil {
		c.url = func(t *core.Target) (string, bool) { return t.HealthURL, t.HealthURL != "" }
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	for _, t := range targets {
		if t.HealthURL != "" && t.HealthInterval > 0 {
			c.targets = append(c.targets, t)
		}
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// Targets are the targets the Checker checks, in the order given to NewChecker.
func (c *Checker) Targets() []*core.Target { return c.targets }

// Start launches one goroutine per checked target: it checks at once, then every HealthInterval
// on the Checker's clock. A second Start, or a Start after Close, does nothing.
func (c *Checker) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.closed {
		return
	}
	c.started = true
	for _, t := range c.targets {
		c.wg.Go(func() { c.loop(t) })
	}
}

func (c *Checker) loop(t *core.Target) {
	for {
		c.Check(c.ctx, t)
		next := make(chan struct{})
		timer := c.clock.AfterFunc(t.HealthInterval, func() { close(next) })
		select {
		case <-next:
		case <-c.ctx.Done():
			timer.Stop()
			return
		}
	}
}

// CheckAll runs one round over every checked target, concurrently, and returns when every check
// has been reported. Tests use it instead of waiting for an interval.
func (c *Checker) CheckAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, t := range c.targets {
		wg.Go(func() { c.Check(ctx, t) })
	}
	wg.Wait()
}

// Check checks t once and reports the outcome to the Tracker, unless the URL option skips t now
// (ok false) or ctx ended, when it reports nothing.
func (c *Checker) Check(ctx context.Context, t *core.Target) (r CheckResult, ok bool) {
	url, ok := c.url(t)
	if !ok {
		return CheckResult{}, false
	}
	r = c.probe(ctx, t, url)
	if ctx.Err() != nil {
		// Shutting down, or the caller gave up: that says nothing about the target.
		return r, false
	}
	c.logOutcome(t, url, r)
	c.tr.ReportCheck(t, r)
	return r, true
}

// logOutcome logs a check. A target whose url is wrong (a path its server does not serve, a port
// nothing listens on) fails every check from the start; only once enough have failed does the
// Tracker mark it unavailable, a minute later at the default interval, and say nothing of why.
// So the first failure of a run is a warning naming the URL and the failure, the next ones
// debug lines, and the first pass after them an info line (TestFirstFailedCheckWarned).
func (c *Checker) logOutcome(t *core.Target, url string, r CheckResult) {
	c.failMu.Lock()
	was := c.failing[t]
	c.failing[t] = r.Err != nil
	c.failMu.Unlock()
	switch {
	case r.Err != nil && !was:
		c.log.Warn("health check failed", "target", t.Name, "url", url, "err", r.Err)
	case r.Err != nil:
		c.log.Debug("health check failed", "target", t.Name, "url", url, "err", r.Err)
	case was:
		c.log.Info("health check passed", "target", t.Name)
	}
}

// viaProxy marks the context of a check of a public target, which may go through the
// environment's proxy; a private target's check (and its key) never does, as its requests do not
// (upstream.Options.Proxy).
type viaProxy struct{}

// publicOnly is proxy (the environment's when nil) for a public target's check, and no proxy
// for any other.
func publicOnly(proxy func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	return func(req *http.Request) (*url.URL, error) {
		if v, _ := req.Context().Value(viaProxy{}).(bool); !v {
			return nil, nil
		}
		return proxy(req)
	}
}

func (c *Checker) probe(ctx context.Context, t *core.Target, url string) CheckResult {
	if t.HealthTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.HealthTimeout)
		defer cancel()
	}
	if t.Privacy.MayUseProxy() {
		ctx = context.WithValue(ctx, viaProxy{}, true)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return CheckResult{Err: &CheckError{Target: t.Name, Err: err}}
	}
	req.Header.Set("Accept", "application/json")
	// As every request to an upstream says it (upstream's checkAnswer): without the field a
	// server may pick any coding (RFC 9110 §12.5.3), and a check should get the answer a request
	// would. The client's own transport adds no Accept-Encoding and decodes nothing
	// (DisableCompression), so this is what the server reads.
	req.Header.Set("Accept-Encoding", "identity")
	if t.APIKey != "" && !t.HealthElsewhere {
		req.Header.Set("Authorization", "Bearer "+string(t.APIKey))
	}
	began := c.clock.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		return CheckResult{Err: &CheckError{Target: t.Name, Err: err}, Latency: c.clock.Now().Sub(began)}
	}
	var body []byte
	if ce, ok := resp.Header["Content-Encoding"]; ok && !coding.Identity(ce) {
		// Coded anyway (a reverse proxy that gzips whatever it sends): the body is read as the
		// request path reads a coded error's, decoded when its coding is gzip, x-gzip or
		// deflate, so that a loading answer's words are found where a request would find them;
		// one that does not decode has none. The status decides the rest, as for any answer.
		body, _ = coding.Decode(ce, resp.Body, maxCheckBody)
	} else {
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxCheckBody))
	}
	_ = resp.Body.Close()
	r := CheckResult{Latency: c.clock.Now().Sub(began)}
	if err != nil {
		r.Err = &CheckError{Target: t.Name, Err: err}
		return r
	}
	r.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), c.clock.Now())
	loading := saysLoading(body, resp.StatusCode)
	switch {
	case loading, resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
		r.Loading = true
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		r.Err = &CheckError{Target: t.Name, Status: resp.StatusCode}
	}
	return r
}

// saysLoading recognises an answer that says a model is loading, as the request path reads one
// (errmap): SAIF's (and older llama-server's /health) {"status":"loading…"}, whatever its
// status, and llama-server's 503 {"error":{"message":"Loading model","type":"unavailable_error"}},
// which its /health answers while it loads. A check read the latter as failed, and the target
// was unavailable for the whole load where a request answered so made it loading.
func saysLoading(body []byte, status int) bool {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return false
	}
	var b struct {
		Status string          `json:"status"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	if strings.HasPrefix(strings.ToLower(b.Status), "loading") {
		return true
	}
	var e struct{ Message, Type string }
	return status == http.StatusServiceUnavailable && json.Unmarshal(b.Error, &e) == nil &&
		e.Type == "unavailable_error" && strings.Contains(strings.ToLower(e.Message), "loading")
}

// maxRetryAfter bounds a wait a Retry-After may ask for: anything longer (about 32 years) is a
// broken value, not a wait, and is ignored, as upstream ignores it in a request's answer.
const maxRetryAfter = 1e9 * time.Second

// retryAfter reads a Retry-After header as upstream reads a request's: delay-seconds or an HTTP
// date; 0 when absent, unreadable, no wait (zero, negative, past) or absurd (over maxRetryAfter),
// so that a check's loading answer holds its target back as long as the same answer to a request
// would (TestCheckAbsurdRetryAfterIgnored).
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(h, 64); err == nil {
		if !(secs > 0 && secs <= maxRetryAfter.Seconds()) { // so that NaN is refused too
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if at, err := http.ParseTime(h); err == nil {
		if d := at.Sub(now); d > 0 && d <= maxRetryAfter {
			return d
		}
	}
	return 0
}

// Close stops the goroutines, ends the checks in flight, waits for them, and closes the idle
// connections of the Checker's own client.
func (c *Checker) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if c.own {
		c.client.CloseIdleConnections()
	}
}
