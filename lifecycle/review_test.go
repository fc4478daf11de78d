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
	next := []int{port, port} // the kernel's answer, twice
	var mu sync.Mutex
	h.m.freePort = func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(next) > 0 {
			p := next[0]
			next = next[1:]
			return p, nil
		}
		return freePort()
	}
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
