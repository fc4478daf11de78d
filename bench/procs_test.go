//go:build linux

package main

import (
	"errors"
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

// TestOnFreeAddrRetriesATakenPort: a child that could not bind the address it was given, taken
// since freeAddr found it free, is started again on another, up to three times; a child that
// fails otherwise is not, and its error is the caller's.
func TestOnFreeAddrRetriesATakenPort(t *testing.T) {
	var tried []string
	taken := errors.New("gateway exited before it was ready (exit status 1):\nlisten tcp 127.0.0.1:1: bind: address already in use")
	p, addr, err := onFreeAddr(func(addr string) (*proc, error) {
		tried = append(tried, addr)
		if len(tried) < 3 {
			return nil, taken
		}
		return &proc{name: "child"}, nil
	})
	if err != nil || p == nil || p.name != "child" || len(tried) != 3 || addr != tried[2] {
		t.Fatalf("got %v, %q, %v after %q; want the third try's child", p, addr, err, tried)
	}
	tried = nil
	if _, _, err := onFreeAddr(func(addr string) (*proc, error) { tried = append(tried, addr); return nil, taken }); err != taken || len(tried) != 3 {
		t.Errorf("always taken: %v after %d tries, want its error after 3", err, len(tried))
	}
	tried = nil
	other := errors.New("the generated gateway config does not load")
	if _, _, err := onFreeAddr(func(addr string) (*proc, error) { tried = append(tried, addr); return nil, other }); err != other || len(tried) != 1 {
		t.Errorf("another failure: %v after %d tries, want it after 1", err, len(tried))
	}
}
