package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/lifecycle"
)

// procs is the server's side of the targets whose processes the gateway runs.
type procs struct {
	m       *lifecycle.Manager
	log     *slog.Logger
	managed []bool // by core.Target.Index
	closeBy time.Duration

	// adopted: m is a previous server's, handed over on a reload (Options.Previous); it was
	// started there.
	adopted bool
	// users counts the servers not yet closed that use m, this one's and every procs m was handed
	// through: a replaced server still draining serves on m after its successor has been closed
	// (a later reload ran no process), so m is closed by whichever is closed last.
	users *atomic.Int64
	// keys are the upstream keys m's log lines are redacted of, shared with every server m is
	// handed to: m keeps the logger it was built with, and a reload that adds a target's key
	// adds it here (adoptProcs).
	keys *redactKeys

	mu      sync.Mutex
	warming []bool // by core.Target.Index: a background start is under way
	closed  bool
	// handedOver: the server that replaced this one took m over (it may be handed over once).
	handedOver bool
	bg         sync.WaitGroup // background starts
}

// coldError is the attempt the server did not make on a managed target whose process was not
// running, because a later target of the chain could serve at once; the process is started in
// the background meanwhile. Its class is loading.
type coldError struct {
	Target string
	// State is the process's state when the request passed it by: stopped, starting, backoff…
	State lifecycle.State
}

func (e *coldError) Error() string {
	return fmt.Sprintf("%s: model process %s; started in the background, the request moved on", e.Target, e.State)
}

// lifecycleClock lends the server's clock to the lifecycle manager, whose Timer type is its own.
type lifecycleClock struct{ health.TimerClock }

func (c lifecycleClock) AfterFunc(d time.Duration, f func()) lifecycle.Timer {
	return c.TimerClock.AfterFunc(d, f)
}

// newProcs builds the lifecycle manager when some target has a command; nil when none has and
// there is no previous server's to take over. Options.Lifecycle tunes it; its state file and
// wait_healthy come from the config unless set there, its clock is the server's when that can
// schedule, and its logger the server's. A previous server's manager is taken over even by a
// configuration with no command: its Reload to none stops the processes once no request holds
// them, where the previous server's Close would stop them only once it had drained every request,
// and a later reload that brings commands back finds them in its slots rather than build a
// manager that starts beside them (TestManagedTargets, "a reload that runs no process").
func (s *Server) newProcs(o Options) (*procs, error) {
	lc := o.Config.Lifecycle
	if len(lc.Specs) == 0 && (o.Previous == nil || o.Previous.procs == nil) {
		return nil, nil
	}
	lo := o.Lifecycle
	if lo.StateFile == "" {
		lo.StateFile = lc.StateFile
	}
	lo.WaitHealthy = lo.WaitHealthy || lc.WaitHealthy
	if lo.Logger == nil {
		lo.Logger = s.log
	}
	lo.Counts = s.launched
	// The manager logs the last lines a process wrote to stderr: the model server's words,
	// which may hold the key it was given (TestProcessStderrKeyRedacted).
	keys := new(redactKeys)
	keys.add(o.Config.Targets)
	lo.Logger = slog.New(&redactHandler{next: lo.Logger.Handler(), keys: keys})
	if tc, ok := s.clock.(health.TimerClock); ok && lo.Clock == nil {
		lo.Clock = lifecycleClock{tc}
	}
	var (
		m       *lifecycle.Manager
		adopted bool
	)
	users := new(atomic.Int64)
	if prev := o.Previous; prev != nil && prev.procs != nil {
		// Handed over by adoptProcs, once nothing else can fail: counted there.
		m, adopted, users, keys = prev.procs.m, true, prev.procs.users, prev.procs.keys
	} else {
		users.Store(1)
		var err error
		if m, err = lifecycle.New(lc.Specs, lc.Groups, lo); err != nil {
			return nil, err
		}
	}
	n := len(o.Config.Targets)
	p := &procs{m: m, log: s.log, managed: make([]bool, n), warming: make([]bool, n), closeBy: lo.StopGrace,
		adopted: adopted, users: users, keys: keys}
	if p.closeBy <= 0 {
		p.closeBy = lifecycle.DefaultStopGrace
	}
	// Past the SIGTERM grace every child has been killed, and past KillWait each stop has ended
	// even for a process the kernel cannot kill yet: waiting less, the gateway would exit with a
	// stop still under way and its state file not saved (TestProcsCloseOutlastsKillWait).
	p.closeBy += lifecycle.KillWait + 5*time.Second
	for _, spec := range lc.Specs {
		if t, ok := o.Config.Target(spec.Name); ok {
			p.managed[t.Index] = true
		}
	}
	return p, nil
}

// adoptProcs takes over prev's lifecycle manager when this server adopted it (newProcs): the
// manager changes to this config's specs and groups, and prev's Close no longer stops it.
func (s *Server) adoptProcs(prev *Server) error {
	if s.procs == nil || !s.procs.adopted {
		return nil
	}
	pp := prev.procs
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.handedOver {
		return fmt.Errorf("server: the previous server's processes were handed over already")
	}
	lc := s.cfg.Lifecycle
	// Before the new specs: a process the reload adds may write its key to stderr as it starts,
	// and the manager's logger, the first server's, knew only the keys of that server's targets
	// (TestReloadedProcessStderrKeyRedacted).
	s.procs.keys.add(s.cfg.Targets)
	if err := s.procs.m.Reload(lc.Specs, lc.Groups); err != nil {
		return err
	}
	pp.handedOver = true
	s.procs.users.Add(1)
	return nil
}

// Start begins what runs beside the requests: the active health checks, and, when targets have
// a command, the pinned processes and those the state file names. It returns at once unless the
// config says wait_healthy, in which case it waits until every pinned process is healthy or ctx
// ends. Call it before serving; requests work without it, but no target is checked, and no
// process starts before a request asks for it.
func (s *Server) Start(ctx context.Context) error {
	s.checker.Start()
	if s.procs == nil || s.procs.adopted {
		// An adopted manager was started by the server it came from; Reload starts the new
		// pinned members.
		return nil
	}
	return s.procs.m.Start(ctx)
}

// Processes is the lifecycle manager; nil when no target has a command.
func (s *Server) Processes() *lifecycle.Manager {
	if s.procs == nil {
		return nil
	}
	return s.procs.m
}

// managed reports whether the gateway runs t's process.
func (s *Server) managed(t *core.Target) bool {
	return s.procs != nil && t.Index >= 0 && t.Index < len(s.procs.managed) && s.procs.managed[t.Index]
}

// attemptOn is attempt for any target. A managed target's process is made to run first, and the
// attempt goes to the base URL of that process (a shallow copy of t: Index and Stats are shared,
// so health and selection see one target). The process is held until the response has been
// written: the result's end releases it. The outcome is written in *a, as attempt's is.
//
// When the process is not running, the request waits for it (Ensure, bounded by the target's
// load_timeout and by the request) unless fallback is on for loading and a later candidate can
// serve now: then the attempt ends at once in class loading, so that the chain moves on and
// x-hayula-chain names the target passed by, and run starts the process in the background once the
// request holds what serves it (warmPassed): started at once, it could evict, to make room, the
// very member the request was moving on to.
//
// claim is attempt's: the first try is held when health no longer has t available. For a
// managed target that is asked once the process runs, so that a probe is never claimed by an
// attempt that a cold start then ends without a report.
func (s *Server) attemptOn(ctx context.Context, rs *routeState, st *reqState, req *core.Request, t *core.Target,
	rest []*core.Target, failures []core.Class, overflowDrops int, claim bool, id string, a *attemptResult) {
	if !s.managed(t) {
		s.attempt(ctx, rs, st, t, req, claim, id, a)
		return
	}
	s.attemptManaged(ctx, rs, st, req, t, rest, failures, overflowDrops, claim, id, a)
}

// attemptManaged is attemptOn for a managed target. A function of its own, so that what only a
// managed target needs (the copy of the target that carries its process's URL above all) is not
// a part of every request's stack, down to the wait for the answer.
//
//go:noinline
func (s *Server) attemptManaged(ctx context.Context, rs *routeState, st *reqState, req *core.Request, t *core.Target,
	rest []*core.Target, failures []core.Class, overflowDrops int, claim bool, id string, a *attemptResult) {
	m := s.procs.m
	// Both ends before once are attempts x-hayula-chain names, and counted as such: a target whose
	// process never starts would otherwise look like one nobody asked.
	if st := m.State(t.Name); st != lifecycle.StateReady && s.canServeNow(rs, req, rest, failures, overflowDrops) {
		s.metrics.Attempt(t.Index, core.ClassLoading, 0)
		*a = attemptResult{
			dec:  errmap.Decision{Class: core.ClassLoading, Status: 503, RetryAfter: health.DefaultLoadingRetry},
			err:  &coldError{Target: t.Name, State: st},
			warm: true,
		}
		return
	}
	url, release, err := m.Ensure(ctx, t.Name)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		dec := errmap.ClassifyFor(ctx, err)
		if dec.Class == core.ClassLoading && dec.RetryAfter == 0 {
			// Nothing said when to come back: the same hint as for a target passed by cold.
			dec.RetryAfter = health.DefaultLoadingRetry
		}
		if dec.Penalize {
			// A process that cannot start counts against the target like a refused connection.
			s.health.Report(t, dec.Class, 0)
		}
		s.metrics.Attempt(t.Index, dec.Class, 0)
		*a = attemptResult{dec: dec, err: err}
		return
	}
	if s.reloadForbids(req, rs.Name, st.movedFrom, st.key, t) {
		// The start may have taken minutes, and a reload in that time made t public or the
		// request strict: nothing has been sent, so nothing is
		// (TestManagedTargets, "a strict request waiting for its process …").
		release()
		*a = attemptResult{forbidden: true}
		return
	}
	live := *t
	live.URL = url
	// A panicking attempt gives the process back too: held, it could never be evicted or stopped
	// (TestManagedTargets, "a panicking attempt gives the process back").
	handed := false
	defer func() {
		if !handed {
			release()
		}
	}()
	s.attempt(ctx, rs, st, &live, req, claim, id, a)
	handed = true
	if a.end.stats == nil {
		release()
		return
	}
	a.end.release = release
}

// canServeNow reports whether fallback would carry the request past a target in class loading to
// a candidate that can answer without waiting: fallback is on for loading, and some candidate
// left is not a stopped managed target and, if guarded, would be let in.
func (s *Server) canServeNow(rs *routeState, req *core.Request, rest []*core.Target, failures []core.Class, overflowDrops int) bool {
	if req.NoFallback || !rs.FallbackOn.Has(core.ClassLoading) {
		return false
	}
	next := append(failures[:len(failures):len(failures)], core.ClassLoading)
	for _, c := range rest {
		if g := rs.guard[c.Index]; g != 0 && !guardOpen(g, next, overflowDrops) {
			continue
		}
		if s.managed(c) && !s.procs.m.Ready(c.Name) {
			continue
		}
		return true
	}
	return false
}

// warmPassed starts in the background the processes of the targets a request passed by cold.
func (p *procs) warmPassed(ts []*core.Target) {
	for _, t := range ts {
		p.warm(t.Name, t.Index)
	}
}

// warm starts name's process in the background, detached from any request and bounded by the
// target's load_timeout, unless a background start of it is already under way or the server is
// closing. It is the manager's Warm, not Ensure: a start nobody waits for gives way to those
// somebody does (TestBackgroundStartGivesWay).
func (p *procs) warm(name string, index int) {
	p.mu.Lock()
	if p.closed || p.warming[index] {
		p.mu.Unlock()
		return
	}
	p.warming[index] = true
	p.bg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.bg.Done()
		err := p.m.Warm(context.Background(), name)
		p.mu.Lock()
		p.warming[index] = false
		p.mu.Unlock()
		if err != nil && !errors.Is(err, lifecycle.ErrClosed) && !errors.Is(err, lifecycle.ErrStopping) {
			// A launch that fails is the manager's to log; this is a start that never began.
			p.log.Warn("background start failed", "target", name, "error", err)
		}
	}()
}

// close stops every process (the HTTP server has drained by now) and waits for the background
// starts, which end when the manager closes; unless another server still uses the manager (see
// users), whichever of them is closed last does that.
func (p *procs) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	if p.users.Add(-1) > 0 {
		// A server still uses the processes: a newer one that took them over, or an older one
		// still serving requests on them. A background start under way ends by itself
		// (load_timeout) and leaves the process to the manager.
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.closeBy)
	defer cancel()
	err := p.m.Close(ctx)
	p.bg.Wait()
	return err
}

// redactKeys is the set of upstream keys a redactHandler redacts, which a reload can add to while
// the handler is in use. Keys are only added: a retired process of the replaced configuration
// may still write its key as it stops.
type redactKeys struct {
	mu   sync.Mutex
	list atomic.Pointer[[]string] // read on every line; replaced whole under mu
}

// add adds the keys of targets that the set does not hold yet.
func (k *redactKeys) add(targets []*core.Target) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var have []string
	if p := k.list.Load(); p != nil {
		have = *p
	}
	next := have
	for _, t := range targets {
		if t.APIKey != "" && !slices.Contains(next, string(t.APIKey)) {
			if len(next) == len(have) {
				next = slices.Clone(have) // readers may hold have
			}
			next = append(next, string(t.APIKey))
		}
	}
	if len(next) != len(have) {
		k.list.Store(&next)
	}
}

// all are the keys now; nil for none.
func (k *redactKeys) all() []string {
	if p := k.list.Load(); p != nil {
		return *p
	}
	return nil
}

// redactHandler is a slog.Handler that redacts keys before next sees a record.
type redactHandler struct {
	next slog.Handler
	keys *redactKeys
}

var _ slog.Handler = (*redactHandler)(nil)

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, r slog.Record) error {
	keys := h.keys.all()
	out := slog.NewRecord(r.Time, r.Level, redactAll(r.Message, keys), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a, keys))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs redacts as with the keys known now: the manager adds none (its lines carry their
// attributes), so a key a later reload adds is in none of them.
func (h *redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	keys := h.keys.all()
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = redactAttr(a, keys)
	}
	return &redactHandler{next: h.next.WithAttrs(red), keys: h.keys}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name), keys: h.keys}
}

// redactAll is s without any of keys (redactKey).
func redactAll(s string, keys []string) string {
	for _, k := range keys {
		s = redactKey(s, k)
	}
	return s
}

// redactAttr is a with keys redacted from its text: a string's, a group's members', and any
// other value's (an error) as it would be printed, when that holds one.
func redactAttr(a slog.Attr, keys []string) slog.Attr {
	if len(keys) == 0 {
		return a
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redactAll(v.String(), keys))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, m := range g {
			red[i] = redactAttr(m, keys)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		if s := v.String(); redactAll(s, keys) != s {
			return slog.String(a.Key, redactAll(s, keys))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
