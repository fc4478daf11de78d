//go:build unix && !linux

package lifecycle

import "syscall"

// sysProcAttr puts the child in its own process group so that a stop reaches whatever it spawned.
// Only Linux has a parent-death signal; elsewhere a gateway killed with SIGKILL leaves its children.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// groupHasLive cannot tell a zombie here without /proc: every process kill finds counts, so a
// zombie nobody reaps holds a stop until its bound.
func groupHasLive(int) bool { return true }

// findEscapees has no /proc to walk here: a descendant that left the group escapes a stop.
func findEscapees(int) []escapee { return nil }

func signalEscapees([]escapee, bool) {}

func escapeesAlive([]escapee) bool { return false }
