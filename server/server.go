package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/lifecycle"
	"github.com/hayula/gateway/metrics"
	selector "github.com/hayula/gateway/select"
	"github.com/hayula/gateway/upstream"
)

// Upstream is what the server asks to carry one attempt; *upstream.Set implements it.
type Upstream interface {
	Chat(ctx context.Context, t *core.Target, req *core.Request) (*upstream.Response, error)
}

// IDUpstream is an Upstream that also sends the request's ID on to the target (X-Request-Id),
// as *upstream.Set does; the server asks it with ChatID. An Upstream without it is asked with
// Chat, and the ID stops at the gateway.
type IDUpstream interface {
	Upstream
	ChatID(ctx context.Context, t *core.Target, req *core.Request, id string) (*upstream.Response, error)
}

// Options configure a Server. Only Config is required.
type Options struct {
	Config *config.Config
	// Clock drives cooldowns and retry backoff; nil means the system clock.
	Clock health.Clock
	// Logger receives one line per request and every recovered panic; nil discards.
	Logger *slog.Logger
	// Upstream carries attempts; nil builds an upstream.Set over the config's targets.
	Upstream Upstream
	// RetryBase and RetryMax bound the same-target retry backoff; zero means 100ms and 2s.
	// A Retry-After longer than RetryMax moves the chain on instead of waiting.
	RetryBase, RetryMax time.Duration
	// Sleep waits between same-target retries; nil waits on a real timer (tests inject their own).
	Sleep func(ctx context.Context, d time.Duration) error
	// Yield runs once per stream, right after its first event is flushed to the client, when no
	// other stream is being relayed at the time; nil means sched_yield(2) on Linux and nothing
	// elsewhere. On loopback the kernel wakes the reader of a socket on the writer's CPU,
	// expecting the writer to sleep soon; a gateway relaying a burst of events does not, and a
	// client on the same machine would read its first token only after the gateway had relayed
	// the burst behind it (80–120 µs of the bench's 32-event streams: PERFORMANCE.md, fifth
	// round). Yielding hands it the CPU first. A stream whose events come apart (a model's
	// tokens) parks between events anyway; then the yield costs one syscall per stream and
	// changes nothing. Tests count the calls.
	Yield func()
	// Lifecycle tunes the manager of targets with a command; StateFile and WaitHealthy default to
	// the config's, Clock to Clock when it can schedule, Logger to Logger.
	Lifecycle lifecycle.Options
	// Previous is the server this one replaces on a configuration reload (see Live). When both
	// have targets with a command, Previous's lifecycle manager is handed to this server rather
	// than a new one built (lifecycle.Manager.Reload): the processes of unchanged targets keep
	// running, and Lifecycle and the config's state_file and wait_healthy are those Previous was
	// built with. The processes stop when the last server using the manager is closed, the
	// newest or a replaced one still serving requests on them, in either order. The start time that
	// /v1/models and process_start_time_seconds report is Previous's too, and so are the counts
	// behind /metrics (of the routes, targets and keys both configurations name) and /healthz:
	// they go on from Previous's, and Previous's requests still under way count in them; those of
	// the names this configuration drops are forgotten once Live.Replace puts it in service
	// (metrics.Set.Prune). A Server can be handed over once.
	Previous *Server
	// Reloads counts configuration reloads for /metrics; nil writes no reload series.
	Reloads *metrics.Reloads
	// Conns is the cap on client connections that Serve keeps (WithConnLimit), for /metrics; nil
	// writes no connection series.
	Conns *ConnLimit
	// NewRequestID makes the ID of a request that came without a usable X-Request-Id; nil means
	// "req_" and 24 hex digits, from a source seeded once per server (see requestIDs). Tests
	// inject a counter. An ID it makes that is not a token of printable ASCII up to 128 bytes is
	// replaced by one of the default's.
	NewRequestID func() string
}

// Server serves the gateway's HTTP API. Build it with New; it is safe for concurrent use.
type Server struct {
	cfg    *config.Config
	routes map[string]*routeState
	stages []filter.Stage // the capability stages (capStages of them), then filter.Standard's
	// fits are the stages that judge what a request is rather than a target's state (health,
	// loading) or its hint: the adapters' capabilities (endpoint, choices, format), privacy,
	// vision, tools and context, all fail closed. Model "auto" moves a request off a route none
	// of whose targets passes them (autoMove).
	fits []filter.Stage
	// autoOrder are the routes model "auto" may move a request to, in order
	// (autoroute.Classifier.MoveOrder); nil without [auto].
	autoOrder []*routeState
	// intentValues are []string{intent} for each intent the classifier names
	// (autoroute.Classifier.Intents), the X-Hayula-Intent header's values (intentValue); nil
	// without [auto].
	intentValues [][]string
	// allServeChat: every target's adapter serves chat (upstream.Serves), so the endpoint stage
	// drops none for it.
	allServeChat bool
	failOpen     map[string]bool // names of the fail-open stages
	health       *health.Tracker
	up           Upstream
	upID         IDUpstream // up, when it sends request IDs on; nil otherwise
	ownUp        *upstream.Set
	log          *slog.Logger
	clock        health.Clock
	sleep        func(ctx context.Context, d time.Duration) error
	yield        func() // see Options.Yield
	retry        [2]time.Duration
	started      time.Time // the process's start, or its first Server's creation
	created      int64
	handler      http.Handler
	checker      *health.Checker // active health; see health.go
	procs        *procs          // nil when no target has a command; see lifecycle.go

	// names maps every route's name and "auto" to itself, so that decode can take a request's
	// model from it instead of copying it out of the body.
	names map[string]string

	// targetValues[i] is []string{name} of the target with Index i: the X-Hayula-Target and
	// (for a chain of one) X-Hayula-Chain header values, built once (see write).
	targetValues [][]string
	// targetLines[i] is the X-Hayula-Chain and X-Hayula-Target header lines of an answer the
	// target with Index i served alone (see writeWhole); nil when its name cannot be a value.
	targetLines [][]byte
	// lengths[n] is the Content-Length value of an answer of n bytes, once one went out (see
	// lengthValue).
	lengths [maxSharedLength]atomic.Pointer[[]string]

	metrics   *metrics.Set // nil when the config turned metrics off; see metrics.go
	reloads   *metrics.Reloads
	conns     *ConnLimit // nil: no connection series in /metrics
	limits    []keyLimit // by config.Key.Index; nil when there are no keys (limits.go)
	goneSlots keySlots   // in-flight counts of keys a reload removed, carried for one bringing them back

	failedOpen *atomic.Int64 // requests served only because a fail-open stage kept every target; Previous's, on a reload
	// launched counts the processes of targets with a command by name, across every lifecycle
	// manager and member a reload replaces; Previous's, on a reload (writeProcs).
	launched *lifecycle.Counts
	// successor is the server a reload put in this one's place (Live.Replace); nil while this
	// one is current. Its requests still under way ask it, and the successors after it, whether
	// a target became public or they strict since they began (reloadForbids).
	successor atomic.Pointer[reloadLink]
	// link is this server's own link, made when a reload put it in service (Live.Replace); nil
	// for the first. The link of the reload that replaces it is put there too, for the requests
	// of the servers before it.
	link     atomic.Pointer[reloadLink]
	relaying atomic.Int64 // streams being relayed (see relay)
	states   sync.Pool    // *reqState; see serveOp
}

// routeState is a route with what was built for it at load.
type routeState struct {
	*config.Route
	index int // in config.Config.Routes, for metrics
	sel   selector.Selector
	guard []core.ClassSet // by core.Target.Index; 0 = unguarded
	// guarded is whether any of the route's targets has a guard: the attempt loop then picks only
	// among the candidates whose guard the failures so far open (openOf).
	guarded bool
	// minWindow is the smallest known context window among the route's targets; 0 when none is
	// known, and then the context filter can never drop anything.
	minWindow int
	// nameValue is []string{Name}, the X-Hayula-Route header's value, built once (see write).
	nameValue []string
	// routeLine is the X-Hayula-Route header line (see writeWhole); nil when the name cannot be
	// a header value.
	routeLine []byte
	// saif is whether the route has a SAIF target, and specialists every specialist its SAIF
	// targets list, sorted, each once (case aside): a route hint none of them lists is the 400
	// unknown_specialist (unknownSpecialist).
	saif        bool
	specialists []string
}

// mayOverflow reports whether the context filter could drop a target of the route for req. The
// prompt's token bound counts at least one byte of message text per token, and the text is no
// longer than the body that carries it, so a body that fits in the smallest window with the
// requested tokens beside it fits everywhere, and the bound need not be computed. It is written
// so that nothing wraps: len(Body)+MaxTokens did for a max_tokens near the largest int, and the
// bound was skipped for a prompt that certainly overflows (TestContextHugeMaxTokens).
func (rs *routeState) mayOverflow(req *core.Request) bool {
	return rs.minWindow > 0 && len(req.Body) > rs.minWindow-req.MaxTokens
}

// New builds a Server from a loaded config.
func New(o Options) (*Server, error) {
	if o.Config == nil {
		return nil, fmt.Errorf("server: no config")
	}
	s := &Server{
		cfg:     o.Config,
		routes:  make(map[string]*routeState, len(o.Config.Routes)),
		clock:   o.Clock,
		log:     o.Logger,
		up:      o.Upstream,
		sleep:   o.Sleep,
		yield:   o.Yield,
		retry:   [2]time.Duration{o.RetryBase, o.RetryMax},
		started: time.Now(),
		reloads: o.Reloads,
		conns:   o.Conns,
	}
	s.failedOpen = new(atomic.Int64)
	s.launched = o.Lifecycle.Counts
	if s.launched == nil {
		s.launched = new(lifecycle.Counts)
	}
	if o.Previous != nil {
		s.started = o.Previous.started
		s.failedOpen = o.Previous.failedOpen
		if o.Lifecycle.Counts == nil {
			s.launched = o.Previous.launched
		}
		carryStats(o.Config, o.Previous.cfg)
	}
	s.created = s.started.Unix()
	if s.clock == nil {
		s.clock = health.SystemClock{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.sleep == nil {
		s.sleep = sleepTimer
	}
	if s.yield == nil {
		s.yield = yieldCPU
	}
	if s.retry[0] <= 0 {
		s.retry[0] = 100 * time.Millisecond
	}
	if s.retry[1] <= 0 {
		s.retry[1] = 2 * time.Second
	}
	if s.up == nil {
		// The clock that cooldowns run on also reads the upstreams' Retry-After dates and rate
		// limit resets, so that a wait an upstream names is measured from the same now
		// (TestOpenRouterResetInBody).
		s.ownUp = upstream.NewSet(o.Config.Targets, upstream.Options{Now: s.clock.Now})
		s.up = s.ownUp
	}
	s.upID, _ = s.up.(IDUpstream)
	c := o.Config.Cooldown
	s.health = health.NewTracker(len(o.Config.Targets), s.clock,
		health.Policy{Failures: c.Failures, Base: c.Base, Max: c.Max, OnChange: s.healthChanged, Describe: describeCheck})
	s.stages = append([]filter.Stage{{Filter: endpointFilter{}}, {Filter: choicesFilter{}}, {Filter: formatFilter{}},
		{Filter: filter.Specialist{}}},
		filter.Standard(s.health)...)
	s.fits = []filter.Stage{{Filter: endpointFilter{}}, {Filter: choicesFilter{}}, {Filter: formatFilter{}},
		{Filter: filter.Privacy{}}, {Filter: filter.Vision{}}, {Filter: filter.Tools{}}, {Filter: filter.Context{}}}
	s.allServeChat = !slices.ContainsFunc(o.Config.Targets, func(t *core.Target) bool {
		return !upstream.Serves(t.Adapter, core.OpChat)
	})
	s.targetValues = make([][]string, len(o.Config.Targets))
	s.targetLines = make([][]byte, len(o.Config.Targets))
	for _, t := range o.Config.Targets {
		if t.Index >= 0 && t.Index < len(s.targetValues) {
			s.targetValues[t.Index] = []string{t.Name}
			s.targetLines[t.Index] = headerLines(hdrChain, t.Name, hdrTarget, t.Name)
		}
	}
	s.failOpen = map[string]bool{}
	for _, st := range s.stages {
		if st.FailOpen {
			s.failOpen[st.Filter.Name()] = true
		}
	}
	s.names = map[string]string{config.RouteAuto: config.RouteAuto}
	for i, r := range o.Config.Routes {
		s.names[r.Name] = r.Name
		sel, err := selector.New(r.Policy, selector.Options{Now: s.clock.Now})
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", r.Name, err)
		}
		rs := &routeState{Route: r, index: i, sel: sel, guard: make([]core.ClassSet, len(o.Config.Targets)),
			nameValue: []string{r.Name}, routeLine: headerLines(hdrRoute, r.Name)}
		for i, t := range r.Targets {
			if i < len(r.Guard) {
				rs.guard[t.Index] = r.Guard[i]
				rs.guarded = rs.guarded || r.Guard[i] != 0
			}
			if w := t.ContextWindow; w > 0 && (rs.minWindow == 0 || w < rs.minWindow) {
				rs.minWindow = w
			}
			if t.Adapter == core.AdapterSAIF {
				rs.saif = true
				for _, sp := range t.Specialists {
					if !slices.ContainsFunc(rs.specialists, func(s string) bool { return strings.EqualFold(s, sp) }) {
						rs.specialists = append(rs.specialists, sp)
					}
				}
			}
		}
		slices.Sort(rs.specialists)
		s.routes[r.Name] = rs
	}
	if o.Config.Auto != nil {
		for _, n := range o.Config.Auto.MoveOrder() {
			if rs, ok := s.routes[n]; ok { // config.Load checks that each exists
				s.autoOrder = append(s.autoOrder, rs)
			}
		}
		for _, in := range o.Config.Auto.Intents() {
			s.intentValues = append(s.intentValues, []string{in})
		}
	}
	var prev *metrics.Set
	if o.Previous != nil {
		prev = o.Previous.metrics
	}
	s.metrics = newMetrics(o.Config, prev, s.started)
	if o.Previous != nil {
		s.limits, s.goneSlots = newKeyLimits(o.Config.Keys, o.Previous.limits, o.Previous.cfg.Keys, o.Previous.goneSlots)
	} else {
		s.limits, s.goneSlots = newKeyLimits(o.Config.Keys, nil, nil, nil)
	}
	if err := s.initActive(o); err != nil {
		return nil, err
	}
	rt := s.router()
	s.handler = &recoverer{next: &browserGuard{next: rt, notFound: rt.NotFound, b: o.Config.Browsers, metrics: s.metrics}, log: s.log,
		ids: newRequestIDs(o.NewRequestID)}
	// Last, since it changes the previous server's processes: nothing may fail after it.
	if err := s.adoptProcs(o.Previous); err != nil {
		return nil, err
	}
	return s, nil
}

// carryStats gives each target of cfg that prev has under the same name and URL (the same
// upstream) prev's Stats: the attempts still under way on prev's server count in flight on it,
// for least-busy and hayula_upstream_in_flight, and the latency policy goes on from its estimate.
// Built afresh, they read 0 while the replaced configuration's streams still ran there, and
// least-busy sent the next requests to the busiest target (TestReloadKeepsTargetsInFlight). Its
// degraded mark is health-check state, which starts afresh (core.Stats.Carry). cfg is not serving
// yet; prev's targets, which may still serve, are only read.
func carryStats(cfg, prev *config.Config) {
	for _, t := range cfg.Targets {
		if p, ok := prev.Target(t.Name); ok && p.URL == t.URL && p.Stats != t.Stats {
			t.Stats = p.Stats.Carry()
		}
	}
}

// Handler is the gateway's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Health is the passive health tracker, for tests and status pages.
func (s *Server) Health() *health.Tracker { return s.health }

// FailedOpen counts requests that were served only because a fail-open stage kept every target.
func (s *Server) FailedOpen() int64 { return s.failedOpen.Load() }

// Close stops the active health checks and every process the gateway started, then releases idle
// upstream connections the server opened. Call it after the HTTP server has drained.
func (s *Server) Close() {
	s.closeActive()
	s.closeIdle()
}

// closeIdle closes the idle upstream connections the server opened.
func (s *Server) closeIdle() {
	if s.ownUp != nil {
		s.ownUp.Close()
	}
}

func (s *Server) router() *httprouter.Router {
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandlerFunc(http.MethodPost, "/v1/chat/completions", s.handleChat)
	r.HandlerFunc(http.MethodPost, "/v1/completions", s.handleCompletions)
	r.HandlerFunc(http.MethodPost, "/v1/embeddings", s.handleEmbeddings)
	r.HandlerFunc(http.MethodPost, "/v1/responses", s.handleResponses)
	r.HandlerFunc(http.MethodPost, "/v1/route/explain", s.handleExplain)
	r.Handle(http.MethodPost, "/v1/responses/:id/cancel", s.handleStoredResponse)
	r.Handle(http.MethodDelete, "/v1/responses/:id", s.handleStoredResponse)
	// HEAD wherever GET (RFC 9110 9.3.2); the HTTP server leaves the body out.
	for _, m := range [...]string{http.MethodGet, http.MethodHead} {
		r.HandlerFunc(m, "/v1/models", s.handleModels)
		r.Handle(m, "/v1/models/*id", func(w http.ResponseWriter, req *http.Request, ps httprouter.Params) {
			if ps.ByName("id") == "/" {
				// /v1/models with a trailing slash, not the model "": a slip of the base URL, as
				// /v1/chat/completions/ is (TestModelsTrailingSlashUnknownURL).
				r.NotFound.ServeHTTP(w, req)
				return
			}
			s.handleModel(w, req, ps)
		})
		r.HandlerFunc(m, "/healthz", s.handleHealthz)
		r.Handle(m, "/v1/responses/:id", s.handleStoredResponse)
		r.Handle(m, "/v1/responses/:id/input_items", s.handleStoredResponse)
		if s.metrics != nil {
			r.HandlerFunc(m, "/metrics", s.handleMetrics)
		}
	}
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		msg := fmt.Sprintf("Unrecognized request URL (%s %s).", req.Method, pathAsSent(req))
		if seg := escapedSlashSegment(req.URL.RawPath); seg != "" {
			msg += fmt.Sprintf(" The escaped slash (%%2F) in %q is not a separator of the gateway's paths.", shownPath(seg))
		} else if p := servedAt(r, req.Method, req.URL.Path); p != "" {
			msg += fmt.Sprintf(" It is served at %s: a client's base URL is the gateway's address and /v1, with no slash after it.", p)
		} else if otherHealthPath(req.Method, req.URL.Path) {
			msg += " Liveness is served at GET /healthz; each target's health is in GET /metrics (hayula_target_available) and POST /v1/route/explain."
		}
		writeError(w, &apiError{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: "unknown_url", Message: msg})
	})
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: typeInvalidRequest, Code: "method_not_allowed",
			Message: fmt.Sprintf("Method %s is not allowed on %s.", req.Method, pathAsSent(req))})
	})
	return r
}

// servedAt is the path r serves method at that path means, when a slip of a client's base URL
// explains the difference: /v1 left out (a base URL of the host alone), a doubled slash (a base
// URL ending in one), a trailing slash; "" when none does. It only names the path, in the 404's
// message: OpenAI's API serves none of these either, and a path served under two names would
// be one more that a proxy's rules must list (TestUnknownURLSaysWhereItIsServed).
func servedAt(r *httprouter.Router, method, path string) string {
	p := httprouter.CleanPath(path)
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	for _, c := range [...]string{p, "/v1" + p} {
		if c == path || (c != p && strings.HasPrefix(p, "/v1/")) {
			continue
		}
		if h, _, _ := r.Lookup(method, c); h != nil {
			return c
		}
	}
	return ""
}

// otherHealthPath reports whether a GET or HEAD of path asks for liveness or readiness as
// another gateway or Kubernetes spells it (LiteLLM's /health/liveliness and /health, /livez): a
// container healthcheck or uptime monitor moved over is told of /healthz
// (TestHealthPathsOfOtherGatewaysSayHealthz), which alone is served, as the other hints above.
func otherHealthPath(method, path string) bool {
	if method != http.MethodGet && method != http.MethodHead {
		return false
	}
	switch strings.TrimSuffix(path, "/") {
	case "/health", "/health/liveliness", "/health/liveness", "/health/readiness", "/v1/health", "/livez", "/readyz":
		return true
	}
	return false
}

// escapedSlash reports whether raw, a request's escaped path (url.URL.RawPath), has an escaped
// slash (%2F) where it would be one of a route's separators once decoded: anywhere but in the
// model ID of /v1/models/{id}, which may hold a slash (route names may) and which the SDKs escape
// (openai-go's Models.Get). The router matches the decoded path, so /v1/chat%2Fcompletions was
// served as chat, while a proxy or WAF in front that reads the raw path saw another one
// (TestEscapedSlashReachesNoRoute). Other escapes spell the same path (RFC 3986 §6.2.2.2) and
// are served. RawPath is "" for a path without escapes, so that a request asks nothing more
// than that.
func escapedSlash(raw string) bool { return escapedSlashAt(raw) >= 0 }

// escapedSlashAt is where in raw the escaped slash escapedSlash finds begins, or -1.
func escapedSlashAt(raw string) int {
	i := strings.Index(raw, "%2F")
	if j := strings.Index(raw, "%2f"); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	if i < 0 {
		return -1
	}
	if before, err := url.PathUnescape(raw[:i]); err == nil && strings.HasPrefix(before, "/v1/models/") {
		return -1
	}
	return i
}

// escapedSlashSegment is the segment of raw (between unescaped slashes) that holds the escaped
// slash escapedSlash finds, as sent, or "" when there is none: the part of the path a client
// must change, named in the 404's message.
func escapedSlashSegment(raw string) string {
	i := escapedSlashAt(raw)
	if i < 0 {
		return ""
	}
	start := strings.LastIndexByte(raw[:i], '/') + 1
	end := len(raw)
	if j := strings.IndexByte(raw[i:], '/'); j >= 0 {
		end = i + j
	}
	return raw[start:end]
}

// pathAsSent is r's path as the client spelt it, for a message that names it (404 unknown_url,
// 405): a client looks for its own spelling in its code. url.URL.Path is decoded, so it turned
// %0A, %1B and %C2%9B back into a line break, an ESC and a C1 control, bytes a client that
// prints the message hands its terminal or log line; EscapedPath re-escapes the whole path when
// the spelling holds a byte it would escape itself (a template's {model}), and shows an escaped
// slash as a slash; and RawPath, which should be the spelling, is left empty for some spellings
// Go would not produce. The request line's target is the spelling (r.RequestURI, its query cut);
// any byte outside printable ASCII in it is shown escaped (TestUnknownURLNamesThePathAsSent).
func pathAsSent(r *http.Request) string {
	p, _, _ := strings.Cut(r.RequestURI, "?")
	if !strings.HasPrefix(p, "/") { // a proxy's absolute form, or a request built in a test
		p = r.URL.RawPath
		if p == "" {
			p = r.URL.EscapedPath()
		}
	}
	return shownPath(p)
}

// shownPath is p with every byte outside printable ASCII percent-escaped, as a URL spells it.
func shownPath(p string) string {
	i := strings.IndexFunc(p, func(r rune) bool { return r <= ' ' || r >= 0x7f })
	if i < 0 {
		return p
	}
	var b strings.Builder
	b.WriteString(p[:i])
	for ; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// recoverer gives every request its ID (requestIDs), which every answer carries, and turns a
// panic into a logged 500; a response already under way is cut off instead. Its trackingWriters
// are pooled: one was an allocation on every request.
type recoverer struct {
	next    http.Handler
	log     *slog.Logger
	ids     *requestIDs
	writers sync.Pool // *trackingWriter
}

func (rc *recoverer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rw, _ := rc.writers.Get().(*trackingWriter)
	if rw == nil {
		rw = new(trackingWriter)
	}
	*rw = trackingWriter{ResponseWriter: w, line: rw.line}
	rw.id = rc.ids.assign(w, r, &rw.line)
	defer rc.rescue(rw, r)
	rc.next.ServeHTTP(rw, r)
	// The handler has returned, so nothing holds rw any more. After a panic it is not reused.
	*rw = trackingWriter{line: rw.line[:0]}
	rc.writers.Put(rw)
}

// rescue is deferred by ServeHTTP: recover only stops a panic when the deferred function itself
// calls it.
func (rc *recoverer) rescue(rw *trackingWriter, r *http.Request) {
	p := recover()
	if p == nil {
		return
	}
	if p == http.ErrAbortHandler {
		panic(p)
	}
	rc.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "request_id", rw.id,
		"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	if rw.wrote {
		panic(http.ErrAbortHandler)
	}
	writeError(rw, &apiError{Status: http.StatusInternalServerError, Type: typeServer, Code: "internal_error",
		Message: "the gateway hit an internal error; it has been logged"})
}

// trackingWriter remembers whether the header went out, so a panic knows whether it can still
// answer with an error.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
	id    string // the request's ID
	line  []byte // the buffer its field line is built in, kept across requests
}

func (w *trackingWriter) requestID() string { return w.id }

func (w *trackingWriter) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *trackingWriter) Flush() {
	w.wrote = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"status\":\"ok\",\"fail_open_total\":%d}\n", s.failedOpen.Load())
}

func sleepTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Config is the configuration the server was built from.
func (s *Server) Config() *config.Config { return s.cfg }
