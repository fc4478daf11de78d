//go:build unix

package lifecycle

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// From the moment the supervisor has waited for a crashed process, its URL is dead: while what the
// process left is killed and waited for, and its stderr drained, the member is neither handed out
// nor reported ready, and a request that comes then waits for the restart. Here a worker that left
// the group (setsid) and that the crash orphaned, out of the reap's reach, holds the stderr pipe,
// which makes that window last until the test kills it: waitDelay is put out of reach, so that
// a member still ready then is seen as one, however slow the machine (the bound was 300 ms of
// wall time within waitDelay's second).
func TestCrashedMemberNotHandedOutDuringReap(t *testing.T) {
	child := filepath.Join(t.TempDir(), "a.child")
	spec := fake("a", "-crash-after", "1", "-spawn-child", child, "-child-setsid", "-child-stderr")
	h := newHarness(t, []Spec{spec}, nil, Options{RestartBackoff: time.Second, MaxRestartBackoff: time.Second})
	h.m.waitDelay = time.Hour // the drain ends when the test kills the worker
	url := h.use(t, "a")
	worker := readPid(t, child)
	t.Cleanup(func() { _ = syscall.Kill(worker, syscall.SIGKILL) })
	old := h.status(t, "a").PID
	if _, err := chat(url); err != nil {
		t.Fatalf("first chat: %v", err)
	}
	if _, err := chat(url); err == nil {
		t.Fatal("second chat succeeded; the backend should have crashed")
	}
	// ESRCH once the zombie has been waited for: the supervisor knows of the crash.
	eventually(t, "the crashed process to be waited for", func() bool {
		return syscall.Kill(old, 0) == syscall.ESRCH
	})
	// Before the fix it stayed ready with the dead URL for the whole drain, which now lasts until
	// the worker is killed below.
	eventually(t, "a to be not ready once its process was waited for", func() bool { return !h.m.Ready("a") })
	if st := h.status(t, "a"); st.State == StateReady || st.PID != 0 || st.URL != "" {
		t.Errorf("during the reap: state %s, pid %d, url %q; want not ready, no pid, no URL", st.State, st.PID, st.URL)
	}
	type result struct {
		url     string
		release func()
		err     error
	}
	got := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		u, rel, err := h.m.Ensure(ctx, "a")
		got <- result{u, rel, err}
	}()
	eventually(t, "the Ensure to wait for a", func() bool {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return h.m.byName["a"].waiting == 1
	})
	if err := syscall.Kill(worker, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the worker: %v", err)
	}
	eventually(t, "a to wait for its restart", func() bool { return h.m.State("a") == StateBackoff })
	select {
	case r := <-got:
		t.Fatalf("Ensure during the reap returned %q, %v before the restart", r.url, r.err)
	default:
	}
	h.clock.Advance(2 * time.Second) // the delay is 1s ± 50%
	r := <-got
	if r.err != nil {
		t.Fatalf("Ensure after the restart: %v", r.err)
	}
	defer r.release()
	if r.url == url {
		t.Errorf("Ensure returned the crashed process's URL %q", url)
	}
	if model, err := chat(r.url); err != nil || model != "a" {
		t.Errorf("chat after restart: model %q, err %v", model, err)
	}
}
