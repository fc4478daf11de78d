package lifecycle

import "syscall"

// sysProcAttr puts the child in its own process group, so that a stop reaches whatever it spawned,
// and asks the kernel to SIGKILL it when the thread that forked it dies; Manager forks from one
// locked thread that lives until Close, so that is "when the gateway dies".
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
