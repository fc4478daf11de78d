//go:build !unix

package lifecycle

import (
	"errors"
	"os"
	"syscall"
)

// sysProcAttr has no process groups to offer here.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup can only kill the child itself on systems without process groups.
func signalGroup(p *os.Process, _ bool) error {
	err := p.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// groupAlive cannot see a group here; the child itself has been waited for.
func groupAlive(int) bool { return false }

// findEscapees has no process groups to escape here.
func findEscapees(int) []escapee { return nil }

func signalEscapees([]escapee, bool) {}

func escapeesAlive([]escapee) bool { return false }
