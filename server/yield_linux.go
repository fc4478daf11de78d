package server

import "syscall"

// yieldCPU gives the calling thread's CPU to whatever else is runnable on it (sched_yield(2)).
// See Options.Yield for why a stream's first event is followed by one.
func yieldCPU() { _, _, _ = syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
