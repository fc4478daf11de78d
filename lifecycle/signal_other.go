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

// scanGroup cannot see a group here; the child itself has been waited for.
func scanGroup(int, []escapee) (live bool, found []escapee) { return false, nil }

func signalEscapees([]escapee, bool) {}

func escapeesAlive([]escapee) bool { return false }

// KillDescendants does nothing here: there are no process groups to kill.
func KillDescendants() {}
