//go:build unix

package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The SIGTERM grace runs on the manager's clock: a member that ignores SIGTERM stays until the
// clock has moved past the grace, however long that takes in real time, and is killed then.
func TestStopGraceOnClock(t *testing.T) {
	b := inGroup("g", fake("b"))
	b.LoadTimeout = 2 * time.Hour // waits out a's grace
	specs := []Spec{inGroup("g", fake("a", "-ignore-term")), b}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{StopGrace: time.Hour})
	h.use(t, "a")
	pidA := h.status(t, "a").PID
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, release, err := h.m.Ensure(ctx, "b")
		if err == nil {
			release()
		}
		got <- err
	}()
	eventually(t, "a's grace to start on the clock", func() bool {
		_, ok := h.clock.Next(time.Hour)
		return ok
	})
	if processGone(pidA) || h.m.State("a") != StateStopping {
		t.Fatalf("a before its grace has passed: gone %v, state %s", processGone(pidA), h.m.State("a"))
	}
	h.clock.Advance(time.Hour)
	if err := <-got; err != nil {
		t.Fatalf("Ensure(b): %v", err)
	}
	if !processGone(pidA) {
		t.Errorf("a (pid %d) outlived its grace", pidA)
	}
}

// A stop ends, and frees its slot, only when no process of the member's group is left: a model
// server's workers (here a grandchild) get the grace to exit after their leader has, and the member
// evicted for is launched only after they have gone (b refuses to start while a's worker runs, as
// a model server finds its GPU memory still taken).
func TestStopWaitsForGroup(t *testing.T) {
	tests := []struct {
		name   string
		worker []string // how a's grandchild takes SIGTERM
		graces bool     // let the grace run out
		clean  bool     // the worker exits on its own, before the grace
	}{
		{"a worker that takes its time", []string{"-child-term-linger", "300ms"}, false, true},
		// Its leader exits at once: the worker still has its stderr, to log its way out, longer
		// than waitDelay after that.
		{"a worker that logs its way out", []string{"-child-term-linger", "1500ms", "-child-stderr"}, false, true},
		{"a worker that ignores SIGTERM", []string{"-child-ignore-term"}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			child := filepath.Join(t.TempDir(), "a.child")
			specs := []Spec{
				inGroup("g", fake("a", append([]string{"-spawn-child", child}, tt.worker...)...)),
				inGroup("g", fake("b", "-gpu-free", child)),
			}
			h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
			if tt.graces {
				h.passGraces()
			}
			h.use(t, "a")
			worker := readPid(t, child)
			h.use(t, "b") // fails if b was launched while the worker ran
			if !processGone(worker) {
				t.Errorf("a's worker %d outlived a's stop", worker)
			}
			_, err := os.Stat(child + ".clean")
			if clean := err == nil; clean != tt.clean {
				t.Errorf("worker exited on its own: %v, want %v", clean, tt.clean)
			}
			if st := h.status(t, "b"); st.Starts != 1 || st.State != StateReady {
				t.Errorf("b: %+v", st)
			}
		})
	}
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// An unpinned member that crashes and whose idle_stop passes before its restart is due stays
// stopped instead of loading a model only to stop it: whether the idle timer falls due during the
// backoff, or the request that held it through the crash ends during the backoff.
func TestIdleCrashedMemberStaysStopped(t *testing.T) {
	tests := []struct {
		name string
		run  func(h *harness, crash func())
	}{
		{"idle timer due during the backoff", func(h *harness, crash func()) {
			h.use(t, "a")
			h.clock.Advance(59 * time.Second)
			crash()
			h.clock.Advance(2 * time.Second)
		}},
		{"released during the backoff", func(h *harness, crash func()) {
			_, release, err := h.m.Ensure(context.Background(), "a")
			if err != nil {
				t.Fatal(err)
			}
			h.clock.Advance(5 * time.Minute)
			crash()
			release()
			h.clock.Advance(61 * time.Second)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := fake("a")
			a.IdleStop = time.Minute
			// The restart falls due 2.5 to 7.5 minutes after the crash: after idle_stop.
			h := newHarness(t, []Spec{a}, nil, Options{RestartBackoff: 5 * time.Minute, MaxRestartBackoff: 5 * time.Minute})
			crash := func() {
				if err := syscall.Kill(h.status(t, "a").PID, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				eventually(t, "a to back off", func() bool { return h.m.State("a") == StateBackoff })
			}
			tt.run(h, crash)
			h.clock.Advance(10 * time.Minute) // past any restart
			eventually(t, "a to settle", func() bool {
				st := h.m.State("a")
				return st == StateStopped || st == StateReady
			})
			if st := h.status(t, "a"); st.State != StateStopped || st.Starts != 1 || st.Restarts != 0 {
				t.Errorf("a, idle past idle_stop when it crashed: %+v", st)
			}
		})
	}
}
