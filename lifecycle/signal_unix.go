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
