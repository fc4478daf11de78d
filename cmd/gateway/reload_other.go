//go:build !unix

package main

import "os"

// notifyReload does nothing: there is no SIGHUP here, and no reload.
func notifyReload(chan<- os.Signal) {}
