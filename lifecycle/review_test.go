//go:build unix

package lifecycle

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Two requests for different members of a one-slot group, each coming back as soon as it is
// served: each must be served, and a member that became ready for a waiting request must not be
// evicted before that request gets it.
func TestNoEvictionBeforeWaiterAcquires(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a", "-delay", "50ms")), inGroup("g", fake("b", "-delay", "50ms"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		served []string
	)
	errs := make(chan error, 2)
	for _, name := range []string{"a", "b"} {
		wg.Go(func() {
			for range 5 {
				_, release, err := h.m.Ensure(ctx, name)
				if err != nil {
					errs <- err
					return
				}
				// The slot holds one member, so the order of these appends is the serving order.
				mu.Lock()
				served = append(served, name)
				mu.Unlock()
				release()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Ensure: %v", err)
	}
	// Each change of member in the serving order needs one start; a start beyond those is a member
	// that loaded and was evicted before the request it loaded for got it.
	want := 1
	for i := 1; i < len(served); i++ {
		if served[i] != served[i-1] {
			want++
		}
	}
	if got := h.status(t, "a").Starts + h.status(t, "b").Starts; got != want {
		t.Errorf("%d starts for serving order %v, want %d", got, served, want)
	}
}

// The kernel hands a port that was free a moment ago to the next bind(0) too: a target whose
// process has that port (or will bind it once loaded) must not be given it again, else the second
// target's health check and requests reach the first one's model.
func TestPortNeverSharedBetweenTargets(t *testing.T) {
	h := newHarness(t, []Spec{fake("a"), fake("b")}, nil, Options{})
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	scriptPorts(h.m, port, port) // the kernel's answer, twice
	urlA := h.use(t, "a")
	urlB := h.use(t, "b")
	if urlA == urlB {
		t.Fatalf("a and b were both given %s", urlA)
	}
	for name, url := range map[string]string{"a": urlA, "b": urlB} {
		if model, err := chat(url); err != nil || model != name {
			t.Errorf("chat with %s at %s: answered by %q, err %v", name, url, model, err)
		}
	}
}

// An unpinned member that crashed after a healthy run is restarted; when the restart cannot
// become healthy either (the model now fails to load), it is stopped rather than reloaded every
// backoff forever, holding memory for a model nobody asked for: the next request starts it anew.
func TestUnpinnedRestartGivesUp(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	spec := fake("a", "-crash-after", "1", "-starts", starts, "-crash-at-start-from", "2")
	h := newHarness(t, []Spec{spec}, nil, Options{RestartBackoff: time.Second, MaxRestartBackoff: time.Second})
	url := h.use(t, "a")
	if _, err := chat(url); err != nil {
		t.Fatalf("first chat: %v", err)
	}
	if _, err := chat(url); err == nil {
		t.Fatal("second chat succeeded; the backend should have crashed")
	}
	for i := range 3 {
		eventually(t, "a to wait for a restart or stop", func() bool {
			st := h.status(t, "a")
			return st.State == StateStopped || st.State == StateBackoff && st.Restarts == i
		})
		if h.m.State("a") == StateStopped {
			break
		}
		h.clock.Advance(2 * time.Second) // the delay is 1s ± 50%
	}
	if st := h.status(t, "a"); st.State != StateStopped || st.Starts != 2 {
		t.Errorf("after a failed restart: %+v, want stopped after 2 starts", st)
	}
	if b, err := os.ReadFile(starts); err != nil || strings.Count(string(b), "\n") != 2 {
		t.Errorf("processes launched: %q (err %v), want 2", b, err)
	}
}

// A member told to stop launches nothing more: its supervisor can reach the launch with the stop
// already asked for (a restart timer or its victim's exit and a stop at once, as on shutdown), and
// a select between the spawner and the stop picked the spawner half the time.
func TestNoSpawnAfterStop(t *testing.T) {
	h := newHarness(t, []Spec{fake("a")}, nil, Options{})
	h.use(t, "a") // the spawner now waits for work
	stop := make(chan struct{})
	close(stop)
	for i := range 50 {
		cmd := exec.Command(fakeBin, "-crash-at-start")
		if err := h.m.spawn(cmd, stop); !errors.Is(err, errStopRequested) {
			if err == nil {
				_ = cmd.Wait()
			}
			t.Fatalf("spawn %d with the stop asked for: err %v, want errStopRequested", i, err)
		}
	}
}

// Close while one request waits for a process that is still loading and another for a slot in
// its group: both end with ErrClosed at once, and the loading process is gone when Close returns.
func TestCloseWhileStarting(t *testing.T) {
	// a's load takes five minutes: a Close that waited for it, rather than stop it, would take
	// that long, far beyond the minute below that a busy machine gets for a SIGTERM honoured.
	specs := []Spec{inGroup("g", fake("a", "-delay", "5m")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{StopGrace: 2 * time.Second})
	errs := make(chan error, 2)
	ensure := func(name string) {
		go func() {
			_, _, err := h.m.Ensure(context.Background(), name)
			errs <- err
		}()
	}
	ensure("a")
	var pid int
	eventually(t, "a's process to be launched", func() bool {
		pid = h.status(t, "a").PID
		return pid != 0
	})
	// b waits for the slot a, still loading, holds: its load_timeout timer joins a's two.
	ensure("b")
	eventually(t, "b to wait for a slot", func() bool { return h.clock.Pending() == 3 })
	start := time.Now()
	if err := h.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !processGone(pid) {
		t.Errorf("a's loading process %d outlived Close", pid)
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Errorf("a waiting Ensure: %v, want ErrClosed", err)
		}
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("Close took %s for a process that honours SIGTERM", d)
	}
	for _, st := range h.m.Status() {
		if st.State != StateStopped || st.PID != 0 {
			t.Errorf("after Close: %+v", st)
		}
	}
}

// A state file that cannot be used is an empty order: Start works and pre-warms nothing, and
// names the config no longer has are skipped.
func TestStateFileVariants(t *testing.T) {
	tests := []struct {
		name     string
		content  *string // nil = no file
		wantWarm []string
		wantLog  string
	}{
		{"missing", nil, nil, ""},
		{"empty", ptr(""), nil, "ignoring state file"},
		{"truncated", ptr(`{"version":1,"recent":["a",`), nil, "ignoring state file"},
		{"garbage", ptr("\x00\xff not json"), nil, "ignoring state file"},
		{"other version", ptr(`{"version":2,"recent":["a"]}`), nil, "ignoring state file"},
		{"renamed and removed targets", ptr(`{"version":1,"recent":["gone","old-a","b"]}`), []string{"b"}, ""},
		{"a name twice", ptr(`{"version":1,"recent":["b","b","a"]}`), []string{"a", "b"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "lru.json")
			if tt.content != nil {
				if err := os.WriteFile(state, []byte(*tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b")), inGroup("g", fake("c"))}
			h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2}}, Options{StateFile: state})
			if err := h.m.Start(context.Background()); err != nil {
				t.Fatalf("Start: %v", err)
			}
			eventually(t, "the pre-warmed members to be ready", func() bool {
				return len(h.running()) == len(tt.wantWarm)
			})
			if diff := cmp.Diff(tt.wantWarm, h.running()); diff != "" {
				t.Errorf("pre-warmed (-want +got):\n%s", diff)
			}
			if !strings.Contains(h.log.String(), tt.wantLog) {
				t.Errorf("log lacks %q", tt.wantLog)
			}
			// Saving replaces whatever was there with a readable order. Uses are saved at the next
			// start or stop of a process, or at Close, not on every use.
			h.use(t, "c")
			if err := h.m.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if recent, err := readState(state); err != nil || len(recent) == 0 || recent[0] != "c" {
				t.Errorf("after using c the state file reads %v, %v", recent, err)
			}
		})
	}
	t.Run("directory missing", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "no", "lru.json")
		h := newHarness(t, []Spec{fake("a")}, nil, Options{StateFile: state})
		if err := h.m.Start(context.Background()); err != nil {
			t.Fatalf("Start: %v", err)
		}
		h.use(t, "a")
		eventually(t, "the failed save to be logged", func() bool {
			return strings.Contains(h.log.String(), "lifecycle: saving state")
		})
	})
}

func ptr[T any](v T) *T { return &v }

// The restart delay grows while a process keeps crashing soon after it is healthy, and starts from
// the first delay again after a run of stableAfter or longer.
func TestRestartBackoffResetsAfterStableRun(t *testing.T) {
	h := newHarness(t, []Spec{fake("a", "-crash-after", "1")}, nil,
		Options{RestartBackoff: time.Second, MaxRestartBackoff: 8 * time.Second})
	crash := func(restarts int, upFor time.Duration) {
		t.Helper()
		url := h.use(t, "a")
		h.clock.Advance(upFor)
		_, _ = chat(url)
		if _, err := chat(url); err == nil {
			t.Fatal("the second chat succeeded; the backend should have crashed")
		}
		eventually(t, "a to wait for its restart", func() bool {
			st := h.status(t, "a")
			return st.State == StateBackoff && st.Restarts == restarts
		})
	}
	// Quick crashes push the delay to its cap: 8s ± 50%, at least 4s.
	for i := range 6 {
		crash(i, 0)
		h.clock.Advance(12 * time.Second)
	}
	crash(6, 0)
	h.clock.Advance(3 * time.Second)
	if st := h.m.State("a"); st != StateBackoff {
		t.Fatalf("3s after the seventh quick crash: %s, want still waiting", st)
	}
	h.clock.Advance(9 * time.Second)
	// A stable run: the next delay is 1s ± 50% again.
	crash(7, stableAfter)
	h.clock.Advance(1500 * time.Millisecond)
	// The restart itself runs in the supervisor, after the timer.
	eventually(t, "a to restart 1.5s after a crash that followed a stable run", func() bool {
		return h.status(t, "a").Restarts == 8
	})
}

// Requests for the members of a small group, from several clients at once, while members linger
// after SIGTERM: every request is served, and no snapshot ever shows more live processes than
// slots.
func TestGroupChurn(t *testing.T) {
	var specs []Spec
	names := []string{"a", "b", "c", "d"}
	for _, name := range names {
		specs = append(specs, inGroup("g", fake(name, "-ignore-term")))
	}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2}}, Options{StopGrace: 50 * time.Millisecond})
	h.passGraces()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	done := make(chan struct{})
	sampled := make(chan int, 1)
	go func() {
		most := 0
		for {
			n := 0
			for _, st := range h.m.Status() {
				if st.PID != 0 {
					n++
				}
			}
			most = max(most, n)
			select {
			case <-done:
				sampled <- most
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			for i := range 4 {
				name := names[(c+i*3)%len(names)]
				url, release, err := h.m.Ensure(ctx, name)
				if err != nil {
					t.Errorf("client %d: Ensure(%s): %v", c, name, err)
					return
				}
				if model, err := chat(url); err != nil || model != name {
					t.Errorf("client %d: chat %s: model %q, err %v", c, name, model, err)
				}
				release()
			}
		})
	}
	wg.Wait()
	close(done)
	if most := <-sampled; most > 2 {
		t.Errorf("%d processes alive at once in a 2-slot group", most)
	}
}

// A manager closed without having been started (the gateway failed before serving: its port was
// taken, by another gateway perhaps) has not read the state file, and must not replace it with
// its own empty order.
func TestCloseWithoutStartKeepsStateFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "lru.json")
	saved := []string{"b", "a"}
	if err := writeState(state, saved); err != nil {
		t.Fatal(err)
	}
	specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{StateFile: state})
	if err := h.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	recent, err := readState(state)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(saved, recent); diff != "" {
		t.Errorf("state file after Close without Start (-want +got):\n%s", diff)
	}
}

// A pinned member that cannot start keeps being restarted with backoff, keeps its slot, and does
// not stop the other members from sharing the rest.
func TestPinnedCrashLoop(t *testing.T) {
	specs := []Spec{inGroup("g", fake("p", "-crash-at-start")), inGroup("g", fake("a")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2, Pinned: []string{"p"}}},
		Options{RestartBackoff: time.Second, MaxRestartBackoff: time.Second})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		eventually(t, "p to wait for its restart", func() bool {
			st := h.status(t, "p")
			return st.State == StateBackoff && st.Restarts == i
		})
		h.use(t, []string{"a", "b"}[i%2])
		if diff := cmp.Diff([]string{[]string{"a", "b"}[i%2]}, h.running()); diff != "" {
			t.Fatalf("round %d: running (-want +got):\n%s", i, diff)
		}
		h.clock.Advance(2 * time.Second)
	}
	if st := h.status(t, "p"); st.Starts < 3 || !strings.Contains(st.LastError, "model file is corrupt") {
		t.Errorf("p after three rounds: %+v", st)
	}
}
