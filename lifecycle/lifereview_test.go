//go:build unix

package lifecycle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// upCount counts the members whose process runs (a member starting but not launched yet, waiting
// for the one it evicted to go, has none).
func upCount(h *harness) int {
	n := 0
	for _, st := range h.m.Status() {
		if st.PID != 0 {
			n++
		}
	}
	return n
}

// TestHerdOf64StartsOnce: 64 concurrent requests for one cold member of a full group start one
// process and evict one member, not 64 of either.
//
// What keeps the start single is that a start is reserved only from StateStopped, in the critical
// section that sets StateStarting (bringUp, reserveLocked); singleflight only has the callers
// share one flight, and the test passes without it. The group has two slots and two idle members:
// in a group of one slot, a second reservation of a would find a itself in the only slot and
// nothing to evict, so the slot count alone would hide a check-and-set that is no longer atomic
// (with singleflight removed as well, this test then failed; with one slot it passed).
func TestHerdOf64StartsOnce(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	loaded := filepath.Join(t.TempDir(), "loaded")
	specs := []Spec{inGroup("g", fake("a", "-wait-file", loaded, "-starts", starts)),
		inGroup("g", fake("b")), inGroup("g", fake("c"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2}}, Options{})
	h.use(t, "b")
	h.use(t, "c") // b is the least recently used: the one to evict
	pidB, pidC := h.status(t, "b").PID, h.status(t, "c").PID
	const callers = 64
	errs := make([]error, callers)
	urls := make([]string, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			url, release, err := h.m.Ensure(ctx, "a")
			if err == nil {
				release()
			}
			urls[i], errs[i] = url, err
		})
	}
	// a loads until every caller waits for it, rather than for 200 ms a slow machine could
	// spend before the last one came.
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
		t.Errorf("%d processes of a started, want 1", n)
	}
	if !processGone(pidB) {
		t.Errorf("b's process %d still runs beside a and c in a group of two slots", pidB)
	}
	if st := h.status(t, "b"); st.State != StateStopped || st.Starts != 1 {
		t.Errorf("b: %+v, want stopped after one start", st)
	}
	if st := h.status(t, "c"); st.State != StateReady || st.PID != pidC {
		t.Errorf("c: %+v, want still running as process %d: one eviction for one start", st, pidC)
	}
}

// TestTwoColdMembersOneFreeSlot: two requests for two stopped members arriving together when one
// slot of two is free: one takes the free slot, the other evicts the idle member, both are served,
// and the group never has more than two processes up.
func TestTwoColdMembersOneFreeSlot(t *testing.T) {
	specs := []Spec{
		inGroup("g", fake("x")),
		inGroup("g", fake("a", "-delay", "100ms")),
		inGroup("g", fake("b", "-delay", "100ms")),
	}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2}}, Options{})
	h.use(t, "x")
	var (
		wg   sync.WaitGroup
		stop = make(chan struct{})
		most int
	)
	wg.Go(func() {
		for {
			most = max(most, upCount(h))
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	errs := make(chan error, 2)
	var reqs sync.WaitGroup
	for _, n := range []string{"a", "b"} {
		reqs.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			url, release, err := h.m.Ensure(ctx, n)
			if err != nil {
				errs <- err
				return
			}
			defer release()
			if got, err := chat(url); err != nil || got != n {
				errs <- errors.Join(err, errors.New("answered by "+got+", want "+n))
			}
		})
	}
	reqs.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := h.running(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("running %v, want [a b]", got)
	}
	if most > 2 {
		t.Errorf("%d members up at once in a group of 2 slots", most)
	}
}

// TestRequestForMemberBeingEvicted: a request for a member that is being stopped to make room for
// another waits for it to go, then for the member that took its slot to be released, and is
// served by a fresh process of its own; the two never run together.
func TestRequestForMemberBeingEvicted(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a", "-ignore-term")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{StopGrace: 500 * time.Millisecond})
	h.use(t, "a")
	pidA := h.status(t, "a").PID
	eventually(t, "a to ignore SIGTERM", func() bool { return termIgnored(pidA) })

	type res struct {
		url     string
		release func()
		err     error
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	gotB := make(chan res, 1)
	go func() {
		u, r, err := h.m.Ensure(ctx, "b")
		gotB <- res{u, r, err}
	}()
	eventually(t, "a to be evicted for b", func() bool {
		return h.m.State("a") == StateStopping && h.m.State("b") == StateStarting
	})
	gotA := make(chan res, 1)
	go func() {
		u, r, err := h.m.Ensure(ctx, "a")
		gotA <- res{u, r, err}
	}()
	eventually(t, "the request for a to wait", func() bool {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return h.m.byName["a"].waiting == 1
	})
	h.passGraces()
	rb := <-gotB
	if rb.err != nil {
		t.Fatalf("Ensure(b): %v", rb.err)
	}
	if !processGone(pidA) {
		t.Errorf("b was handed out while a's process %d runs", pidA)
	}
	select {
	case ra := <-gotA:
		t.Fatalf("a handed out while b holds the only slot: %+v", ra)
	default:
	}
	pidB := h.status(t, "b").PID
	rb.release()
	ra := <-gotA
	if ra.err != nil {
		t.Fatalf("Ensure(a): %v", ra.err)
	}
	defer ra.release()
	if !processGone(pidB) {
		t.Errorf("a was handed out while b's process %d runs", pidB)
	}
	if got, err := chat(ra.url); err != nil || got != "a" {
		t.Errorf("a's URL answered %q, %v", got, err)
	}
	if st := h.status(t, "a"); st.Starts != 2 {
		t.Errorf("a started %d times, want 2", st.Starts)
	}
}

// TestAbandonedLoadFinishesForTheNext: a request that leaves while its member's process loads
// gets its context's error at once; the load goes on, and the next request is served by that
// same process rather than a second one.
func TestAbandonedLoadFinishesForTheNext(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	h := newHarness(t, []Spec{inGroup("g", fake("a", "-delay", "300ms", "-starts", starts))},
		[]GroupSpec{{Name: "g", Slots: 1}}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, _, err := h.m.Ensure(ctx, "a")
		got <- err
	}()
	eventually(t, "a's process to launch", func() bool { return h.status(t, "a").PID != 0 })
	pid := h.status(t, "a").PID
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("Ensure after cancel: %v", err)
	}
	eventually(t, "the abandoned load to finish", func() bool { return h.m.Ready("a") })
	h.use(t, "a")
	if st := h.status(t, "a"); st.PID != pid || st.Starts != 1 {
		t.Errorf("a after the abandoned load: %+v, want pid %d and one start", st, pid)
	}
}

// TestUnwritableStateFileKeepsServing: a state file whose directory cannot be written (here a
// path through a regular file, which even root cannot create in) costs a warning per save, never
// a start nor a request.
func TestUnwritableStateFileKeepsServing(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}},
		Options{StateFile: filepath.Join(notDir, "lru.json")})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	h.use(t, "a")
	h.use(t, "b")
	if !strings.Contains(h.log.String(), "lifecycle: saving state") {
		t.Errorf("no warning logged for the unwritable state file:\n%s", h.log.String())
	}
}

// TestCrashOfBusyMemberFreesSlotForWaiter: a member that crashes after it was healthy, while an
// attempt holds it and a request for another member of its one-slot group waits: once the attempt
// lets go, the member waiting to restart is evicted for the waiter, not restarted first.
func TestCrashOfBusyMemberFreesSlotForWaiter(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a", "-crash-after", "1")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}},
		Options{RestartBackoff: time.Second, MaxRestartBackoff: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url, releaseA, err := h.m.Ensure(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	gotB := make(chan error, 1)
	go func() {
		_, release, err := h.m.Ensure(ctx, "b")
		if err == nil {
			release()
		}
		gotB <- err
	}()
	eventually(t, "b to wait for a slot", func() bool {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return h.m.byName["b"].waiting == 1
	})
	if _, err := chat(url); err != nil {
		t.Fatal(err)
	}
	if _, err := chat(url); err == nil {
		t.Fatal("second chat succeeded; a should have crashed")
	}
	eventually(t, "a to wait for its restart", func() bool { return h.m.State("a") == StateBackoff })
	releaseA()
	if err := <-gotB; err != nil {
		t.Fatalf("Ensure(b): %v", err)
	}
	if st := h.status(t, "a"); st.Starts != 1 || st.State != StateStopped {
		t.Errorf("a after b was served: %+v, want stopped after one start", st)
	}
}

// TestPinnedCrashWhileRequestsWait: a pinned member that crashes after it was healthy keeps its
// slot while it backs off (a request for another member takes the free one, a third waits rather
// than evict it), and a request for it waits for the restart and is served by the new process.
func TestPinnedCrashWhileRequestsWait(t *testing.T) {
	specs := []Spec{inGroup("g", fake("p", "-crash-after", "1")), inGroup("g", fake("a")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2, Pinned: []string{"p"}}},
		Options{RestartBackoff: time.Second, MaxRestartBackoff: time.Second})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "p to be ready", func() bool { return h.m.Ready("p") })
	url := h.use(t, "p")
	old := h.status(t, "p").PID
	if _, err := chat(url); err != nil {
		t.Fatal(err)
	}
	if _, err := chat(url); err == nil {
		t.Fatal("second chat succeeded; p should have crashed")
	}
	eventually(t, "p to wait for its restart", func() bool { return h.m.State("p") == StateBackoff })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type res struct {
		url     string
		release func()
		err     error
	}
	gotP := make(chan res, 1)
	go func() {
		u, r, err := h.m.Ensure(ctx, "p")
		gotP <- res{u, r, err}
	}()
	_, releaseA, err := h.m.Ensure(ctx, "a")
	if err != nil {
		t.Fatalf("Ensure(a) while p backs off: %v", err)
	}
	gotB := make(chan error, 1)
	go func() {
		_, release, err := h.m.Ensure(ctx, "b")
		if err == nil {
			release()
		}
		gotB <- err
	}()
	eventually(t, "b to wait for a slot", func() bool {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return h.m.byName["b"].waiting == 1 && h.m.byName["p"].waiting == 1
	})
	if st := h.m.State("p"); st != StateBackoff {
		t.Fatalf("p is %v while b waits, want backoff (a pinned member is never evicted)", st)
	}
	h.clock.Advance(2 * time.Second)
	rp := <-gotP
	if rp.err != nil {
		t.Fatalf("Ensure(p): %v", rp.err)
	}
	if got, err := chat(rp.url); err != nil || got != "p" {
		t.Errorf("restarted p answered %q, %v", got, err)
	}
	rp.release()
	if st := h.status(t, "p"); st.PID == old || st.Restarts != 1 {
		t.Errorf("p after its restart: %+v", st)
	}
	releaseA()
	if err := <-gotB; err != nil {
		t.Fatalf("Ensure(b): %v", err)
	}
	if st := h.status(t, "p"); st.State != StateReady {
		t.Errorf("pinned p after b took a's slot: %v", st.State)
	}
}
