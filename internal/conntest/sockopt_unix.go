//go:build unix

package conntest

import (
	"net"
	"syscall"
	"testing"
)

// SockOpt reads an int socket option (level and opt as for getsockopt) of c's socket, for tests
// that check what was asked of the kernel for a connection: its keepalive probes, say.
func SockOpt(t testing.TB, c net.Conn, level, opt int) int {
	t.Helper()
	sc, ok := c.(syscall.Conn)
	if !ok {
		t.Fatalf("%T has no socket to read", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var oerr error
	if err := rc.Control(func(fd uintptr) { v, oerr = syscall.GetsockoptInt(int(fd), level, opt) }); err != nil {
		t.Fatal(err)
	}
	if oerr != nil {
		t.Fatal(oerr)
	}
	return v
}
