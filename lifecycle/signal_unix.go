//go:build unix

package lifecycle

import (
	"errors"
	"os"
	"syscall"
)

// signalGroup signals the child's whole process group; a group that is already gone is not an
// error.
func signalGroup(p *os.Process, kill bool) error {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// groupAlive reports whether a process of the group pgid is left. Zombies are not counted: an
// orphan that an init which does not reap leaves behind holds no memory.
func groupAlive(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return false
	}
	// kill finds zombies too; only a look at each process can tell them apart.
	return groupHasLive(pgid)
}
