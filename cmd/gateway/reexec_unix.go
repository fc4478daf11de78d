//go:build unix

package main

import (
	"os"
	"syscall"
)

// reexec replaces the process image with this executable, the same arguments and env. The
// process keeps its PID, open descriptors without close-on-exec, and parent.
func reexec(env []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, env)
}
