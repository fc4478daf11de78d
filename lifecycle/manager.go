package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// State is where a member is in its life.
type State uint8

const (
	// StateStopped: no process, none wanted.
	StateStopped State = iota
	// StateStarting: launching, loading, or waiting for the member it evicted to stop.
	StateStarting
	// StateReady: the process is up and passed its health check.
	StateReady
	// StateBackoff: the process died on its own and will be restarted after a delay.
	StateBackoff
	// StateStopping: asked to stop (SIGTERM sent, SIGKILL after the grace), until no process of
	// its group is left. A process that died on its own is reported stopping too while what it
	// left in its group is killed and waited for; StateBackoff follows. So is one stopped for
	// not loading within load_timeout, until it is gone.
	StateStopping
)

var stateNames = [...]string{"stopped", "starting", "ready", "backoff", "stopping"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// MemberStatus is one member as Status reports it, for explain and logs.
type MemberStatus struct {
	Name   string
	Group  string
	Pinned bool
	State  State
	// PID is the running process, 0 when there is none.
	PID int
	// URL is the resolved base URL of the running process, "" when there is none.
	URL string
	// InFlight counts Ensure calls not yet released.
	InFlight int
	// LastUsed is when the member was last acquired or released; zero if never.
	LastUsed time.Time
	// Starts counts processes launched; Restarts those launched after a crash.
	Starts, Restarts int
	// LastError is the latest start failure or crash, "" if none.
	LastError string
	// Retired: a Reload replaced or removed this member, and its process is still up; the member
	// of its name, if there is one, is listed too. State says why it is up: ready (or starting)
	// while the InFlight attempts that hold it run (it stops when the last releases it), stopping
	// once none does (SIGTERM sent, until its process group has gone).
	Retired bool
}

type member struct {
	spec        Spec
	group       *group
	pinned      bool
	loadTimeout time.Duration

	// Guarded by Manager.mu.
	state   State
	busy    int
	waiting int // Ensure calls waiting for this member to be ready: like busy, they bar eviction
	// asks are the arrival tickets of those calls, oldest first: the member's place in its group's
	// slot line is its oldest (firstAskLocked).
	asks     []uint64
	seq      uint64 // recency: higher was acquired or released later; 0 = never
	lastUsed time.Time
	readyAt  time.Time
	replaced bool          // stopping (retired: to stop) for a member that already counts in its slot
	stop     chan struct{} // closed to ask the supervisor to stop
	done     chan struct{} // closed when the supervisor has returned
	// holds are the members this one counts in the slots of while they stop (reserveLocked): the
	// ones it evicted, and the process of its name a Reload retired. Cleared when it stops.
	holds []standIn
	// crashed: the process exited on its own and its group is being killed and waited for. The
	// state stays StateReady (eviction, idle_stop and Close treat it as running), but it is not
	// handed out and is reported as StateStopping; StateBackoff is set only once the restart
	// timer is armed.
	crashed bool
	// expired: load_timeout passed before the process was healthy and it is being stopped. The
	// state stays StateStarting (the start has not ended for its waiters), but it is reported
	// as StateStopping, as a crashed one is.
	expired bool
	// restarting: the member is starting again after a crash, on its own rather than for a
	// request: see loadingUnaskedLocked.
	restarting bool
	// warmed: Warm, or Start's pre-warm, reserved the member's slot, for no request; its
	// supervisor launches it once the members it evicted have gone though nobody waits for it,
	// unless a request's start then waits in its group's slot line. Cleared when it stops.
	warmed   bool
	pid      int
	url      string
	port     int // the running process's {port}, 0 when there is none or it has none
	starts   int
	restarts int
	lastErr  error
	failures uint64 // launches that ended before they were healthy, so a waiter can tell its own failure
	idle     Timer
	// retired: a Reload replaced or removed the member. It is no longer handed out, and its
	// process is stopped once no attempt holds it.
	retired bool
}

type group struct {
	spec    GroupSpec
	members []*member
}

// Manager runs the processes of lifecycle-managed targets. Its methods are safe for concurrent use.
// Close must be called to stop the children and the goroutines.
type Manager struct {
	opt   Options
	log   *slog.Logger
	clock Clock
	probe *http.Client
	// members, byName and groups are replaced by Reload, under mu.
	members []*member // in spec order
	byName  map[string]*member
	groups  []*group
	// retired are the members a Reload replaced or removed whose process may still run: each
	// keeps its place in the slots of the group of its name until it has stopped.
	retired []*member
	// removed are the names a Reload removed (and none since brought back): Ensure on one is
	// ErrRemoved, for the replaced configuration's attempts still under way.
	removed map[string]bool
	// freePort asks for an unused loopback port; a field so that a test can play a kernel that
	// hands out one port twice.
	freePort func() (int, error)
	// waitDelay is the package's waitDelay; a field so that a test can hold open the window in
	// which an escaped holder keeps stderr, instead of racing its wall-time second.
	waitDelay time.Duration

	sf        singleflight.Group
	spawnOnce sync.Once
	spawnCh   chan spawnReq
	saveMu    sync.Mutex
	sups      sync.WaitGroup // supervisors
	flights   sync.WaitGroup // bringUp calls
	rewarms   sync.WaitGroup // Warm calls a Reload made for the new members of warms it retired

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change a waiter may care about
	seq     uint64
	// slotLine lists the members whose start flight waits for a slot, or whose requests start
	// another after theirs ended at its first caller's load_timeout (leaveLine): when one frees,
	// the member of its group asked for longest ago (firstAskLocked) takes it. Its order is not
	// the line's.
	slotLine []*member
	// asked is the last arrival ticket given to an Ensure call that waits (member.asks).
	asked uint64
	// warmsWaiting counts the Warm calls waiting for a slot (for tests: a Warm is behind).
	warmsWaiting int
	// ports counts the holders of each port given to a process: the process until it exits, and
	// each Ensure not yet released that was handed its URL.
	ports   map[int]int
	started bool
	// stopping: Drain was called; nothing starts or restarts any more.
	stopping bool
	closed   bool
}

// New checks specs and groups and returns a Manager that has started nothing yet.
func New(specs []Spec, groups []GroupSpec, o Options) (*Manager, error) {
	if err := validate(specs, groups); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	m := &Manager{
		opt:   o,
		log:   o.Logger,
		clock: o.Clock,
		// Keep-alives are off: probes are rare, and idle connections would outlive Close. The
		// dial and the TLS handshake are bounded by ProbeTimeout: net/http dials apart from the
		// request, and a probe that gave up on a process that accepts and never answers the TLS
		// hello left both going for as long as the process kept the connection
		// (TestWedgedTLSProbeLeavesNothingBehind).
		probe: &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
			DialContext:         (&net.Dialer{Timeout: o.ProbeTimeout}).DialContext,
			TLSHandshakeTimeout: o.ProbeTimeout}},
		byName:    make(map[string]*member, len(specs)),
		freePort:  freePort,
		waitDelay: waitDelay,
		ports:     map[int]int{},
		spawnCh:   make(chan spawnReq),
		changed:   make(chan struct{}),
	}
	gs := make(map[string]*group, len(groups))
	for _, g := range groups {
		grp := &group{spec: g}
		gs[g.Name] = grp
		m.groups = append(m.groups, grp)
	}
	for _, s := range specs {
		mem := newMember(s, gs[s.Group])
		m.members = append(m.members, mem)
		m.byName[s.Name] = mem
	}
	return m, nil
}

// newMember is a stopped member for s, added to g (nil: no group).
func newMember(s Spec, g *group) *member {
	mem := &member{spec: s, loadTimeout: s.LoadTimeout}
	mem.spec.Command = slices.Clone(s.Command)
	mem.spec.Env = slices.Clone(s.Env)
	mem.spec.Withhold = slices.Clone(s.Withhold)
	if mem.loadTimeout == 0 {
		mem.loadTimeout = DefaultLoadTimeout
	}
	if g != nil {
		mem.group = g
		mem.pinned = slices.Contains(g.spec.Pinned, s.Name)
		g.members = append(g.members, mem)
	}
	return mem
}

// StateFile is the file the manager keeps its LRU order in ("" for none), and WaitsHealthy
// whether its Start waits for the pinned members: what New was given, which Reload leaves alone.
func (m *Manager) StateFile() string { return m.opt.StateFile }

// WaitsHealthy: see StateFile.
func (m *Manager) WaitsHealthy() bool { return m.opt.WaitHealthy }

// Manages reports whether name is a lifecycle-managed target.
func (m *Manager) Manages(name string) bool { return m.member(name) != nil }

// memberOrRemoved is name's current member, or nil and whether a Reload removed name.
func (m *Manager) memberOrRemoved(name string) (*member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byName[name], m.removed[name]
}

// member is name's current member, nil when there is none.
func (m *Manager) member(name string) *member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byName[name]
}

// Start starts every pinned member and pre-warms, per group, the most recently used members saved
// in the state file, up to the group's free slots. It returns at once unless Options.WaitHealthy,
// in which case it waits until every pinned member is ready or ctx ends. An unreadable state file
// is logged and treated as empty: a lost LRU order must not keep the gateway down.
func (m *Manager) Start(ctx context.Context) error {
	var recent []string
	if m.opt.StateFile != "" {
		var err error
		if recent, err = readState(m.opt.StateFile); err != nil {
			m.log.Warn("lifecycle: ignoring state file", "err", err)
			recent = nil
		}
		if err := removeStaleTemps(m.opt.StateFile); err != nil {
			m.log.Warn("lifecycle: removing the state file's stale temporary copies", "err", err)
		}
	}

	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return ErrClosed
	case m.started:
		m.mu.Unlock()
		return errors.New("lifecycle: Start called twice")
	}
	m.started = true
	for i := len(recent) - 1; i >= 0; i-- {
		if mem := m.byName[recent[i]]; mem != nil && mem.seq == 0 {
			m.seq++
			mem.seq = m.seq
		}
	}
	m.startPinnedLocked()
	for _, g := range m.groups {
		free := g.spec.Slots - m.occupiedLocked(g)
		for _, name := range recent {
			mem := m.byName[name]
			if free <= 0 {
				break
			}
			if mem == nil || mem.group != g || mem.pinned || mem.state != StateStopped {
				continue
			}
			m.log.Info("lifecycle: pre-warming", "target", name, "group", g.spec.Name)
			// A start for no request, as Warm's: a Reload that replaces the member before it is
			// ready starts the new one instead (TestPreWarmFollowsReload).
			mem.warmed = true
			if !m.reserveLocked(mem) {
				mem.warmed = false
				continue
			}
			free--
		}
	}
	m.mu.Unlock()

	if !m.opt.WaitHealthy {
		return nil
	}
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return ErrClosed
		}
		var waiting []string
		for _, mem := range m.members {
			if mem.pinned && mem.shownState() != StateReady {
				waiting = append(waiting, mem.spec.Name)
			}
		}
		ch := m.changed
		m.mu.Unlock()
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("lifecycle: waiting for pinned %v: %w", waiting, ctx.Err())
		}
	}
}

// startPinnedLaterLocked is startPinnedLocked once the manager runs (Start has run, no Drain nor
// Close): for when a slot may have become free, or a member evictable, after a pinned member that
// a Reload added found its group full of members that could not be evicted.
func (m *Manager) startPinnedLaterLocked() {
	if m.started && !m.closed && !m.stopping {
		m.startPinnedLocked()
	}
}

// startPinnedLocked starts the pinned members that are stopped, where their group has room.
func (m *Manager) startPinnedLocked() {
	for _, g := range m.groups {
		for _, mem := range g.members {
			if mem.pinned && mem.state == StateStopped {
				m.reserveLocked(mem)
			}
		}
	}
}

// Reload replaces the specs and groups, for a configuration reload; on an invalid one it changes
// nothing. A member whose Spec is unchanged (every field, since each shapes the process or its
// supervision) and whose pinning is unchanged keeps its process and its state: ready or not, its
// idle timer, its place in the LRU order, its counts; a new group's slots apply to it from now on
// (a group now smaller than it has running shrinks as members stop, nothing is evicted for the
// reload itself; a member started into it later evicts as many as it takes to fit).
// Every other member is retired: Ensure no longer hands it out (a call waiting for it waits for
// the new member of its name instead, within its load_timeout from when it came
// (TestWaitAcrossReloadKeepsLoadTimeout); the new member keeps the old one's place in the LRU
// order and its last use, but not its process, state or idle timer; a background start of it
// under way, Warm's, goes on with the new member likewise), and its process is stopped as soon as
// no attempt holds it,
// at once when none does, and it is not restarted if it crashes meanwhile. Until it has stopped it
// keeps its place in the slots of the group of its name, and the new member of its name, in a
// group or not, starts only once it has gone: a changed member's new process never runs beside
// its old one. In a group of the same name the new member takes that place instead of one of its
// own, so that no other member is evicted for it (TestNewMemberTakesRetiredSlot). New pinned members
// are started as Start starts them, once Start has run (one whose group is full of members in use
// starts as soon as one of them can be evicted), unless Drain has been called; the state file is
// not read again, and Options do not change. A Reload to no spec at all saves the LRU order
// first, and none is saved while no target is managed.
func (m *Manager) Reload(specs []Spec, groups []GroupSpec) error {
	if err := validate(specs, groups); err != nil {
		return err
	}
	if len(specs) == 0 {
		// No order is saved from now on (save): this is the one the file keeps.
		m.save()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	gs := make(map[string]*group, len(groups))
	newGroups := make([]*group, 0, len(groups))
	for _, g := range groups {
		grp := &group{spec: g}
		grp.spec.Pinned = slices.Clone(g.Pinned)
		gs[g.Name] = grp
		newGroups = append(newGroups, grp)
	}
	members := make([]*member, 0, len(specs))
	byName := make(map[string]*member, len(specs))
	for _, s := range specs {
		g := gs[s.Group]
		mem := m.byName[s.Name]
		if mem != nil && sameSpec(mem.spec, s) && mem.pinned == (g != nil && slices.Contains(g.spec.Pinned, s.Name)) {
			mem.group = g
			if g != nil {
				g.members = append(g.members, mem)
			}
		} else {
			old := mem
			mem = newMember(s, g)
			if old != nil {
				// A new process, but the same member to its users: it keeps its place in the LRU
				// order (eviction, the state file and so the restart's pre-warm) and its last use
				// (TestReloadChangedKeepsRecency).
				mem.seq, mem.lastUsed = old.seq, old.lastUsed
			}
		}
		members = append(members, mem)
		byName[s.Name] = mem
	}
	retired := m.retired[:0]
	for _, mem := range m.retired {
		if mem.state != StateStopped {
			retired = append(retired, mem)
		}
	}
	var rewarm []string
	for _, mem := range m.members {
		if byName[mem.spec.Name] == mem {
			continue
		}
		if byName[mem.spec.Name] != nil && mem.warmingLocked() {
			rewarm = append(rewarm, mem.spec.Name)
		}
		if byName[mem.spec.Name] == nil {
			if m.removed == nil {
				m.removed = map[string]bool{}
			}
			m.removed[mem.spec.Name] = true
		}
		mem.retired = true
		if mem.busy == 0 {
			m.stopLocked(mem, "reload")
		}
		if mem.state != StateStopped {
			retired = append(retired, mem)
		}
	}
	for name := range byName {
		delete(m.removed, name)
	}
	m.members, m.byName, m.groups, m.retired = members, byName, newGroups, retired
	// Not once Drain has been called: the gateway is stopping (TestReloadAfterDrainStartsNoPinned).
	m.startPinnedLaterLocked()
	if !m.stopping {
		for _, name := range rewarm {
			m.rewarmLocked(name)
		}
	}
	m.broadcastLocked()
	return nil
}

// warmingLocked reports whether mem is starting for a background start (Warm, or Start's
// pre-warm) that has not ended: reserved, waiting for the members it evicted to go or loading,
// and neither restarting after a crash nor past its load_timeout.
func (mem *member) warmingLocked() bool {
	return mem.warmed && mem.state == StateStarting && !mem.restarting && !mem.expired
}

// rewarmLocked warms name's new member in the background, for a Reload that retired its old one
// while a background start of it was under way. The start is still wanted (a request passed the
// target by cold), and a request that waited for the old member waits for the new one: dropped,
// the warm would leave the target cold for the next request only because the reload came
// between the warm and its load rather than before or after (TestWarmFollowsReload). It is a
// Warm like any, giving way to requests, which a slot the old member holds until it has gone
// makes wait; Close ends it.
func (m *Manager) rewarmLocked(name string) {
	m.rewarms.Add(1)
	go func() {
		defer m.rewarms.Done()
		err := m.Warm(context.Background(), name)
		// A later Reload that removed the name leaves nothing to start: no failure either.
		if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrStopping) && !errors.Is(err, ErrRemoved) {
			m.log.Warn("lifecycle: background start across a reload", "target", name, "err", err)
		}
	}()
}

// sameSpec reports whether a and b describe the same process and its supervision.
func sameSpec(a, b Spec) bool {
	return a.Name == b.Name && slices.Equal(a.Command, b.Command) && slices.Equal(a.Env, b.Env) &&
		slices.Equal(a.Withhold, b.Withhold) && a.URL == b.URL && a.HealthURL == b.HealthURL &&
		a.IdleStop == b.IdleStop && a.Group == b.Group && a.LoadTimeout == b.LoadTimeout
}

// Ensure makes the target's process run and be healthy, starting it if needed (stopping the least
// recently used idle unpinned member of a full group first), and returns its base URL. The caller
// must call release when the attempt ends: until then the member is neither evicted nor
// idle-stopped. Concurrent calls for one cold target start it once, sharing one start flight
// (singleflight). The wait is
// bounded by the target's load_timeout, counted from the call across a Reload too
// (*LoadTimeoutError), and by ctx (ctx.Err()); a start that
// fails returns *ProcessError, and a call for a target a Reload removed (or one waiting for it
// then) ErrRemoved. The URL may
// change across restarts (a new port each launch), so use the one returned for this attempt.
func (m *Manager) Ensure(ctx context.Context, name string) (baseURL string, release func(), err error) {
	// The call's place in a slot line and its load_timeout, from the time it first waited: kept
	// across a Reload that makes it wait for a new member.
	var a ask
	for {
		mem, removed := m.memberOrRemoved(name)
		switch {
		case removed:
			// What it waited for, or what its configuration names, will not start
			// (TestWaitForRemovedTargetEnds, TestEnsureRemovedTarget).
			return "", nil, ErrRemoved
		case mem == nil:
			return "", nil, &UnknownTargetError{Name: name}
		}
		baseURL, release, err = m.ensure(ctx, mem, &a)
		// A Reload replaced the member this call waited for: it waits for the new one instead.
		if err != errRetired {
			return baseURL, release, err
		}
	}
}

// Warm starts name's process for no request (the server's background start of a target a
// request passed by cold) and returns once it has reserved the member a slot, found it starting
// or running, or given up: at the member's load_timeout, when ctx ends, or when the manager
// stops. A member stopping (idle stop, eviction) is waited for and started once it has gone
// (TestWarmOfStoppingMemberStarts). Unlike Ensure it does not count as a waiter, so that a start
// nobody waits for never delays one somebody does: in a full group it takes a slot only when no
// request's start is in the group's line for one (a slot that frees goes to the requests first);
// one that evicted is not launched when, its victims gone, a request's start waits in that line
// (TestWarmGivesWayWhileVictimStops); and once launched the member loads for nobody, so that a
// request for another member of the group may evict it, as it may a pre-warmed one
// (TestWarmGivesWayToRequests). It may evict the least recently used idle member, as a request's
// start does: the request passed the member by because it was cold, not because another served
// better. A Reload that replaces the member before it is ready (while it waits for a slot, for
// the members it evicted to go, or loads) warms the new member of its name instead, as a request
// waiting for the old member waits for the new one (TestWarmFollowsReload).
func (m *Manager) Warm(ctx context.Context, name string) error {
	var (
		expired = make(chan struct{})
		timer   Timer
		counted bool
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if counted {
			m.mu.Lock()
			m.warmsWaiting--
			m.mu.Unlock()
		}
	}()
	for {
		m.mu.Lock()
		mem, removed := m.byName[name], m.removed[name]
		switch {
		case m.closed:
			m.mu.Unlock()
			return ErrClosed
		case m.stopping:
			m.mu.Unlock()
			return ErrStopping
		case removed:
			m.mu.Unlock()
			return ErrRemoved
		case mem == nil:
			m.mu.Unlock()
			return &UnknownTargetError{Name: name}
		case mem.state == StateStopping:
			// Idle-stopped or evicted, its process in its grace: it starts once it has gone, as
			// for Ensure; taken for a running one, the start never happened
			// (TestWarmOfStoppingMemberStarts).
		case mem.state != StateStopped:
			m.mu.Unlock()
			return nil
		case !m.lineAheadLocked(mem) && m.warmLocked(mem):
			m.mu.Unlock()
			return nil
		}
		if timer == nil {
			timer = m.clock.AfterFunc(mem.loadTimeout, func() { close(expired) })
		}
		if !counted {
			counted = true
			m.warmsWaiting++
		}
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ch:
		case <-expired:
			e := &LoadTimeoutError{Target: name, After: mem.loadTimeout}
			if mem.group != nil { // only a group can be full
				e.Group = mem.group.spec.Name
			}
			return e
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// lineAheadLocked reports whether a request's start waits in the slot line of mem's group.
func (m *Manager) lineAheadLocked(mem *member) bool {
	for _, o := range m.slotLine {
		if o.group == mem.group && o.state == StateStopped {
			return true
		}
	}
	return false
}

// warmLocked reserves a slot for mem, a start for no request (Warm), and reports whether it could.
func (m *Manager) warmLocked(mem *member) bool {
	mem.warmed = true
	if !m.reserveLocked(mem) {
		mem.warmed = false
		return false
	}
	m.log.Info("lifecycle: starting in the background", "target", mem.spec.Name)
	return true
}

// errRetired ends a wait for a member that a Reload has replaced or removed.
var errRetired = errors.New("lifecycle: member retired by a reload")

// ask is an Ensure call that waits: its arrival ticket, which places it in a slot line, and when
// it came, from which its load_timeout counts. Both are given when it first waits and kept across
// a Reload that makes it wait for a new member (TestJoinedRequestKeepsPlaceInLine,
// TestWaitAcrossReloadKeepsLoadTimeout).
type ask struct {
	ticket uint64
	came   time.Time
}

// ensure is Ensure for mem; *a is the call's ask, filled in here when it first waits.
func (m *Manager) ensure(ctx context.Context, mem *member, a *ask) (baseURL string, release func(), err error) {
	name := mem.spec.Name
	if url, release, ok := m.acquire(mem); ok {
		return url, release, nil
	}
	again := a.ticket != 0
	if !again {
		a.came = m.clock.Now()
	}
	// Until this call has the member, it must not be evicted: once it is ready, a request for
	// another member waiting for a slot would otherwise stop it before this one acquires, and two
	// such requests would load and evict each other's processes in turn.
	m.mu.Lock()
	mem.waiting++
	if !again {
		m.asked++
		a.ticket = m.asked
	}
	i, _ := slices.BinarySearch(mem.asks, a.ticket)
	mem.asks = slices.Insert(mem.asks, i, a.ticket)
	if i == 0 {
		// A ticket kept across a Reload may move the member ahead in its line.
		m.lineMovedLocked(mem)
	}
	failuresBefore := mem.failures
	m.mu.Unlock()
	defer m.unwait(mem, a.ticket)
	// load_timeout counts from this call, not from the start of the flight it joins: a flight
	// ends at its first caller's deadline, and a later caller then goes on with a new one, with
	// a timer of its own for what is left of its wait. A call that waited for a member a Reload
	// replaced has that timer from the start: the new member's flight has a whole load_timeout.
	deadline := a.came.Add(mem.loadTimeout)
	var mine chan struct{}
	// ownTimer arms mine for what is left of the call's wait, and reports false when nothing is
	// left.
	ownTimer := func() (stop func(), ok bool) {
		left := deadline.Sub(m.clock.Now())
		if left <= 0 {
			return nil, false
		}
		mine = make(chan struct{})
		t := m.clock.AfterFunc(left, func() { close(mine) })
		return func() { t.Stop() }, true
	}
	if again {
		stop, ok := ownTimer()
		if !ok {
			return "", nil, m.loadTimeoutError(mem, failuresBefore)
		}
		defer stop()
	}
	for {
		if url, release, ok := m.acquire(mem); ok {
			return url, release, nil
		}
		ch := m.sf.DoChan(name, func() (any, error) { return nil, m.bringUp(mem) })
		select {
		case r := <-ch:
			if r.Err == errRetired {
				return "", nil, r.Err
			}
			if r.Err == errFlightExpired {
				if deadline.Sub(m.clock.Now()) <= 0 {
					return "", nil, m.loadTimeoutError(mem, failuresBefore)
				}
				if mine == nil {
					stop, ok := ownTimer()
					if !ok {
						return "", nil, m.loadTimeoutError(mem, failuresBefore)
					}
					defer stop()
				}
				continue
			}
			if r.Err != nil {
				return "", nil, r.Err
			}
			// Ready now; loop to acquire, or to start again if it was evicted meanwhile.
		case <-mine:
			return "", nil, m.loadTimeoutError(mem, failuresBefore)
		case <-ctx.Done():
			return "", nil, ctx.Err()
		}
	}
}

// errFlightExpired ends a bringUp at its load_timeout, or when nobody waits for it any more; each
// waiter then checks its own load_timeout.
var errFlightExpired = errors.New("lifecycle: start flight expired")

// loadTimeoutError is the answer to a request that waited out load_timeout; Last is the latest
// start failure since it came, if any. A member of a group that is still stopped, with no launch
// failed meanwhile, never got a slot: the error names the group, so that the answer does not say
// a model was loading (TestNoSlotLoadTimeoutNamesGroup).
func (m *Manager) loadTimeoutError(mem *member, failuresBefore uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := &LoadTimeoutError{Target: mem.spec.Name, After: mem.loadTimeout}
	switch {
	case mem.failures != failuresBefore:
		e.Last = mem.lastErr
	case mem.group != nil && mem.state == StateStopped:
		e.Group = mem.group.spec.Name
	}
	return e
}

// Ready reports, without blocking, whether the target's process is running and healthy now.
func (m *Manager) Ready(name string) bool { return m.State(name) == StateReady }

// State reports the target's state now; StateStopped for an unknown name.
func (m *Manager) State(name string) State {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem := m.byName[name]
	if mem == nil {
		return StateStopped
	}
	return mem.shownState()
}

// shownState is mem's state as State and Status report it; called with Manager.mu held.
func (mem *member) shownState() State {
	if mem.crashed && mem.state == StateReady || mem.expired && mem.state == StateStarting {
		return StateStopping
	}
	return mem.state
}

// Status reports every member, in spec order, then every retired member whose process is still
// up (Retired), in the order the Reloads retired them: an operator must see a model process that
// still holds its memory, and why, as long as it runs.
func (m *Manager) Status() []MemberStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MemberStatus, 0, len(m.members)+len(m.retired))
	for _, mem := range m.members {
		out = append(out, mem.statusLocked())
	}
	for _, mem := range m.retired {
		if mem.state != StateStopped {
			out = append(out, mem.statusLocked())
		}
	}
	return out
}

// statusLocked is mem as Status reports it; called with Manager.mu held.
func (mem *member) statusLocked() MemberStatus {
	st := MemberStatus{
		Name: mem.spec.Name, Group: mem.spec.Group, Pinned: mem.pinned, State: mem.shownState(),
		PID: mem.pid, URL: mem.url, InFlight: mem.busy, LastUsed: mem.lastUsed,
		Starts: mem.starts, Restarts: mem.restarts, Retired: mem.retired,
	}
	if mem.lastErr != nil {
		st.LastError = mem.lastErr.Error()
	}
	return st
}

// Close stops every child (SIGTERM to its process group, SIGKILL after the grace), waits until no
// process of their groups is left and saves the state file. Requests still holding a member should have ended first (the server
// drains before calling Close). If ctx ends first, Close returns ctx.Err() while the stops finish in
// the background.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for _, mem := range slices.Concat(m.members, m.retired) {
		m.stopLocked(mem, "shutdown")
	}
	m.broadcastLocked()
	m.mu.Unlock()

	done := make(chan struct{})
	go func() {
		m.sups.Wait()
		m.flights.Wait()
		m.rewarms.Wait()
		m.save()
		close(m.spawnCh)
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Drain is the first step of the gateway's stop, taken as soon as it is told to stop and before
// the requests in flight have drained: every Ensure waiting for a process returns ErrStopping at
// once (the request is answered 503 rather than held for the drain and then cut off), nothing
// starts or restarts any more, and the processes that serve no request (loading, or waiting to
// restart after a crash) are stopped now rather than once the drain has ended. Ready ones go on
// serving the requests in flight, and new ones, until Close.
func (m *Manager) Drain() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopping || m.closed {
		return
	}
	m.stopping = true
	for _, mem := range slices.Concat(m.members, m.retired) {
		if mem.state == StateStarting || mem.state == StateBackoff {
			m.stopLocked(mem, "shutdown")
		}
	}
	m.broadcastLocked()
}

func (m *Manager) acquire(mem *member) (string, func(), bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// A crashed member's URL is dead: a request waits for the restart instead.
	if m.closed || mem.state != StateReady || mem.crashed || mem.retired {
		return "", nil, false
	}
	mem.busy++
	m.seq++
	mem.seq = m.seq
	mem.lastUsed = m.clock.Now()
	if mem.idle != nil {
		mem.idle.Stop()
		mem.idle = nil
	}
	// The caller may keep using the URL after the process dies under it (same-target retries):
	// until it lets go, the port is not handed to another target's process.
	port := mem.port
	if port != 0 {
		m.ports[port]++
	}
	var once sync.Once
	return mem.url, func() { once.Do(func() { m.release(mem, port) }) }, true
}

func (m *Manager) unwait(mem *member, ticket uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem.waiting--
	if i, ok := slices.BinarySearch(mem.asks, ticket); ok {
		mem.asks = slices.Delete(mem.asks, i, i+1)
		if i == 0 && mem.waiting > 0 {
			m.lineMovedLocked(mem)
		}
	}
	if mem.waiting == 0 {
		// Nobody asks for it any more: it leaves the slot line, where leaveLine may have kept it.
		m.slotLine = slices.DeleteFunc(m.slotLine, func(o *member) bool { return o == mem })
		// A request, or a pinned member, waiting for a slot may now evict this member.
		m.startPinnedLaterLocked()
		m.broadcastLocked()
	}
}

func (m *Manager) release(mem *member, port int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if port != 0 {
		m.dropPortLocked(port)
	}
	mem.busy--
	// In use until now: a long request that ends after another member's short one makes this
	// member the more recently used.
	m.seq++
	mem.seq = m.seq
	mem.lastUsed = m.clock.Now()
	if mem.retired {
		// The attempt used the member of this name, which a Reload has put in its place since
		// (TestReloadRetiredReleaseCountsForNewMember).
		if cur := m.byName[mem.spec.Name]; cur != nil && cur != mem {
			cur.seq, cur.lastUsed = mem.seq, mem.lastUsed
		}
	}
	if mem.retired && mem.busy == 0 {
		m.stopLocked(mem, "reload")
		return
	}
	// A member waiting to restart after a crash counts its idle time too, so that one nobody used
	// for idle_stop is not loaded again only to be stopped.
	if mem.busy == 0 && (mem.state == StateReady || mem.state == StateBackoff) {
		m.armIdleLocked(mem)
	}
	if mem.busy == 0 {
		// A pinned member that found its group full of members in use may evict this one now.
		m.startPinnedLaterLocked()
	}
	// A request waiting for a slot may now evict this member.
	m.broadcastLocked()
}

// bringUp runs once per cold target at a time (under singleflight): it reserves a slot, evicting if
// needed, and waits until the member is ready, a launch fails, or load_timeout passes
// (errFlightExpired). It reserves only a member it finds stopped, under the lock that reserveLocked
// sets StateStarting under: that, not singleflight, is what keeps concurrent starts of one member
// to one process (TestSingleStartUnderConcurrency).
func (m *Manager) bringUp(mem *member) (err error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.flights.Add(1)
	failuresBefore := mem.failures
	m.mu.Unlock()
	defer m.flights.Done()
	defer func() { m.leaveLine(mem, err) }()

	expired := make(chan struct{})
	t := m.clock.AfterFunc(mem.loadTimeout, func() { close(expired) })
	defer t.Stop()
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return ErrClosed
		}
		switch {
		case mem.retired:
			m.mu.Unlock()
			return errRetired
		case mem.state == StateReady && !mem.crashed:
			m.mu.Unlock()
			return nil
		case m.stopping:
			m.mu.Unlock()
			return ErrStopping
		case mem.failures != failuresBefore:
			// A launch this flight waited for failed before it was healthy: the waiters get that
			// failure now, whether the member then stopped (unpinned) or backs off to restart
			// (pinned, or after a healthy run) rather than the rest of load_timeout.
			err := mem.lastErr
			m.mu.Unlock()
			return err
		case mem.state == StateStopped && mem.waiting == 0:
			// Every request that wanted it has gone: a slot that frees now must not go to a
			// model nobody waits for (evicting one that is wanted). A load already launched
			// goes on.
			m.mu.Unlock()
			return errFlightExpired
		case mem.state == StateStopped:
			m.reserveInTurnLocked(mem)
		}
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ch:
		case <-expired:
			return errFlightExpired
		}
	}
}

// reserveInTurnLocked is reserveLocked for a request's start: a member whose group is full joins
// the group's line and reserves only once the members of the line asked for before it (by the
// arrival of the request that has waited longest for each) have a slot, so that each slot that
// frees goes to the request that has waited longest rather than to whichever flight the scheduler
// wakes first (the newest, often), and none waits out its load_timeout while later ones are
// served (TestSlotWaitersServedInArrivalOrder). A request keeps its place when the flight it
// joined ends at its first caller's load_timeout and it starts another
// (TestJoinedRequestKeepsPlaceInLine).
func (m *Manager) reserveInTurnLocked(mem *member) {
	if mem.group == nil {
		m.reserveLocked(mem)
		return
	}
	first := mem.firstAskLocked()
	// One ahead still waits; it takes the next slot (if it cannot, neither can mem).
	ahead := slices.ContainsFunc(m.slotLine, func(o *member) bool {
		return o != mem && o.group == mem.group && o.state == StateStopped && o.firstAskLocked() < first
	})
	if !ahead && m.reserveLocked(mem) {
		m.slotLine = slices.DeleteFunc(m.slotLine, func(o *member) bool { return o == mem })
		return
	}
	if !slices.Contains(m.slotLine, mem) {
		m.slotLine = append(m.slotLine, mem)
	}
}

// firstAskLocked is mem's place in its group's slot line: the arrival ticket of the Ensure call
// that has waited longest for it, the last place when none waits.
func (mem *member) firstAskLocked() uint64 {
	if len(mem.asks) == 0 {
		return math.MaxUint64
	}
	return mem.asks[0]
}

// lineMovedLocked is called when mem's place (firstAskLocked) has changed: if it is in the slot
// line, the starts in it look again. One that found mem ahead may now be ahead of it; unwoken, it
// and mem's next flight (leaveLine keeps mem's place between two) each waited behind the other
// with a slot free (TestLineLooksAgainWhenPlaceChanges).
func (m *Manager) lineMovedLocked(mem *member) {
	if slices.Contains(m.slotLine, mem) {
		m.broadcastLocked()
	}
}

// leaveLine takes mem out of the slot line when its start flight ends with err, and lets the next
// in line look for a slot. A flight that ended at its first caller's load_timeout leaves it in
// line while other calls wait for it: they start another flight at once, and until it looks for
// a slot, one that frees must not go to a member asked for after them (unwait takes mem out
// when the last has gone).
func (m *Manager) leaveLine(mem *member, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == errFlightExpired && mem.waiting > 0 && mem.state == StateStopped && !mem.retired {
		return
	}
	if i := slices.Index(m.slotLine, mem); i >= 0 {
		m.slotLine = slices.Delete(m.slotLine, i, i+1)
		m.broadcastLocked()
	}
}

// reserveLocked claims a slot for a stopped member and starts its supervisor; if the group is full
// it picks the least recently used idle unpinned members to stop first, as many as it takes for
// the member to fit (more than one when a reload shrank the group below what runs). It reports
// false, changing nothing, when the group is full of members that cannot be evicted now.
func (m *Manager) reserveLocked(mem *member) bool {
	var victims []*member
	pred := m.predecessorLocked(mem)
	if g := mem.group; g != nil {
		need := m.occupiedLocked(g) - g.spec.Slots + 1
		if pred != nil {
			// Its slot becomes mem's, as a victim's does: mem waits for it to go anyway.
			need--
		}
		if need > 0 {
			if victims = m.lruEvictableLocked(g, mem, need); len(victims) < need {
				return false
			}
		}
	}
	var (
		after  []<-chan struct{}
		stands []standIn
	)
	for _, victim := range victims {
		// The newcomer counts in the slot from now on; the physical swap waits for the victims
		// to exit so that memory is never held by more than slots processes.
		victim.replaced = true
		after = append(after, victim.done)
		stands = append(stands, standIn{victim, victim.done})
		m.stopLocked(victim, "evicted for "+mem.spec.Name)
	}
	// A process of this name that a Reload retired may still run, held by an attempt or in its
	// grace; slots do not keep the new one from it when there is no group or a slot is free, yet
	// it is the same model (its memory twice over) and perhaps on the same fixed port, where the
	// new one's health check would pass on the old process.
	for _, old := range m.retired {
		if old.spec.Name == mem.spec.Name && old.state != StateStopped {
			after = append(after, old.done)
			m.log.Info("lifecycle: waiting for its retired process to go before starting",
				"target", mem.spec.Name, "pid", old.pid)
		}
	}
	if pred != nil {
		pred.replaced = true
		stands = append(stands, standIn{pred, pred.done})
	}
	mem.holds = stands
	mem.state = StateStarting
	mem.stop = make(chan struct{})
	mem.done = make(chan struct{})
	m.sups.Add(1)
	go m.supervise(mem, mem.stop, mem.done, after, stands)
	m.broadcastLocked()
	return true
}

// predecessorLocked is the process of mem's name that a Reload retired and whose slot mem may
// take (TestNewMemberTakesRetiredSlot), if any: in a group of the same name, still up, counted in
// its slots, and holding no slot of a member it evicted, which it would give back were it stopped
// before its launch (giveBackLocked), leaving that member's process to run beside mem's.
func (m *Manager) predecessorLocked(mem *member) *member {
	if mem.group == nil {
		return nil
	}
	for _, old := range m.retired {
		if old.spec.Name != mem.spec.Name || old.state == StateStopped || old.replaced ||
			old.group == nil || old.group.spec.Name != mem.group.spec.Name {
			continue
		}
		if slices.ContainsFunc(old.holds, func(s standIn) bool {
			return s.victim.done == s.done && s.victim.state != StateStopped && s.victim.replaced
		}) {
			continue
		}
		return old
	}
	return nil
}

// standIn is a member evicted for another, or the process of its name a Reload retired, which
// the other counts in the slot of instead while it stops; done is the victim's run that was
// stopped.
type standIn struct {
	victim *member
	done   chan struct{}
}

// giveBackLocked makes the victims a newcomer stood in for that have not gone yet count in their
// group's slots again: the newcomer was stopped (a Reload retired it, Drain, Close) before it
// launched, and no longer counts for them.
func giveBackLocked(stands []standIn) {
	for _, s := range stands {
		if s.victim.done == s.done && s.victim.state != StateStopped {
			s.victim.replaced = false
		}
	}
}

func (m *Manager) occupiedLocked(g *group) int {
	n := 0
	for _, mem := range g.members {
		if mem.state != StateStopped && !mem.replaced {
			n++
		}
	}
	// A process a Reload retired holds its memory until it has gone.
	for _, mem := range m.retired {
		if mem.state != StateStopped && !mem.replaced && mem.group != nil && mem.group.spec.Name == g.spec.Name {
			n++
		}
	}
	return n
}

// lruEvictableLocked returns up to n of the least recently used members of g that may be stopped
// now, least recent first: unpinned, not in use nor waited for, and running, waiting to restart,
// or loading for nobody (loadingUnaskedLocked; a member starting for a request that still waits is
// about to serve it).
func (m *Manager) lruEvictableLocked(g *group, except *member, n int) []*member {
	var can []*member
	for _, mem := range g.members {
		if mem == except || mem.pinned || mem.busy > 0 || mem.waiting > 0 {
			continue
		}
		if mem.state != StateReady && mem.state != StateBackoff && !mem.loadingUnaskedLocked() {
			continue
		}
		can = append(can, mem)
	}
	slices.SortStableFunc(can, func(a, b *member) int { return cmp.Compare(a.seq, b.seq) })
	return can[:min(n, len(can))]
}

// loadingUnaskedLocked reports whether mem is starting and, were nobody waiting for it, may be
// stopped like an idle member: it restarts after a crash, or its process has been launched (a
// pre-warm, or a start whose requests have all gone). One not launched yet for a request may be
// waiting for the members it evicted to go, and holds their slots meanwhile: stopped, it would give
// them back while its evictor counted on their being gone.
func (mem *member) loadingUnaskedLocked() bool {
	return mem.state == StateStarting && (mem.restarting || mem.pid != 0)
}

func (m *Manager) stopLocked(mem *member, reason string) {
	if mem.state == StateStopped || mem.state == StateStopping {
		return
	}
	mem.state = StateStopping
	close(mem.stop)
	if mem.idle != nil {
		mem.idle.Stop()
		mem.idle = nil
	}
	m.log.Info("lifecycle: stopping", "target", mem.spec.Name, "reason", reason, "pid", mem.pid)
	m.broadcastLocked()
}

func (m *Manager) armIdleLocked(mem *member) {
	if mem.spec.IdleStop <= 0 || m.closed {
		return
	}
	if mem.idle != nil {
		mem.idle.Stop()
	}
	wait := max(mem.spec.IdleStop-m.clock.Now().Sub(idleSince(mem)), 0)
	mem.idle = m.clock.AfterFunc(wait, func() { m.idleCheck(mem) })
}

func idleSince(mem *member) time.Time {
	if mem.lastUsed.After(mem.readyAt) {
		return mem.lastUsed
	}
	return mem.readyAt
}

func (m *Manager) idleCheck(mem *member) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// A member backing off after a crash is stopped too: restarting it would load a model that
	// the next check stops at once.
	if m.closed || (mem.state != StateReady && mem.state != StateBackoff) || mem.busy > 0 || mem.waiting > 0 {
		return
	}
	if m.clock.Now().Sub(idleSince(mem)) < mem.spec.IdleStop {
		// A use since this timer was armed; wait for the rest.
		m.armIdleLocked(mem)
		return
	}
	m.stopLocked(mem, "idle")
}

func (m *Manager) broadcastLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// save writes the recency order once Start has read the file, while some target is managed;
// failures are logged, since losing it only costs a cold start.
func (m *Manager) save() {
	if m.opt.StateFile == "" {
		return
	}
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	type use struct {
		name string
		seq  uint64
	}
	m.mu.Lock()
	if !m.started || len(m.members) == 0 {
		// The file has not been read: an order saved now would replace the one it holds with
		// only this run's uses, or with none when the gateway failed before serving. Nor when a
		// Reload left no managed target: the order the last configuration with some left is the
		// one a restart with them back should pre-warm (TestReloadToNoneKeepsStateFile).
		m.mu.Unlock()
		return
	}
	var used []use
	for _, mem := range m.members {
		if mem.seq > 0 {
			used = append(used, use{mem.spec.Name, mem.seq})
		}
	}
	m.mu.Unlock()
	slices.SortFunc(used, func(a, b use) int { return compareDesc(a.seq, b.seq) })
	recent := make([]string, len(used))
	for i, u := range used {
		recent[i] = u.name
	}
	if err := writeState(m.opt.StateFile, recent); err != nil {
		m.log.Warn("lifecycle: saving state", "file", m.opt.StateFile, "err", err)
	}
}

func compareDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}
