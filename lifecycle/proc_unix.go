//go:build unix && !linux

package lifecycle

import (
	"errors"
	"syscall"
)

// sysProcAttr puts the child in its own process group so that a stop reaches whatever it spawned.
// Only Linux has a parent-death signal; elsewhere a gateway killed with SIGKILL leaves its children.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// scanGroup cannot tell a zombie here without /proc: every process kill finds counts, so a
// zombie nobody reaps holds a stop until its bound. Nor is there a /proc to walk: a descendant
// that left the group escapes a stop.
func scanGroup(pgid int, _ []escapee) (live bool, found []escapee) {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH), nil
}

func signalEscapees([]escapee, bool) {}

func escapeesAlive([]escapee) bool { return false }

// KillDescendants sends SIGKILL to each process group a child of this process leads, as each
// process a Manager starts does: it cannot list them here without /proc, and does nothing.
func KillDescendants() {}
