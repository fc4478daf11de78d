//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package upstream

import (
	"errors"
	"net"
	"syscall"
)

// unsolicited reports, without waiting, whether an idle connection has bytes to read or was
// closed by its peer: either way it cannot carry the next exchange. A connection that is not a
// socket is assumed clean.
func unsolicited(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [1]byte
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		_, _, rerr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	}); err != nil {
		return true
	}
	// Nothing to read: the connection is idle and open. Any other outcome (a byte, the end of
	// the stream, an error) rules it out.
	return !errors.Is(rerr, syscall.EAGAIN) && !errors.Is(rerr, syscall.EWOULDBLOCK)
}

// peerEnded reports whether a write failed because the peer ended the connection (it reset it,
// or closed it and then reset it), after which reading what it sent before does not wait.
func peerEnded(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
