//go:build unix

package h1

import (
	"syscall"
	"time"
)

// lastLook reads, without waiting, what of a stopped head (stopHead) the socket already holds.
// The stop's past deadline ends the read at once, also when the rest of the head has come and
// waits in the socket: bytes the client sent before the stop, which, read, can make the head
// whole, and its request is then served (keepHead) rather than reset under the client by the
// close. With nothing there (or a connection that is not a socket: TLS) it fails with
// errHeadStopped: what has not come by now the gateway will not wait for.
func (c *conn) lastLook(p []byte) (int, error) {
	sc, ok := c.nc.(syscall.Conn)
	if !ok || len(p) == 0 {
		return 0, errHeadStopped
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, errHeadStopped
	}
	// RawConn.Read fails past a deadline before it calls f; armRead puts the one the connection
	// needs back if its head is served (see serve).
	_ = c.nc.SetReadDeadline(time.Time{})
	var n int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), p)
		return true // one read, whatever it found: never wait
	}); err != nil || rerr != nil || n <= 0 {
		return 0, errHeadStopped
	}
	return n, nil
}
