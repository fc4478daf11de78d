package lifecycle

import (
	"path/filepath"
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
