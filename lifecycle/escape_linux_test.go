package lifecycle

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A worker that left its member's process group (setsid) is found from its parent before the
// stop and stopped with the group; the member evicted for starts only after it has gone.
func TestStopReachesEscapedWorker(t *testing.T) {
	child := filepath.Join(t.TempDir(), "a.child")
	specs := []Spec{
		inGroup("g", fake("a", "-spawn-child", child, "-child-setsid", "-child-term-linger", "100ms")),
		inGroup("g", fake("b", "-gpu-free", child)),
	}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	h.use(t, "a")
	worker := readPid(t, child)
	t.Cleanup(func() { _ = syscall.Kill(worker, syscall.SIGKILL) }) // should it escape the stop
	if pgid, err := syscall.Getpgid(worker); err != nil || pgid == h.status(t, "a").PID {
		t.Fatalf("worker's process group %d (err %v): it did not leave a's", pgid, err)
	}
	h.use(t, "b")
	if !processGone(worker) {
		t.Errorf("a's escaped worker %d outlived a's stop", worker)
	}
}

// A worker that, told to stop, starts a process that leaves the group (a pool replacing its
// workers) is still found during the stop, from its parent in the group, and stopped with it.
func TestStopReachesLateEscapee(t *testing.T) {
	dir := t.TempDir()
	child, late := filepath.Join(dir, "a.child"), filepath.Join(dir, "a.late")
	specs := []Spec{
		inGroup("g", fake("a", "-spawn-child", child, "-child-term-linger", "300ms", "-child-term-spawn", late)),
		inGroup("g", fake("b", "-gpu-free", late)),
	}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	t.Cleanup(func() { // should it escape the stop
		if b, err := os.ReadFile(late); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	h.use(t, "a")
	h.use(t, "b") // fails if b was launched while the late escapee ran
	if pid := readPid(t, late); !processGone(pid) {
		t.Errorf("the process a's worker started during the stop (%d) outlived it", pid)
	}
}
