//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package upstream

import (
	"net"
	"syscall"
)

// writeWhole writes b, a whole request, on c and waits for its answer to begin. Written so, the
// first read of the answer is one that finds bytes: net.Conn's Read tries the socket before it
// waits, and right after a request nothing has come yet, so each exchange paid a read(2) that
// failed with EAGAIN (about a microsecond here) before the wait. The wait must not miss an
// answer that came before it began: the poller tells of bytes once, as they come, and a wait
// begun after that tiding, having forgotten it (RawConn.Read resets what the poller told before
// it calls its function), would wait for bytes that came already. So the write goes inside the
// wait, after that reset: what the server sends in answer comes after it, and wakes the wait.
//
// The write is one non-blocking write(2); what it leaves (a socket buffer that is full), or a
// write that fails, is written as before (Conn.Write), with the connection's deadlines, and the
// answer read as before, with no wait here. The exchange moves to its head's phase as the write
// ends, within the wait, as it does before its first read otherwise; when the sweeper has ended
// the exchange already, nothing waits, and the exchange finds it out (see exchange).
func (c *h1Conn) writeWhole(tc *net.TCPConn, b []byte) error {
	if c.raw == nil {
		rc, err := tc.SyscallConn()
		if err != nil {
			_, err = tc.Write(b)
			return err
		}
		c.raw = rc
		c.writeWait = c.writeThenWait
	}
	c.pending = b
	// Whatever ended the wait (a deadline the sweeper set, the connection closed) ends the
	// answer's first read the same way, which reports it: the request went out whole.
	_ = c.raw.Read(c.writeWait)
	rest := c.pending
	c.pending = nil
	if len(rest) == 0 {
		return nil
	}
	_, err := tc.Write(rest)
	return err
}

// writeThenWait is writeWhole's function for RawConn.Read: on its first call it writes what is
// pending (a request is never empty) and, when all of it went and the exchange moved to its
// head's phase, asks to wait for the socket to be readable; on its next, with nothing pending,
// it ends the wait.
func (c *h1Conn) writeThenWait(fd uintptr) bool {
	if len(c.pending) == 0 {
		return true
	}
	for len(c.pending) > 0 {
		n, err := syscall.Write(int(fd), c.pending)
		if n > 0 {
			c.pending = c.pending[n:]
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return true // the rest, or the error, is Conn.Write's
		}
	}
	c.headSet = c.phase.CompareAndSwap(phaseWrite, phaseHead)
	return !c.headSet
}
