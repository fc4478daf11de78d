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

// earlyAnswer reports, without waiting, what the server has answered so far to a request whose
// writing is under way. refused: a final status other than 2xx (its first final status line, past
// any informational ones, is one of 300 or more, or its bytes are no status line at all), or the
// connection ended: either way it will not take the rest of the body, and a client "SHOULD
// immediately cease transmitting the body" (RFC 9112 §9.5). answered: that final status line has
// come and is below 300: the answer's head has come, and the wait for its body counts from it (see
// answeredEarly). A 1xx alone, or too few bytes to tell, is neither: a server may answer as it
// reads (see earlyVerdict). A connection that is not a socket never has.
func earlyAnswer(c net.Conn) (refused, answered bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, false
	}
	// Room for a status line past a few informational heads (see earlyVerdict). It is
	// allocated (Control's closure takes it), by the sweeper alone and only for a write still
	// under way from one visit to the next, as the status line's 12 bytes were.
	var buf [earlyPeek]byte
	var n int
	var rerr error
	// Control, not Read: RawConn.Read takes the connection's read lock, and the sweeper peeks
	// with the transport's lock held, so a peek that came as the exchange went on to read the
	// answer's head waited for that read, which only the sweeper could end
	// (TestRefusedEarlyDoesNotWaitForARead). A peek that does not wait needs no lock: it
	// consumes nothing, and the fd stays open while Control runs.
	if err := rc.Control(func(fd uintptr) {
		n, _, rerr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); err != nil {
		return false, false
	}
	switch {
	case errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK) || errors.Is(rerr, syscall.EINTR):
		return false, false // nothing yet
	case rerr != nil || n == 0:
		return true, false // the connection ended
	}
	refused, sure := earlyVerdict(buf[:n]) // not sure: a status line on its way, perhaps
	return refused, sure && !refused
}

// earlyPeek is how much of an early answer earlyAnswer looks at: a final status line behind
// informational heads longer than that (an Early Hints with many links) is not seen, and the
// write goes on, bounded by the target's timeout.
const earlyPeek = 512
