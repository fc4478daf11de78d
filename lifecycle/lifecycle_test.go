//go:build unix

package lifecycle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestStartOnDemand(t *testing.T) {
	h := newHarness(t, []Spec{fake("a")}, nil, Options{})
	if got := h.m.State("a"); got != StateStopped {
		t.Fatalf("before use: state %s, want stopped", got)
	}
	url, release, err := h.m.Ensure(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if model, err := chat(url); err != nil || model != "a" {
		t.Fatalf("chat via %s: model %q, err %v", url, model, err)
	}
	st := h.status(t, "a")
	if st.State != StateReady || st.PID == 0 || st.URL != url || st.InFlight != 1 || st.Starts != 1 {
		t.Errorf("status = %+v, want ready, a pid, url %s, 1 in flight, 1 start", st, url)
	}
	if !h.m.Ready("a") {
		t.Error("Ready(a) = false while it serves")
	}
}

func TestEnsureUnknownTarget(t *testing.T) {
	h := newHarness(t, []Spec{fake("a")}, nil, Options{})
	_, _, err := h.m.Ensure(context.Background(), "nope")
	var ue *UnknownTargetError
	if !errors.As(err, &ue) || ue.Name != "nope" {
		t.Fatalf("err = %v, want *UnknownTargetError for nope", err)
	}
	if h.m.Manages("nope") || !h.m.Manages("a") {
		t.Error("Manages disagrees with the specs")
	}
}

func TestEvictionOrderLRU(t *testing.T) {
	tests := []struct {
		name        string
		uses        []string
		wantRunning []string
	}{
		{"the oldest goes", []string{"a", "b", "c"}, []string{"b", "c"}},
		{"a use refreshes", []string{"a", "b", "a", "c"}, []string{"a", "c"}},
		{"an evicted member comes back", []string{"a", "b", "c", "a"}, []string{"a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Members that linger until SIGKILL make a newcomer that did not wait for its victim
			// show up as a third live process.
			var specs []Spec
			for _, name := range []string{"a", "b", "c"} {
				specs = append(specs, inGroup("g", fake(name, "-ignore-term")))
			}
			h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2}},
				Options{StopGrace: 200 * time.Millisecond})
			h.passGraces()
			pids := map[int]bool{}
			for _, name := range tt.uses {
				url := h.use(t, name)
				if model, err := chat(url); err != nil || model != name {
					t.Fatalf("chat %s: model %q, err %v", name, model, err)
				}
				pids[h.status(t, name).PID] = true
				// A newcomer is launched only after its victim exited.
				alive := 0
				for pid := range pids {
					if !processGone(pid) {
						alive++
					}
				}
				if alive > 2 {
					t.Fatalf("after using %s: %d processes alive in a 2-slot group", name, alive)
				}
			}
			if diff := cmp.Diff(tt.wantRunning, h.running()); diff != "" {
				t.Errorf("running (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPinnedNeverEvicted(t *testing.T) {
	specs := []Spec{inGroup("g", fake("router")), inGroup("g", fake("a")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2, Pinned: []string{"router"}}},
		Options{WaitHealthy: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	router := h.status(t, "router")
	if router.State != StateReady {
		t.Fatalf("after Start with WaitHealthy: router %s", router.State)
	}
	// The router is never used, so it is always the least recently used member.
	for _, name := range []string{"a", "b", "a", "b"} {
		h.use(t, name)
		if diff := cmp.Diff([]string{name, "router"}, h.running()); diff != "" {
			t.Fatalf("after using %s, running (-want +got):\n%s", name, diff)
		}
		if st := h.status(t, "router"); st.PID != router.PID || st.Starts != 1 {
			t.Fatalf("router was restarted: %+v", st)
		}
	}
}

func TestBusyMemberNotEvicted(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	_, releaseA, err := h.m.Ensure(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	pidA := h.status(t, "a").PID

	got := make(chan error, 1)
	go func() {
		_, release, err := h.m.Ensure(context.Background(), "b")
		if err == nil {
			release()
		}
		got <- err
	}()
	// b's wait arms its load_timeout timer before it looks for a slot.
	eventually(t, "b to wait for a slot", func() bool { return h.clock.Pending() > 0 })
	if st := h.status(t, "a"); st.State != StateReady || st.PID != pidA {
		t.Fatalf("a was disturbed while in use: %+v", st)
	}
	if st := h.status(t, "b"); st.Starts != 0 {
		t.Fatalf("b started while the only slot was busy: %+v", st)
	}
	releaseA()
	if err := <-got; err != nil {
		t.Fatalf("Ensure(b) after a's release: %v", err)
	}
	if diff := cmp.Diff([]string{"b"}, h.running()); diff != "" {
		t.Errorf("running (-want +got):\n%s", diff)
	}
	if !processGone(pidA) {
		t.Errorf("a's process %d still runs", pidA)
	}
}

// waitingFor is how many Ensure calls for name are under way.
func waitingFor(h *harness, name string) int {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	return h.m.byName[name].waiting
}

// TestSingleStartUnderConcurrency: concurrent requests for one cold target start one process. It
// passes with singleflight removed (each call's flight finds the member starting and waits); it
// fails when, singleflight removed too, bringUp's check that the member is stopped and its
// reservation are no longer one critical section, or when bringUp reserves a member that is not
// stopped.
func TestSingleStartUnderConcurrency(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	loaded := filepath.Join(t.TempDir(), "loaded")
	h := newHarness(t, []Spec{fake("a", "-wait-file", loaded, "-starts", starts)}, nil, Options{})
	const callers = 8
	urls := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			url, release, err := h.m.Ensure(context.Background(), "a")
			if err == nil {
				release()
			}
			urls[i], errs[i] = url, err
		})
	}
	// a loads until every caller waits for it (it loaded for 300 ms, which a slow machine could
	// spend before the last caller came, leaving nothing concurrent to test).
	eventually(t, "every caller to wait for a", func() bool { return waitingFor(h, "a") == callers })
	if err := os.WriteFile(loaded, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || urls[i] != urls[0] {
			t.Fatalf("caller %d: url %q err %v; caller 0 got %q", i, urls[i], errs[i], urls[0])
		}
	}
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(b))); n != 1 {
		t.Errorf("%d processes started, want 1", n)
	}
	if st := h.status(t, "a"); st.Starts != 1 {
		t.Errorf("Starts = %d, want 1", st.Starts)
	}
}

func TestRestartAfterCrash(t *testing.T) {
	h := newHarness(t, []Spec{fake("a", "-crash-after", "1")}, nil,
		Options{RestartBackoff: time.Second, MaxRestartBackoff: time.Second})
	url := h.use(t, "a")
	if _, err := chat(url); err != nil {
		t.Fatalf("first chat: %v", err)
	}
	old := h.status(t, "a").PID
	if _, err := chat(url); err == nil {
		t.Fatal("second chat succeeded; the backend should have crashed")
	}
	eventually(t, "a to wait for its restart", func() bool { return h.m.State("a") == StateBackoff })
	if !processGone(old) {
		t.Errorf("crashed process %d still runs", old)
	}
	for _, want := range []string{"process crashed", "out of memory after 1 requests"} {
		if !strings.Contains(h.log.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}

	// The delay is 1s ± 50%.
	h.clock.Advance(2 * time.Second)
	url = h.use(t, "a")
	if model, err := chat(url); err != nil || model != "a" {
		t.Fatalf("chat after restart: model %q, err %v", model, err)
	}
	st := h.status(t, "a")
	if st.PID == old || st.Restarts != 1 || st.Starts != 2 || !strings.Contains(st.LastError, "exit status 3") {
		t.Errorf("after restart: %+v", st)
	}
}

func TestStartFailure(t *testing.T) {
	tests := []struct {
		name       string
		spec       Spec
		wantStderr string
	}{
		{"crash at start", fake("a", "-crash-at-start"), "fakebackend a: model file is corrupt"},
		{"no such program", Spec{Name: "a", Command: []string{"/nonexistent/llama-server"},
			URL: "http://127.0.0.1:1/v1", HealthURL: "http://127.0.0.1:1/health"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []Spec{tt.spec}, nil, Options{})
			for attempt := 1; attempt <= 2; attempt++ {
				_, _, err := h.m.Ensure(context.Background(), "a")
				var pe *ProcessError
				if !errors.As(err, &pe) || pe.Target != "a" {
					t.Fatalf("attempt %d: err = %v, want *ProcessError", attempt, err)
				}
				var last string
				if n := len(pe.Stderr); n > 0 {
					last = pe.Stderr[n-1]
				}
				if last != tt.wantStderr {
					t.Errorf("last stderr line = %q, want %q", last, tt.wantStderr)
				}
				if st := h.m.State("a"); st != StateStopped {
					t.Errorf("state after failure = %s, want stopped", st)
				}
			}
		})
	}
}

func TestLoadTimeout(t *testing.T) {
	spec := fake("a", "-hang")
	spec.LoadTimeout = 30 * time.Second
	h := newHarness(t, []Spec{spec}, nil, Options{})
	got := make(chan error, 1)
	go func() {
		_, _, err := h.m.Ensure(context.Background(), "a")
		got <- err
	}()
	var pid int
	eventually(t, "a's process to start", func() bool {
		pid = h.status(t, "a").PID
		return pid != 0
	})
	h.clock.Advance(29 * time.Second)
	if st := h.m.State("a"); st != StateStarting {
		t.Fatalf("before load_timeout: state %s, want starting", st)
	}
	h.clock.Advance(time.Second)
	err := <-got
	var lt *LoadTimeoutError
	if !errors.As(err, &lt) || lt.Target != "a" || lt.After != 30*time.Second {
		t.Fatalf("err = %v, want *LoadTimeoutError after 30s", err)
	}
	eventually(t, "the hung process to be killed", func() bool { return processGone(pid) })
	eventually(t, "a to be stopped", func() bool { return h.m.State("a") == StateStopped })
}

// TestLoadTimeoutShowsStopping: a process that did not load within load_timeout is stopped, and
// while it takes its grace to exit it is shown stopping, as a crashed one is, not starting.
func TestLoadTimeoutShowsStopping(t *testing.T) {
	spec := fake("a", "-hang", "-ignore-term")
	spec.LoadTimeout = 30 * time.Second
	h := newHarness(t, []Spec{spec}, nil, Options{StopGrace: 10 * time.Second})
	got := make(chan error, 1)
	go func() {
		_, _, err := h.m.Ensure(context.Background(), "a")
		got <- err
	}()
	var pid int
	eventually(t, "a's process to start", func() bool {
		pid = h.status(t, "a").PID
		return pid != 0
	})
	// The load timeout's SIGTERM must find the process ignoring it, or it dies at once and no
	// grace starts (under load at -count=3, the test waited 15 s for one).
	eventually(t, "a to ignore SIGTERM", func() bool { return termIgnored(pid) })
	h.clock.Advance(30 * time.Second)
	eventually(t, "a's grace to start", func() bool {
		_, ok := h.clock.Next(10 * time.Second)
		return ok
	})
	if st := h.m.State("a"); st != StateStopping {
		t.Errorf("while the timed-out process is stopped: State %s, want stopping", st)
	}
	if st := h.status(t, "a").State; st != StateStopping {
		t.Errorf("while the timed-out process is stopped: Status %s, want stopping", st)
	}
	h.clock.Advance(10 * time.Second)
	if err := <-got; !errors.As(err, new(*LoadTimeoutError)) {
		t.Fatalf("err = %v, want *LoadTimeoutError", err)
	}
	eventually(t, "the process to be killed", func() bool { return processGone(pid) })
	eventually(t, "a to be stopped", func() bool { return h.m.State("a") == StateStopped })
}

func TestIdleStop(t *testing.T) {
	spec := fake("a")
	spec.IdleStop = time.Minute
	h := newHarness(t, []Spec{spec}, nil, Options{})
	h.use(t, "a")
	pid := h.status(t, "a").PID

	steps := []struct {
		do        func()
		wantState State
	}{
		{func() { h.clock.Advance(30 * time.Second) }, StateReady},
		{func() { h.use(t, "a") }, StateReady}, // idle from t=30s now
		{func() { h.clock.Advance(40 * time.Second) }, StateReady},
		{func() {
			// In use: not idle however long the request takes.
			_, release, err := h.m.Ensure(context.Background(), "a")
			if err != nil {
				t.Fatal(err)
			}
			h.clock.Advance(5 * time.Minute)
			if st := h.m.State("a"); st != StateReady {
				t.Fatalf("idle-stopped while in use: %s", st)
			}
			release()
		}, StateReady},
		{func() { h.clock.Advance(59 * time.Second) }, StateReady},
		{func() { h.clock.Advance(time.Second) }, StateStopping},
	}
	for i, s := range steps {
		s.do()
		if got := h.m.State("a"); got != s.wantState {
			t.Fatalf("step %d: state %s, want %s", i, got, s.wantState)
		}
	}
	eventually(t, "the idle process to exit", func() bool { return processGone(pid) })
	eventually(t, "a to be stopped", func() bool { return h.m.State("a") == StateStopped })
}

func TestNoOrphanAfterClose(t *testing.T) {
	dir := t.TempDir()
	childA, childB := filepath.Join(dir, "a.child"), filepath.Join(dir, "b.child")
	specs := []Spec{
		fake("a", "-spawn-child", childA),
		fake("b", "-spawn-child", childB, "-ignore-term"),
	}
	h := newHarness(t, specs, nil, Options{StopGrace: 300 * time.Millisecond})
	h.passGraces()
	h.use(t, "a")
	h.use(t, "b")
	pids := []int{h.status(t, "a").PID, h.status(t, "b").PID}
	for _, f := range []string{childA, childB} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	for _, pid := range pids {
		if processGone(pid) {
			t.Fatalf("pid %d gone before Close", pid)
		}
	}
	if err := h.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		eventually(t, "every child and grandchild to be gone", func() bool { return processGone(pid) })
	}
	if !strings.Contains(h.log.String(), "ignored SIGTERM") {
		t.Error("log does not say b was killed after ignoring SIGTERM")
	}
	for _, st := range h.m.Status() {
		if st.State != StateStopped {
			t.Errorf("after Close %s is %s", st.Name, st.State)
		}
	}
	if _, _, err := h.m.Ensure(context.Background(), "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Ensure after Close: %v, want ErrClosed", err)
	}
}

func TestStateFilePrewarm(t *testing.T) {
	state := filepath.Join(t.TempDir(), "lru.json")
	specs := []Spec{
		inGroup("g", fake("router")),
		inGroup("g", fake("a")), inGroup("g", fake("b")), inGroup("g", fake("c")), inGroup("g", fake("d")),
	}
	groups := []GroupSpec{{Name: "g", Slots: 3, Pinned: []string{"router"}}}
	opts := Options{StateFile: state, WaitHealthy: true}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	first := newHarness(t, specs, groups, opts)
	if err := first.m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c", "d", "c"} {
		first.use(t, name)
	}
	if err := first.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	recent, err := readState(state)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c", "d", "b", "a"}, recent); diff != "" {
		t.Fatalf("saved order (-want +got):\n%s", diff)
	}

	second := newHarness(t, specs, groups, opts)
	if err := second.m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Two slots are left beside the router: the two most recently used come back.
	eventually(t, "c and d to be pre-warmed", func() bool {
		return cmp.Equal([]string{"c", "d", "router"}, second.running())
	})
	// The restored order holds: d is older than c, so a evicts d.
	second.use(t, "a")
	if diff := cmp.Diff([]string{"a", "c", "router"}, second.running()); diff != "" {
		t.Errorf("after using a, running (-want +got):\n%s", diff)
	}
}

func TestStartIgnoresBadStateFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "lru.json")
	if err := os.WriteFile(state, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, []Spec{inGroup("g", fake("a"))}, []GroupSpec{{Name: "g", Slots: 1}},
		Options{StateFile: state})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !strings.Contains(h.log.String(), "ignoring state file") {
		t.Error("the bad state file was not logged")
	}
}
