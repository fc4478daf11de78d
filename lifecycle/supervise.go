package lifecycle

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
)

const (
	// stableAfter is how long a process must have stayed up for its crash to restart the backoff
	// from the first delay instead of growing it.
	stableAfter = time.Minute
	// waitDelay bounds how long stderr is still read once no process of the member's group is
	// left, for when a descendant that escaped the stop still holds the pipe.
	waitDelay = time.Second
	// groupPoll paces the look for processes left in a stopped member's group.
	groupPoll = 20 * time.Millisecond
	// KillWait bounds the wait for a group's processes to go after SIGKILL: a stop takes up to
	// the grace and this (a process stuck in the kernel), and whoever waits for one must too.
	KillWait = 10 * time.Second
)

var errStopRequested = errors.New("stop requested")

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

// spawn starts cmd on the spawner thread, unless the member is told to stop first.
func (m *Manager) spawn(cmd *exec.Cmd, stop <-chan struct{}) error {
	m.spawnOnce.Do(func() { go m.spawner() })
	// A stop asked before the launch wins: the select below picks at random between ready cases.
	select {
	case <-stop:
		return errStopRequested
	default:
	}
	reply := make(chan error, 1)
	select {
	case m.spawnCh <- spawnReq{cmd: cmd, reply: reply}:
		return <-reply
	case <-stop:
		return errStopRequested
	}
}

// spawner forks every child from one OS thread. Pdeathsig fires when the forking thread exits, not
// the process; a runtime thread can exit while the gateway lives (when a goroutine that locked it
// ends), which would kill a healthy child. This thread stays locked, so it exits only when Close
// closes spawnCh after every child is gone.
func (m *Manager) spawner() {
	runtime.LockOSThread()
	for req := range m.spawnCh {
		req.reply <- req.cmd.Start()
	}
}

// supervise owns mem's processes from reservation until it is told to stop or gives up. It gives
// up when a process of an unpinned member ends before it was healthy, on the first start or on a
// restart (a request that wanted it gets the error and the slot is freed; the next request starts
// it anew); a pinned member, or an unpinned one whose process crashed after a healthy run, is
// restarted with backoff.
//
// after are the processes it waits for before it launches; stands the members evicted for it,
// whose slots it holds in their stead until they have gone (TestRetiredNewcomerGivesVictimSlotBack).
func (m *Manager) supervise(mem *member, stop, done chan struct{}, after []<-chan struct{}, stands []standIn) {
	defer func() {
		close(done)
		m.sups.Done()
	}()
	if len(after) > 0 {
		for _, gone := range after {
			select {
			case <-gone:
			case <-stop:
				m.mu.Lock()
				giveBackLocked(stands)
				m.mu.Unlock()
				m.finish(mem, nil)
				return
			}
		}
		// The requests that evicted for this member may have gone while the victim took its
		// grace to exit: then the freed slot stays free rather than load a model nobody wants.
		// A background start (Warm) evicted for a model wanted next: it goes on, unless a
		// request's start waits in the group's line meanwhile, which the slot goes to instead:
		// launched, the warmed member would only be evicted for it, the request waiting for the
		// spawn and the stop grace (TestWarmGivesWayWhileVictimStops).
		m.mu.Lock()
		wanted := mem.waiting > 0 || mem.busy > 0 || mem.warmed && !m.lineAheadLocked(mem)
		unwanted := !mem.pinned && !wanted
		m.mu.Unlock()
		if unwanted {
			m.log.Info("lifecycle: not launching; nobody waits any more", "target", mem.spec.Name)
			m.finish(mem, nil)
			return
		}
	}
	bo := &backoff.ExponentialBackOff{
		InitialInterval:     m.opt.RestartBackoff,
		RandomizationFactor: backoff.DefaultRandomizationFactor,
		Multiplier:          backoff.DefaultMultiplier,
		MaxInterval:         m.opt.MaxRestartBackoff,
		Stop:                backoff.Stop,
		Clock:               m.clock,
	}
	bo.Reset()
	for restart := false; ; restart = true {
		res := m.runOnce(mem, stop, restart)
		if res.stopped {
			m.finish(mem, nil)
			return
		}
		// An unpinned member is restarted only after a healthy run: one that cannot load would
		// otherwise be relaunched every backoff for good, a model in memory that nobody waits for.
		if !mem.pinned && !res.healthy {
			m.finish(mem, res.err)
			return
		}
		// A member a Reload retired is not launched again: its spec is the replaced
		// configuration's, and the new member of its name waits for it to go.
		m.mu.Lock()
		retired, stopping := mem.retired, m.stopping
		m.mu.Unlock()
		if retired || stopping {
			if retired {
				m.log.Info("lifecycle: retired by a reload: not restarting", "target", mem.spec.Name)
			} else {
				m.log.Info("lifecycle: the gateway is stopping: not restarting", "target", mem.spec.Name)
			}
			m.finish(mem, res.err)
			return
		}
		if res.upFor >= stableAfter {
			bo.Reset()
		}
		delay := bo.NextBackOff()
		restart := make(chan struct{})
		// One critical section clears the dead process and arms the restart, so whoever sees
		// StateBackoff knows the timer is there.
		m.mu.Lock()
		mem.pid, mem.url, mem.port = 0, "", 0
		mem.crashed, mem.expired = false, false
		mem.lastErr = res.err
		if !res.healthy {
			mem.failures++
		}
		if mem.state != StateStopping {
			mem.state = StateBackoff
		}
		t := m.clock.AfterFunc(delay, func() { close(restart) })
		m.broadcastLocked()
		m.mu.Unlock()
		m.log.Info("lifecycle: restarting after backoff", "target", mem.spec.Name, "delay", delay)
		select {
		case <-restart:
		case <-stop:
			t.Stop()
			m.finish(mem, nil)
			return
		}
		m.mu.Lock()
		if mem.retired {
			// Retired during the backoff while an attempt held it.
			m.mu.Unlock()
			m.log.Info("lifecycle: retired by a reload: not restarting", "target", mem.spec.Name)
			m.finish(mem, nil)
			return
		}
		mem.restarts++
		m.opt.Counts.add(mem.spec.Name, 0, 1)
		if mem.state == StateBackoff {
			mem.state = StateStarting
			mem.restarting = true
		}
		m.broadcastLocked()
		m.mu.Unlock()
	}
}

// finish marks mem stopped; err non-nil records a start that failed for good.
func (m *Manager) finish(mem *member, err error) {
	m.mu.Lock()
	mem.state = StateStopped
	mem.pid, mem.url, mem.port = 0, "", 0
	mem.crashed, mem.expired, mem.restarting = false, false, false
	mem.replaced, mem.warmed, mem.holds = false, false, nil
	if err != nil {
		mem.lastErr = err
		mem.failures++
	}
	if mem.idle != nil {
		mem.idle.Stop()
		mem.idle = nil
	}
	// Its slot is free now: a pinned member that a Reload added may have waited for it.
	m.startPinnedLaterLocked()
	m.broadcastLocked()
	m.mu.Unlock()
	m.save()
}

type runResult struct {
	err     error         // why the process ended on its own
	healthy bool          // it passed a health check before ending
	upFor   time.Duration // how long it was healthy
	stopped bool          // it ended because it was told to stop
}

// runOnce launches one process and stays with it until it exits or is told to stop; restart says
// it replaces one that crashed.
func (m *Manager) runOnce(mem *member, stop <-chan struct{}, restart bool) runResult {
	name := mem.spec.Name
	argv, url, healthURL, port, err := resolve(mem.spec, m.takePort)
	if err != nil {
		return runResult{err: &ProcessError{Target: name, Err: err}}
	}
	if port != 0 {
		// Every return below comes after the process has exited, or KillWait after it was sent
		// SIGKILL.
		defer m.givePortBack(port)
	} else if addr, ok := fixedAddr(healthURL, url); ok && answers(addr) {
		// A fixed port (no {port}) that something answers on before the process is started: a
		// model server already running outside the gateway, say, whose health check would then
		// pass for this process too. It may be meant (a command that wraps a running service), so
		// it is said, not refused.
		m.log.Warn("lifecycle: the target's port already answers before its process starts; its health check may pass against another program",
			"target", name, "addr", addr)
	}
	// stderr is a pipe of ours rather than one exec.Cmd copies from: Wait closes its pipes
	// (WaitDelay) soon after the leader exits, and a worker still in its grace that logs then
	// dies of SIGPIPE. This one stays open until the group has gone. Stdout is /dev/null, no pipe.
	errOut := &tail{}
	errR, errW, err := os.Pipe()
	if err != nil {
		return runResult{err: &ProcessError{Target: name, Err: err}}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = childEnv(os.Environ(), mem.spec.Withhold, mem.spec.Env)
	cmd.Stderr = errW
	cmd.SysProcAttr = sysProcAttr()
	err = m.spawn(cmd, stop)
	_ = errW.Close()
	if err != nil {
		_ = errR.Close()
		if errors.Is(err, errStopRequested) {
			return runResult{stopped: true}
		}
		m.log.Error("lifecycle: cannot start", "target", name, "err", err)
		return runResult{err: &ProcessError{Target: name, Err: err}}
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(errOut, errR)
		close(copied)
	}()
	// drainStderr is called once the group has gone, before the tail is read.
	drainStderr := sync.OnceFunc(func() {
		t := time.NewTimer(m.waitDelay)
		defer t.Stop()
		select {
		case <-copied:
		case <-t.C:
		}
		_ = errR.Close()
		<-copied
	})
	defer drainStderr()
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()

	// The load timer is armed under the lock that publishes the pid, so a test that sees the pid
	// knows advancing its clock will reach the timer.
	loadExpired := make(chan struct{})
	m.mu.Lock()
	mem.pid, mem.url, mem.port = pid, url, port
	mem.starts++
	m.opt.Counts.add(mem.spec.Name, 1, 0)
	loadTimer := m.clock.AfterFunc(mem.loadTimeout, func() { close(loadExpired) })
	m.broadcastLocked()
	m.mu.Unlock()
	defer loadTimer.Stop()
	launched := m.clock.Now()
	m.log.Info("lifecycle: launched", "target", name, "pid", pid, "url", url)

	pollCtx, cancelPoll := context.WithCancel(context.Background())
	healthy := make(chan struct{})
	var polling sync.WaitGroup
	polling.Go(func() {
		if m.pollHealth(pollCtx, healthURL) {
			close(healthy)
		}
	})
	stopPolling := func() {
		cancelPoll()
		polling.Wait()
	}

	select {
	case <-healthy:
		stopPolling()
	case <-exited:
		stopPolling()
		m.reap(cmd, exited)
		drainStderr()
		perr := &ProcessError{Target: name, Err: waitErr, Stderr: errOut.Lines()}
		m.log.Warn("lifecycle: process exited before it was healthy", "target", name, "pid", pid,
			"err", waitErr, "stderr", strings.Join(perr.Stderr, "\n"))
		return runResult{err: perr}
	case <-loadExpired:
		stopPolling()
		m.mu.Lock()
		mem.expired = true
		m.broadcastLocked()
		m.mu.Unlock()
		m.terminate(cmd, exited)
		drainStderr()
		lerr := &LoadTimeoutError{Target: name, After: mem.loadTimeout}
		m.log.Warn("lifecycle: killed a process that did not load in time", "target", name, "pid", pid,
			"load_timeout", mem.loadTimeout, "stderr", strings.Join(errOut.Lines(), "\n"))
		return runResult{err: lerr}
	case <-stop:
		stopPolling()
		m.terminate(cmd, exited)
		return runResult{stopped: true}
	}

	loadTimer.Stop()
	up := m.clock.Now()
	m.mu.Lock()
	mem.restarting = false
	if mem.state == StateStarting {
		mem.state = StateReady
		if !restart {
			// idle_stop counts from here for a start someone asked for; a restart after a
			// crash keeps counting from the last use (or the first start) instead.
			mem.readyAt = up
		}
		if mem.busy == 0 {
			m.armIdleLocked(mem)
			if mem.waiting == 0 {
				// Started for nobody (pre-warmed): evictable from now on, for a pinned member
				// that a Reload added as well.
				m.startPinnedLaterLocked()
			}
		}
		m.broadcastLocked()
	}
	m.mu.Unlock()
	m.log.Info("lifecycle: ready", "target", name, "pid", pid, "took", up.Sub(launched))
	m.save()

	select {
	case <-exited:
		// From now on the URL is dead, while the group is reaped (10 s for a worker stuck in
		// the kernel) and stderr drained (a second for an escaped holder of it): a request
		// handed it would only fail to connect, and count against the target's health.
		m.mu.Lock()
		mem.crashed = true
		mem.pid, mem.url, mem.port = 0, "", 0
		m.broadcastLocked()
		m.mu.Unlock()
		m.reap(cmd, exited)
		drainStderr()
		perr := &ProcessError{Target: name, Err: waitErr, Stderr: errOut.Lines()}
		m.log.Warn("lifecycle: process crashed", "target", name, "pid", pid, "err", waitErr,
			"stderr", strings.Join(perr.Stderr, "\n"))
		return runResult{err: perr, healthy: true, upFor: m.clock.Now().Sub(up)}
	case <-stop:
		m.terminate(cmd, exited)
		return runResult{stopped: true, healthy: true}
	}
}

// reap kills whatever the process left in its group when it exited on its own, and waits for that
// to go before a restart or another member takes the slot. Descendants that left the group are
// killed too when found through a parent still in it (or through one found so); those of the
// process itself are out of reach here: its death made them children of init.
func (m *Manager) reap(cmd *exec.Cmd, exited <-chan struct{}) {
	pid := cmd.Process.Pid
	_, esc := scanGroup(pid, nil)
	m.logEscapees(pid, esc)
	_ = signalGroup(cmd.Process, true)
	signalEscapees(esc, true)
	m.awaitKilled(cmd, exited, esc)
}

// escapee is a descendant of a member's process that left its process group (setsid, setpgid), so
// a signal to the group misses it; start tells the process from a later one given its pid.
type escapee struct {
	pid   int
	start uint64
}

// terminate sends SIGTERM to the process group, SIGKILL to what is left of it after the grace,
// and returns once the process has been waited for and no process of its group is left. A model
// server's workers are in the group and may hold GPU memory: the next member must not start
// before they have gone, and they get the grace to exit cleanly even after their leader has.
// Descendants that left the group are found (Linux: from /proc, through parents that still run)
// before the SIGTERM and on every look during the stop, and treated as part of it.
func (m *Manager) terminate(cmd *exec.Cmd, exited <-chan struct{}) {
	pid := cmd.Process.Pid
	_, esc := scanGroup(pid, nil)
	m.logEscapees(pid, esc)
	if err := signalGroup(cmd.Process, false); err != nil {
		m.log.Warn("lifecycle: SIGTERM", "pid", pid, "err", err)
	}
	signalEscapees(esc, false)
	grace := make(chan struct{})
	t := m.clock.AfterFunc(m.opt.StopGrace, func() { close(grace) })
	defer t.Stop()
	if m.awaitGroup(pid, &esc, false, exited, grace) {
		return
	}
	m.log.Warn("lifecycle: process ignored SIGTERM; killing", "pid", pid, "grace", m.opt.StopGrace)
	_ = signalGroup(cmd.Process, true)
	signalEscapees(esc, true)
	m.awaitKilled(cmd, exited, esc)
}

func (m *Manager) logEscapees(pid int, esc []escapee) {
	for _, e := range esc {
		m.log.Info("lifecycle: stopping a descendant that left the process group", "pid", pid, "descendant", e.pid)
	}
}

// awaitKilled waits, after a SIGKILL to the group, for the process and then the rest of its group
// and esc, all for at most KillWait: a process in uninterruptible sleep (a GPU driver call) dies
// only when the call returns, and a slot held by it for good would stop the whole group. The
// process itself is as likely to be the one stuck as its workers; its Wait then returns whenever
// it dies, after the slot has been freed.
func (m *Manager) awaitKilled(cmd *exec.Cmd, exited <-chan struct{}, esc []escapee) {
	bound := make(chan struct{})
	t := m.clock.AfterFunc(KillWait, func() { close(bound) })
	defer t.Stop()
	if !m.awaitGroup(cmd.Process.Pid, &esc, true, exited, bound) {
		m.log.Error("lifecycle: processes of the group outlived SIGKILL; freeing the slot anyway",
			"pgid", cmd.Process.Pid, "waited", KillWait)
	}
}

// awaitGroup waits until the process has exited and no process of its group pgid nor of *esc is
// left, and reports true, or until give is closed, and reports false. A descendant that leaves the
// group meanwhile (a worker pool replacing the workers it lost) is added to *esc and sent SIGTERM,
// or SIGKILL if kill, as the others were.
func (m *Manager) awaitGroup(pgid int, esc *[]escapee, kill bool, exited, give <-chan struct{}) bool {
	select {
	case <-exited:
	case <-give:
		return false
	}
	gone := func() bool {
		live, late := scanGroup(pgid, *esc)
		m.logEscapees(pgid, late)
		signalEscapees(late, kill)
		*esc = append(*esc, late...)
		return !live && !escapeesAlive(*esc)
	}
	if gone() {
		return true
	}
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-give:
			return false
		}
		if gone() {
			return true
		}
	}
}

// pollHealth probes url every PollInterval until it answers 200 or ctx ends.
func (m *Manager) pollHealth(ctx context.Context, url string) bool {
	t := time.NewTimer(m.opt.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		if m.probeOnce(ctx, url) {
			return true
		}
		t.Reset(m.opt.PollInterval)
	}
}

func (m *Manager) probeOnce(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, m.opt.ProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := m.probe.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// takePort is freePort, skipping the ports held by this manager's other processes and by requests
// still using a dead process's URL: the kernel hands a port that was free a moment ago to the next
// bind(0) too, and a process that has not bound its port yet (a model still loading) leaves it
// free to the kernel.
func (m *Manager) takePort() (int, error) {
	for range 64 {
		p, err := m.freePort()
		if err != nil {
			return 0, err
		}
		m.mu.Lock()
		taken := m.ports[p] > 0
		if !taken {
			m.ports[p] = 1
		}
		m.mu.Unlock()
		if !taken {
			return p, nil
		}
	}
	return 0, errors.New("lifecycle: every free port offered is held by another target")
}

// givePortBack releases a port takePort gave, once its process has exited.
func (m *Manager) givePortBack(p int) {
	m.mu.Lock()
	m.dropPortLocked(p)
	m.mu.Unlock()
}

// dropPortLocked lets go of one hold on p; the port is free to the next takePort with the last.
func (m *Manager) dropPortLocked(p int) {
	if m.ports[p]--; m.ports[p] <= 0 {
		delete(m.ports, p)
	}
}

// resolve substitutes a port from take for PortPlaceholder, if any template uses it; port is 0
// when none does.
func resolve(s Spec, take func() (int, error)) (argv []string, url, healthURL string, port int, err error) {
	uses := strings.Contains(s.URL, PortPlaceholder) || strings.Contains(s.HealthURL, PortPlaceholder)
	for _, a := range s.Command {
		uses = uses || strings.Contains(a, PortPlaceholder)
	}
	ps := ""
	if uses {
		if port, err = take(); err != nil {
			return nil, "", "", 0, err
		}
		ps = strconv.Itoa(port)
	}
	sub := func(v string) string { return strings.ReplaceAll(v, PortPlaceholder, ps) }
	argv = make([]string, len(s.Command))
	for i, a := range s.Command {
		argv[i] = sub(a)
	}
	return argv, strings.TrimSuffix(sub(s.URL), "/"), sub(s.HealthURL), port, nil
}

// fixedAddr is the host:port a process with a fixed port is checked at: its health URL's, or
// its URL's.
func fixedAddr(healthURL, baseURL string) (string, bool) {
	raw := healthURL
	if raw == "" {
		raw = baseURL
	}
	u, err := neturl.Parse(raw)
	if err != nil || u.Host == "" {
		return "", false
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), true
}

// answers reports whether something accepts a connection at addr at once.
func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// freePort asks the kernel for an unused loopback port. Another program may take it before the
// child binds it; the child then fails to start and the error says so.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// childEnv is the environment a child runs with: environ without the variables withhold names,
// then add.
func childEnv(environ, withhold, add []string) []string {
	env := make([]string, 0, len(environ)+len(add))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(withhold, name) {
			env = append(env, kv)
		}
	}
	return append(env, add...)
}
