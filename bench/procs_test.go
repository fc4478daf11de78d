//go:build linux

package main

import (
	"net"
	"os"
	"os/exec"
	"testing"
)

// TestListensOn: the socket listening on an address is told to belong to the process that holds
// it and to no other, so that waitReady does not take another program's answers on a port it
// took first for the child's.
func TestListensOn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Skip("no sleep to stand for another process:", err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	addr := ln.Addr().String()
	if !listensOn(os.Getpid(), addr) {
		t.Errorf("this process holds %s: not seen", addr)
	}
	if listensOn(other.Process.Pid, addr) {
		t.Errorf("another process is said to hold %s", addr)
	}
	free, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	if listensOn(os.Getpid(), free) {
		t.Errorf("%s, closed, is said to be listened on", free)
	}
}
