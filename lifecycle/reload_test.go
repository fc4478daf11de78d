//go:build unix

package lifecycle

import (
	"context"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestReload: across a Reload an unchanged member keeps its process and its state, a changed one
// is stopped and started anew, a removed one is stopped, and one held by an attempt stops only
// once that attempt lets go; a new pinned member starts without Start.
func TestReload(t *testing.T) {
	specs := []Spec{inGroup("g", fake("keep")), inGroup("g", fake("change")), fake("drop"), fake("busy")}
	groups := []GroupSpec{{Name: "g", Slots: 2}}
	h := newHarness(t, specs, groups, Options{})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"keep", "change", "drop"} {
		h.use(t, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, releaseBusy, err := h.m.Ensure(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]MemberStatus{}
	for _, st := range h.m.Status() {
		before[st.Name] = st
	}

	changed := inGroup("g", fake("change", "-delay", "1ms"))
	pinned := inGroup("p", fake("pinned"))
	busy := fake("busy", "-delay", "1ms")
	if err := h.m.Reload([]Spec{specs[0], changed, busy, pinned},
		[]GroupSpec{{Name: "g", Slots: 2}, {Name: "p", Slots: 1, Pinned: []string{"pinned"}}}); err != nil {
		t.Fatal(err)
	}
	if st := h.status(t, "keep"); st.PID != before["keep"].PID || st.State != StateReady || st.Starts != 1 ||
		!st.LastUsed.Equal(before["keep"].LastUsed) {
		t.Errorf("unchanged member after the reload: %+v; before: %+v", st, before["keep"])
	}
	for _, n := range []string{"change", "drop"} {
		pid := before[n].PID
		eventually(t, n+"'s old process to stop", func() bool { return processGone(pid) })
	}
	if processGone(before["busy"].PID) {
		t.Fatal("a retired member was stopped while an attempt held it")
	}
	if h.m.Manages("drop") {
		t.Error("a removed member is still managed")
	}
	eventually(t, "the new pinned member", func() bool { return h.status(t, "pinned").State == StateReady })
	if url := h.use(t, "change"); h.status(t, "change").PID == before["change"].PID {
		t.Errorf("the changed member kept its process (%s)", url)
	}
	releaseBusy()
	pid := before["busy"].PID
	eventually(t, "the released retired member to stop", func() bool { return processGone(pid) })
	if st := h.status(t, "busy"); st.State != StateStopped || st.Starts != 0 {
		t.Errorf("the changed busy member's replacement: %+v, want stopped and never started", st)
	}
	if err := h.m.Reload([]Spec{{Name: "bad"}}, nil); err == nil || !h.m.Manages("keep") {
		t.Errorf("an invalid reload: err %v, and keep managed: %v", err, h.m.Manages("keep"))
	}
}

// TestReloadWaitsForRetiredSlot: a changed member of a full group starts only once its old
// process, which ignores SIGTERM, has gone: never two of its processes beside each other.
func TestReloadWaitsForRetiredSlot(t *testing.T) {
	h := newHarness(t, []Spec{inGroup("g", fake("a", "-ignore-term"))}, []GroupSpec{{Name: "g", Slots: 1}},
		Options{StopGrace: 200 * time.Millisecond})
	h.use(t, "a")
	old := h.status(t, "a").PID
	if err := h.m.Reload([]Spec{inGroup("g", fake("a", "-ignore-term", "-delay", "1ms"))},
		[]GroupSpec{{Name: "g", Slots: 1}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, release, err := h.m.Ensure(context.Background(), "a")
		if err == nil {
			release()
		}
		done <- err
	}()
	eventually(t, "the old process's grace to start", func() bool { return h.clock.Pending() > 0 })
	select {
	case err := <-done:
		t.Fatalf("the new member started beside the old one's process: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if processGone(old) {
		t.Fatal("the old process went before its grace")
	}
	wantRetired(t, h, MemberStatus{Name: "a", Group: "g", State: StateStopping, PID: old, Starts: 1})
	h.passGraces()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !processGone(old) {
		t.Error("the new process runs beside the old one")
	}
}

// TestSameSpecCoversSpec: sameSpec compares every field of Spec; a field added to Spec must be
// added there (or this count changed knowingly).
func TestSameSpecCoversSpec(t *testing.T) {
	if n := reflect.TypeFor[Spec]().NumField(); n != 9 {
		t.Errorf("Spec has %d fields; sameSpec compares 9", n)
	}
}

// TestReloadChangedStartsAfterOld: a changed member whose old process an attempt still holds
// starts anew only once that process has gone, even where no full group would make it wait: a
// member of no group, and one of a group with a slot free. Its process is the same model, on the
// same GPU, perhaps on the same fixed port.
func TestReloadChangedStartsAfterOld(t *testing.T) {
	for _, tc := range []struct {
		name   string
		group  string
		groups []GroupSpec
	}{
		{"no group", "", nil},
		{"a slot free", "g", []GroupSpec{{Name: "g", Slots: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, []Spec{inGroup(tc.group, fake("a"))}, tc.groups, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, releaseOld, err := h.m.Ensure(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			old := h.status(t, "a").PID
			if err := h.m.Reload([]Spec{inGroup(tc.group, fake("a", "-delay", "1ms"))}, tc.groups); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, release, err := h.m.Ensure(ctx, "a")
				if err == nil {
					release()
				}
				done <- err
			}()
			eventually(t, "the new member to wait for the old process", func() bool {
				select {
				case err := <-done:
					t.Fatalf("the new member started beside its held old process (%v)", err)
				default:
				}
				return strings.Contains(h.log.String(), "waiting for its retired process")
			})
			if st := h.status(t, "a"); st.Starts != 0 || st.PID != 0 || processGone(old) {
				t.Fatalf("while the old process is held: new member %+v, old gone %v", st, processGone(old))
			}
			wantRetired(t, h, MemberStatus{Name: "a", Group: tc.group, State: StateReady, PID: old, InFlight: 1, Starts: 1})
			releaseOld()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !processGone(old) {
				t.Error("the new process runs beside the old one")
			}
			wantRetired(t, h)
			if st := h.status(t, "a"); st.Starts != 1 || st.PID == old {
				t.Errorf("the new member: %+v", st)
			}
		})
	}
}

// TestReloadWhileStarting: a request waiting for a member whose process is loading, when a Reload
// changes that member, is served by the new member's process; the old one, which never became
// healthy, is stopped first.
func TestReloadWhileStarting(t *testing.T) {
	h := newHarness(t, []Spec{fake("a", "-hang")}, nil, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	var url string
	go func() {
		u, release, err := h.m.Ensure(ctx, "a")
		if err == nil {
			url = u
			release()
		}
		done <- err
	}()
	eventually(t, "the first process to launch", func() bool { return h.status(t, "a").PID != 0 })
	old := h.status(t, "a").PID
	if err := h.m.Reload([]Spec{fake("a")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiting request: %v", err)
	}
	if !processGone(old) {
		t.Error("the retired loading process still runs beside the new one")
	}
	if got, err := chat(url); err != nil || got != "a" {
		t.Errorf("the new process answered %q, %v", got, err)
	}
}

// TestReloadRetiredNotRestarted: a retired member's process that crashed while an attempt still
// holds it is not launched again, whether it crashed after the Reload or the Reload came during
// its backoff: it would load the replaced configuration's model again, and hold off the new
// member that waits for it to go.
func TestReloadRetiredNotRestarted(t *testing.T) {
	for _, during := range []bool{false, true} {
		t.Run(map[bool]string{false: "crash after the reload", true: "reload during the backoff"}[during], func(t *testing.T) {
			h := newHarness(t, []Spec{fake("a")}, nil, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, releaseOld, err := h.m.Ensure(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			defer releaseOld()
			old := h.status(t, "a").PID
			reload := func() {
				if err := h.m.Reload([]Spec{fake("a", "-delay", "1ms")}, nil); err != nil {
					t.Fatal(err)
				}
			}
			if !during {
				reload()
			}
			if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if during {
				eventually(t, "the backoff", func() bool { return h.status(t, "a").State == StateBackoff })
				reload()
				h.clock.Advance(time.Hour)
			}
			eventually(t, "the retired member to give up", func() bool {
				return strings.Contains(h.log.String(), "retired by a reload: not restarting")
			})
			if n := strings.Count(h.log.String(), "lifecycle: launched"); n > 1 {
				t.Fatalf("%d launches: the retired member was launched again", n)
			}
			url, release, err := h.m.Ensure(ctx, "a")
			if err != nil {
				t.Fatalf("the new member while the old attempt still holds the crashed one: %v", err)
			}
			release()
			if got, err := chat(url); err != nil || got != "a" {
				t.Errorf("the new process answered %q, %v", got, err)
			}
		})
	}
}

// wantRetired checks the retired members Status lists after the current ones: what they are, and
// why each still runs (held: ready with InFlight; stopping). Timestamps, URLs and errors are
// ignored; every want is Retired.
func wantRetired(t *testing.T, h *harness, want ...MemberStatus) {
	t.Helper()
	var got []MemberStatus
	for i, st := range h.m.Status() {
		if st.Retired {
			got = append(got, st)
		} else if len(got) > 0 {
			t.Errorf("Status lists current member %s (#%d) after a retired one", st.Name, i)
		}
	}
	for i := range want {
		want[i].Retired = true
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(MemberStatus{}, "URL", "LastUsed", "LastError"),
		cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("retired members in Status (-want +got):\n%s", diff)
	}
}
