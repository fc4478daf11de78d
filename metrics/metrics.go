// Package metrics owns what the gateway counts about the requests it serves, and the Prometheus
// text format it writes them in on a scrape (GET /metrics).
//
// Every series is known at load: a Set is built from the config's routes and targets, its counters
// and histograms are reached through arrays indexed by endpoint, route, target, failure class,
// status code and a stream's end, and the request path moves them with an atomic add or two, with
// no lock, map or allocation. The cells themselves belong to the process, by name: the Set of a reloaded
// configuration (Next) counts on in the cells of the routes, targets and keys it shares with the
// one it replaces, so that no counter goes back on a reload (Prometheus would read a fall as a
// reset, and an increase after it smaller than the fall as none), and the requests the replaced
// configuration is still serving are counted where the next scrape sees them. Once the new
// configuration serves, the cells of the names it no longer has are forgotten (Prune): a name a
// later reload brings back starts from zero, and the process keeps no cells for names it no
// longer serves. A scrape
// reads them without stopping writers, so one scrape may see a request's count without its
// duration's sum; the next one sees both. Gauges that are state rather than counts (a target's
// in-flight requests, whether health has it available) are read at scrape time by the caller,
// through Writer.
package metrics

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hayula/gateway/core"
)

// Buckets are the upper bounds of every duration histogram, in seconds: a model's answer takes
// from milliseconds (an error, a cached prompt) to minutes (a long stream).
var buckets = [...]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// bucketNanos are buckets in nanoseconds, for Observe.
var bucketNanos = func() (b [len(buckets)]int64) {
	for i, s := range buckets {
		b[i] = int64(s * 1e9)
	}
	return b
}()

// Histogram counts durations into buckets. Its zero value is ready.
type Histogram struct {
	counts [len(buckets) + 1]atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Int64                    // nanoseconds
}

// Observe counts one duration.
func (h *Histogram) Observe(d time.Duration) {
	n := int64(d)
	i := 0
	for i < len(bucketNanos) && n > bucketNanos[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(n)
}

// statusSlots are the statuses counted in a fixed slot: what the gateway answers, and what an
// upstream's restored error is most often. Any other is counted in requestCell.other.
var statusSlots = [...]int{200, 400, 401, 403, 404, 405, 408, 409, 413, 415, 422, 429, 499, 500, 501, 502, 503, 504}

// slotOf is the slot of status in statusSlots, or -1.
func slotOf(status int) int {
	for i, s := range statusSlots {
		if s == status {
			return i
		}
	}
	return -1
}

// otherKey is what a status without a slot is counted under in requestCell.other: the status
// itself when it has a registered meaning (net/http's StatusText knows it), else its class, 1 to
// 9 (written code="5xx"). The status may be an upstream's, restored as it came, and an upstream
// may answer any three digits: counted as themselves, a server answering 520, 521, … would add a
// series to every endpoint and route for each, up to 900 (TestUpstreamStatusesBoundSeries).
func otherKey(status int) int {
	if http.StatusText(status) != "" {
		return status
	}
	return min(max(status/100, 1), 9)
}

// codeLabel is the code label of an otherKey.
func codeLabel(k int) string {
	if k < 100 {
		return strconv.Itoa(k) + "xx"
	}
	return strconv.Itoa(k)
}

// requestCell is what is counted for one endpoint and route.
type requestCell struct {
	codes    [len(statusSlots)]atomic.Uint64
	duration Histogram

	mu    sync.Mutex
	other map[int]uint64 // statuses without a slot, by otherKey: at most the registered ones and 9 classes
}

// attemptCell is what is counted for one target.
type attemptCell struct {
	results [core.NumClasses]atomic.Uint64 // by the attempt's failure class; ClassNone is a success
	first   Histogram                      // successful attempts: sent to the answer's head or first event
}

// OpResponses is POST /v1/responses as Request counts it. The gateway serves it as chat upstream,
// so it is no core.Op an adapter sees, and its label follows core's ops.
const OpResponses = core.OpEmbeddings + 1

// Ops are the endpoints counted, in core.Op order, as they are named in the endpoint label.
var opNames = [...]string{core.OpChat: "chat", core.OpCompletions: "completions", core.OpEmbeddings: "embeddings",
	OpResponses: "responses"}

// Set is the gateway's counters. Build it with New; a nil *Set counts nothing, so that a gateway
// with metrics turned off pays one nil check per call.
type Set struct {
	routes  []string // route names; index len(routes) is a request that resolved no route
	targets []string
	started time.Time
	cells   *cells // where the counts are; shared with the Sets before and after a reload

	requests []*requestCell // [op][route]: op*(len(routes)+1) + route
	attempts []*attemptCell // by core.Target.Index
	served   []*atomic.Uint64
	tokens   []*[2]atomic.Uint64 // [route][target]: prompt, completion
	ends     []*streamEndCell    // [op][route][target]: (op*len(routes)+route)*len(targets) + target
	// moves are [from route][to route]: from*len(routes) + to, a cell only for a move auto can
	// make (WithMoves), nil for every other pair; nil without WithMoves.
	moves []*atomic.Uint64

	keys      []string
	keyCounts []*keyCell // by key
}

// cells are every count the process has made, by the names they are labelled with, whatever
// configuration made them. A Set takes its cells from here when it is built, under mu; the
// request path reaches them through the Set, with no lock.
type cells struct {
	mu       sync.Mutex
	requests map[opRoute]*requestCell
	attempts map[string]*attemptCell
	served   map[routeTarget]*atomic.Uint64
	tokens   map[routeTarget]*[2]atomic.Uint64
	ends     map[opRouteTarget]*streamEndCell
	moves    map[routeMove]*atomic.Uint64
	keys     map[string]*keyCell

	browserRefused [2]atomic.Uint64 // by Refused's reason
}

type opRoute struct {
	op    int
	route string // "" for a request that resolved no route
}

type routeTarget struct{ route, target string }

// routeMove is model auto's move of a request from the route its text was classified to to
// another.
type routeMove struct{ from, to string }

type opRouteTarget struct {
	op            int
	route, target string
}

// Ways a stream whose head went out ended, as StreamEnd counts them and the end label names
// them: the request log line's stream= values, and done for one that ended with its [DONE].
const (
	StreamDone       = iota
	StreamClientLeft // the client went away mid-stream
	StreamBrokeOff   // the upstream failed after the first event; the client got an error event
	StreamAborted    // the upstream ended it with finish_reason "abort" after its first event, relayed as it came
	numStreamEnds
)

var streamEndNames = [numStreamEnds]string{"done", "client_left", "broke_off", "aborted"}

// streamEndCell is what is counted for the streams of one endpoint and route relayed by one
// target: by how they ended.
type streamEndCell [numStreamEnds]atomic.Uint64

// cell returns m's cell for k, made when there is none.
func cell[K comparable, V any](m map[K]*V, k K) *V {
	v := m[k]
	if v == nil {
		v = new(V)
		m[k] = v
	}
	return v
}

// keyCell is what is counted for one client key.
type keyCell struct {
	requests atomic.Uint64
	limited  [3]atomic.Uint64 // refused by the rpm cap, by the max_concurrent cap, by the tpm cap
	tokens   [2]atomic.Uint64 // prompt, completion
}

// Caps a key can be refused by, as Limited counts them.
const (
	CapRPM = iota
	CapConcurrent
	CapTPM
)

// New builds a Set for the given route and target names (target names in core.Target.Index order),
// counting from zero. started is the process's start, for process_start_time_seconds. WithKeys
// adds the client keys.
func New(routes, targets []string, started time.Time) *Set {
	return (*Set)(nil).Next(routes, targets, started)
}

// Next builds the Set of a configuration that replaces s's, as New does, except that the series
// of a route, target, route and target, or key that s's configuration had too go on from the
// counts s has (and s's requests still under way count in them, where a scrape of the new Set
// sees them). A nil s is New.
func (s *Set) Next(routes, targets []string, started time.Time) *Set {
	var c *cells
	if s != nil {
		c = s.cells
	} else {
		c = &cells{requests: map[opRoute]*requestCell{}, attempts: map[string]*attemptCell{},
			served: map[routeTarget]*atomic.Uint64{}, tokens: map[routeTarget]*[2]atomic.Uint64{},
			ends: map[opRouteTarget]*streamEndCell{}, moves: map[routeMove]*atomic.Uint64{}, keys: map[string]*keyCell{}}
	}
	n := &Set{
		routes:   routes,
		targets:  targets,
		started:  started,
		cells:    c,
		requests: make([]*requestCell, len(opNames)*(len(routes)+1)),
		attempts: make([]*attemptCell, len(targets)),
		served:   make([]*atomic.Uint64, len(routes)*len(targets)),
		tokens:   make([]*[2]atomic.Uint64, len(routes)*len(targets)),
		ends:     make([]*streamEndCell, len(opNames)*len(routes)*len(targets)),
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for op := range opNames {
		for r := 0; r <= len(routes); r++ {
			n.requests[op*(len(routes)+1)+r] = cell(c.requests, opRoute{op, n.routeName(r)})
		}
	}
	for t, name := range targets {
		n.attempts[t] = cell(c.attempts, name)
	}
	for r, route := range routes {
		for t, target := range targets {
			n.served[r*len(targets)+t] = cell(c.served, routeTarget{route, target})
			n.tokens[r*len(targets)+t] = cell(c.tokens, routeTarget{route, target})
			for op := range opNames {
				n.ends[(op*len(routes)+r)*len(targets)+t] = cell(c.ends, opRouteTarget{op, route, target})
			}
		}
	}
	return n
}

// Prune forgets the counts of every route, target and key that s's configuration does not name,
// and of every move its auto cannot make (WithMoves), so that a process whose reloads rename targets or rotate keys keeps no cells for the names it
// no longer serves, and a name a later configuration brings back starts from zero, as a series
// new to Prometheus. It is for when s's configuration is put in service (Live.Replace), not when
// s is built: a reload may build a Set and then be refused, and the configuration that goes on
// serving must keep its counts. The request path never reads the cells by name, so a request of
// a replaced configuration that ends after this counts in the cells its own Set holds, which no
// Set built after this one shares: no late count re-creates a forgotten series
// (TestReloadForgetsRemovedSeries).
func (s *Set) Prune() {
	if s == nil {
		return
	}
	routes := make(map[string]bool, len(s.routes)+1)
	routes[""] = true // a request that resolved no route
	for _, r := range s.routes {
		routes[r] = true
	}
	targets := make(map[string]bool, len(s.targets))
	for _, t := range s.targets {
		targets[t] = true
	}
	keys := make(map[string]bool, len(s.keys))
	for _, k := range s.keys {
		keys[k] = true
	}
	moves := make(map[routeMove]bool)
	for i, m := range s.moves {
		if m != nil {
			moves[routeMove{s.routes[i/len(s.routes)], s.routes[i%len(s.routes)]}] = true
		}
	}
	c := s.cells
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.DeleteFunc(c.requests, func(k opRoute, _ *requestCell) bool { return !routes[k.route] })
	maps.DeleteFunc(c.attempts, func(k string, _ *attemptCell) bool { return !targets[k] })
	maps.DeleteFunc(c.served, func(k routeTarget, _ *atomic.Uint64) bool { return !routes[k.route] || !targets[k.target] })
	maps.DeleteFunc(c.tokens, func(k routeTarget, _ *[2]atomic.Uint64) bool { return !routes[k.route] || !targets[k.target] })
	maps.DeleteFunc(c.ends, func(k opRouteTarget, _ *streamEndCell) bool { return !routes[k.route] || !targets[k.target] })
	maps.DeleteFunc(c.moves, func(k routeMove, _ *atomic.Uint64) bool { return !moves[k] })
	maps.DeleteFunc(c.keys, func(k string, _ *keyCell) bool { return !keys[k] })
}

// routeName is the route label of route index r: "" for a request that resolved no route.
func (s *Set) routeName(r int) string {
	if r == len(s.routes) {
		return ""
	}
	return s.routes[r]
}

// WithKeys makes s count per client key too (names in config.Key.Index order); it is for
// building, before any count. A key whose name the Set s was built from had counts on.
func (s *Set) WithKeys(keys []string) *Set {
	s.keys = keys
	s.keyCounts = make([]*keyCell, len(keys))
	s.cells.mu.Lock()
	defer s.cells.mu.Unlock()
	for i, name := range keys {
		s.keyCounts[i] = cell(s.cells.keys, name)
	}
	return s
}

// WithMoves makes s count model auto's moves among routes (indexes into the routes s was built
// with: auto's move order, the intents' routes and the default, which are also every route auto
// classifies a request to), with a cell for each ordered pair of two of them and none for a pair
// auto cannot make; it is for building, before any count. A move the Set s was built from had
// counts on goes on from them. Without it s counts no move.
func (s *Set) WithMoves(routes []int) *Set {
	s.moves = make([]*atomic.Uint64, len(s.routes)*len(s.routes))
	s.cells.mu.Lock()
	defer s.cells.mu.Unlock()
	for _, f := range routes {
		for _, t := range routes {
			if f != t && f >= 0 && f < len(s.routes) && t >= 0 && t < len(s.routes) {
				s.moves[f*len(s.routes)+t] = cell(s.cells.moves, routeMove{s.routes[f], s.routes[t]})
			}
		}
	}
	return s
}

// Key counts one request made with key (an index into the names WithKeys was given; anything
// else, such as -1 for a gateway without keys, counts nothing).
func (s *Set) Key(key int) {
	if s == nil || key < 0 || key >= len(s.keyCounts) {
		return
	}
	s.keyCounts[key].requests.Add(1)
}

// Limited counts a request of key refused by a cap (CapRPM, CapConcurrent, CapTPM).
func (s *Set) Limited(key, cap int) {
	if s == nil || key < 0 || key >= len(s.keyCounts) || cap < 0 || cap > CapTPM {
		return
	}
	s.keyCounts[key].limited[cap].Add(1)
}

// KeyTokens counts the tokens an answer to a request of key reported.
func (s *Set) KeyTokens(key int, prompt, completion uint64) {
	if s == nil || key < 0 || key >= len(s.keyCounts) {
		return
	}
	s.keyCounts[key].tokens[0].Add(prompt)
	s.keyCounts[key].tokens[1].Add(completion)
}

// Reasons the browser guard refuses a request for, as BrowserRefused counts them.
const (
	RefusedHost = iota
	RefusedOrigin
)

// BrowserRefused counts a request the browser guard refused (RefusedHost, RefusedOrigin).
func (s *Set) BrowserRefused(reason int) {
	if s == nil || reason < 0 || reason > RefusedOrigin {
		return
	}
	s.cells.browserRefused[reason].Add(1)
}

// NoRoute is the route index of a request refused before it resolved a route.
const NoRoute = -1

// Request counts one request on an OpenAI endpoint: its route (an index into the routes New was
// given, or NoRoute), the status it was answered with, and how long it took to its last byte.
func (s *Set) Request(op core.Op, route, status int, d time.Duration) {
	if s == nil || int(op) >= len(opNames) {
		return
	}
	if route < 0 || route >= len(s.routes) {
		route = len(s.routes)
	}
	c := s.requests[int(op)*(len(s.routes)+1)+route]
	if i := slotOf(status); i >= 0 {
		c.codes[i].Add(1)
	} else {
		c.mu.Lock()
		if c.other == nil {
			c.other = map[int]uint64{}
		}
		c.other[otherKey(status)]++
		c.mu.Unlock()
	}
	c.duration.Observe(d)
}

// Attempt counts one attempt on a target: its failure class (core.ClassNone for one that
// answered) and, for one that answered, how long the answer's head (or a stream's first event)
// took.
func (s *Set) Attempt(target int, class core.Class, first time.Duration) {
	if s == nil || target < 0 || target >= len(s.attempts) || int(class) >= core.NumClasses {
		return
	}
	a := s.attempts[target]
	a.results[class].Add(1)
	if class == core.ClassNone {
		a.first.Observe(first)
	}
}

// Served counts a request of route answered by target.
func (s *Set) Served(route, target int) {
	if s == nil || route < 0 || route >= len(s.routes) || target < 0 || target >= len(s.targets) {
		return
	}
	s.served[route*len(s.targets)+target].Add(1)
}

// StreamEnd counts a stream on endpoint op of route, relayed by target, whose head went out, by
// how it ended (StreamDone, StreamClientLeft, StreamBrokeOff, StreamAborted). Request counts such a stream's 200
// whatever its end; this tells the ends apart.
func (s *Set) StreamEnd(op core.Op, route, target, end int) {
	if s == nil || int(op) >= len(opNames) || route < 0 || route >= len(s.routes) ||
		target < 0 || target >= len(s.targets) || end < 0 || end >= numStreamEnds {
		return
	}
	s.ends[(int(op)*len(s.routes)+route)*len(s.targets)+target][end].Add(1)
}

// Moved counts a request model auto moved off route from, the one its text was classified to,
// to route to (indexes into the routes New was given; the same route twice is no move, and a
// pair WithMoves did not make a cell for is none auto makes: neither counts).
func (s *Set) Moved(from, to int) {
	if s == nil || s.moves == nil || from < 0 || from >= len(s.routes) || to < 0 || to >= len(s.routes) {
		return
	}
	if c := s.moves[from*len(s.routes)+to]; c != nil {
		c.Add(1)
	}
}

// Tokens counts the tokens an answer of route by target reports in its usage.
func (s *Set) Tokens(route, target int, prompt, completion uint64) {
	if s == nil || route < 0 || route >= len(s.routes) || target < 0 || target >= len(s.targets) {
		return
	}
	c := s.tokens[route*len(s.targets)+target]
	c[0].Add(prompt)
	c[1].Add(completion)
}

// Write writes every counter of s in the text format, then what more adds (gauges read now).
func (s *Set) Write(w *Writer, more func(*Writer)) {
	if s == nil {
		return
	}
	w.Family("hayula_requests_total", "counter", "Requests on the OpenAI endpoints, by endpoint, route (empty when none was resolved) and the status answered.")
	var other []int
	for op := range opNames {
		for r := 0; r <= len(s.routes); r++ {
			c := s.requests[op*(len(s.routes)+1)+r]
			for i := range c.codes {
				if v := c.codes[i].Load(); v > 0 {
					w.Sample("hayula_requests_total", v, "endpoint", opNames[op], "route", s.routeName(r), "code", strconv.Itoa(statusSlots[i]))
				}
			}
			// The statuses without a slot, sorted, and their counts, copied out under the lock.
			c.mu.Lock()
			other = other[:0]
			for st := range c.other {
				other = append(other, st)
			}
			slices.Sort(other)
			counts := make([]uint64, len(other))
			for i, st := range other {
				counts[i] = c.other[st]
			}
			c.mu.Unlock()
			for i, st := range other {
				w.Sample("hayula_requests_total", counts[i], "endpoint", opNames[op], "route", s.routeName(r), "code", codeLabel(st))
			}
		}
	}
	w.Family("hayula_request_duration_seconds", "histogram", "Time from a request's arrival to its answer's last byte, by endpoint and route.")
	for op := range opNames {
		for r := 0; r <= len(s.routes); r++ {
			c := s.requests[op*(len(s.routes)+1)+r]
			w.Histogram("hayula_request_duration_seconds", &c.duration, "endpoint", opNames[op], "route", s.routeName(r))
		}
	}
	w.Family("hayula_upstream_attempts_total", "counter", `Attempts on each target, by result: "ok", or the failure class that ended it.`)
	for t, name := range s.targets {
		a := s.attempts[t]
		for c := range a.results {
			if v := a.results[c].Load(); v > 0 {
				result := core.Class(c).String()
				if core.Class(c) == core.ClassNone {
					result = "ok"
				}
				w.Sample("hayula_upstream_attempts_total", v, "target", name, "result", result)
			}
		}
	}
	w.Family("hayula_upstream_first_response_seconds", "histogram", "Time from sending an attempt to its answer's head (or, streamed, its first event), for attempts that answered.")
	for t, name := range s.targets {
		w.Histogram("hayula_upstream_first_response_seconds", &s.attempts[t].first, "target", name)
	}
	w.Family("hayula_served_total", "counter", "Requests of each route answered by each target: how often the chain moved on shows as targets other than the route's first.")
	for r, route := range s.routes {
		for t, target := range s.targets {
			if v := s.served[r*len(s.targets)+t].Load(); v > 0 {
				w.Sample("hayula_served_total", v, "route", route, "target", target)
			}
		}
	}
	w.Family("hayula_stream_ends_total", "counter", `Streams whose head went out (each counted 200 in hayula_requests_total), by endpoint, route, the target that relayed them, and how they ended: "done" (their [DONE]), "client_left" (the client went away mid-stream), "broke_off" (the upstream failed after the first event; the client got an error event) or "aborted" (the upstream ended it with finish_reason "abort", its engine having given the request up, after the first event: relayed as it came, but not whole).`)
	for op := range opNames {
		for r, route := range s.routes {
			for t, target := range s.targets {
				c := s.ends[(op*len(s.routes)+r)*len(s.targets)+t]
				for e := range c {
					if v := c[e].Load(); v > 0 {
						w.Sample("hayula_stream_ends_total", v, "endpoint", opNames[op], "route", route, "target", target, "end", streamEndNames[e])
					}
				}
			}
		}
	}
	w.Family("hayula_auto_moves_total", "counter", `Requests for model "auto" moved off the route their text was classified to (from), none of whose targets could take them, to the route they were sent to instead (to).`)
	for i, c := range s.moves {
		if c == nil {
			continue
		}
		if v := c.Load(); v > 0 {
			w.Sample("hayula_auto_moves_total", v, "from", s.routes[i/len(s.routes)], "to", s.routes[i%len(s.routes)])
		}
	}
	w.Family("hayula_tokens_total", "counter", "Tokens the answers of each route by each target reported in their usage, by kind (prompt, completion); a stream's are what its upstream reported last, asked for or not, counted once.")
	for r, route := range s.routes {
		for t, target := range s.targets {
			c := s.tokens[r*len(s.targets)+t]
			for k, kind := range [2]string{"prompt", "completion"} {
				if v := c[k].Load(); v > 0 {
					w.Sample("hayula_tokens_total", v, "route", route, "target", target, "kind", kind)
				}
			}
		}
	}
	if len(s.keys) > 0 {
		w.Family("hayula_key_requests_total", "counter", "Requests on the OpenAI endpoints made with each client key, whatever their answer.")
		for k, name := range s.keys {
			w.Sample("hayula_key_requests_total", s.keyCounts[k].requests.Load(), "key", name)
		}
		w.Family("hayula_key_limited_total", "counter", "Requests of each client key refused 429 by its caps, by cap (rpm, max_concurrent, tpm).")
		for k, name := range s.keys {
			for c, cap := range [3]string{"rpm", "max_concurrent", "tpm"} {
				if v := s.keyCounts[k].limited[c].Load(); v > 0 {
					w.Sample("hayula_key_limited_total", v, "key", name, "cap", cap)
				}
			}
		}
		w.Family("hayula_key_tokens_total", "counter", "Tokens the answers to each client key's requests reported in their usage, by kind (prompt, completion).")
		for k, name := range s.keys {
			for i, kind := range [2]string{"prompt", "completion"} {
				if v := s.keyCounts[k].tokens[i].Load(); v > 0 {
					w.Sample("hayula_key_tokens_total", v, "key", name, "kind", kind)
				}
			}
		}
	}
	w.Family("hayula_browser_refused_total", "counter", "Requests refused 403 because their Host (host_not_allowed: DNS rebinding) or Origin (origin_not_allowed) was not allowed.")
	for i, reason := range [2]string{"host_not_allowed", "origin_not_allowed"} {
		w.Sample("hayula_browser_refused_total", s.cells.browserRefused[i].Load(), "reason", reason)
	}
	w.Family("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch, in seconds.")
	w.Float("process_start_time_seconds", float64(s.started.UnixNano())/1e9)
	if more != nil {
		more(w)
	}
}

// Writer writes the Prometheus text format (version 0.0.4) into a byte slice.
type Writer struct {
	b []byte
}

// ContentType is the Content-Type of what Writer writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Bytes is what was written.
func (w *Writer) Bytes() []byte { return w.b }

// Family starts a metric family: its HELP and TYPE lines.
func (w *Writer) Family(name, typ, help string) {
	w.b = append(w.b, "# HELP "...)
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	for i := 0; i < len(help); i++ {
		switch c := help[i]; c {
		case '\\':
			w.b = append(w.b, `\\`...)
		case '\n':
			w.b = append(w.b, `\n`...)
		default:
			w.b = append(w.b, c)
		}
	}
	w.b = append(w.b, "\n# TYPE "...)
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, typ...)
	w.b = append(w.b, '\n')
}

// Sample writes one sample of a counter or gauge with an integer value; labels are name, value
// pairs.
func (w *Writer) Sample(name string, v uint64, labels ...string) {
	w.series(name, labels)
	w.b = strconv.AppendUint(w.b, v, 10)
	w.b = append(w.b, '\n')
}

// Float writes one sample with a float value.
func (w *Writer) Float(name string, v float64, labels ...string) {
	w.series(name, labels)
	w.b = appendFloat(w.b, v)
	w.b = append(w.b, '\n')
}

// Histogram writes h's buckets (cumulative, as the format wants), sum and count.
func (w *Writer) Histogram(name string, h *Histogram, labels ...string) {
	var cum uint64
	le := make([]string, len(labels)+2)
	copy(le, labels)
	le[len(labels)] = "le"
	for i := range h.counts {
		cum += h.counts[i].Load()
		if i < len(buckets) {
			le[len(labels)+1] = string(appendFloat(nil, buckets[i]))
		} else {
			le[len(labels)+1] = "+Inf"
		}
		w.Sample(name+"_bucket", cum, le...)
	}
	w.Float(name+"_sum", float64(h.sum.Load())/1e9, labels...)
	w.Sample(name+"_count", cum, labels...)
}

func (w *Writer) series(name string, labels []string) {
	w.b = append(w.b, name...)
	if len(labels) > 0 {
		w.b = append(w.b, '{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, labels[i]...)
			w.b = append(w.b, `="`...)
			w.b = appendLabelValue(w.b, labels[i+1])
			w.b = append(w.b, '"')
		}
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ' ')
}

// appendLabelValue escapes a label value as the format requires: backslash, double quote and
// line feed.
func appendLabelValue(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
