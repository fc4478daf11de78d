//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyReload sends SIGHUP to c.
func notifyReload(c chan<- os.Signal) { signal.Notify(c, syscall.SIGHUP) }
