//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package upstream

import "net"

// unsolicited cannot peek at a socket here: a pooled connection is taken as it is, and a stale
// one is still replaced when the request's write fails (RoundTrip).
func unsolicited(net.Conn) bool { return false }

// peerEnded cannot tell here why a write failed: an answer the server sent before it ended the
// connection is not read, and the write's error stands.
func peerEnded(error) bool { return false }

// earlyAnswer cannot peek at a socket here: no early answer is seen, a request's write goes on
// until it ends, fails or runs out of the target's timeout, whatever the server answered
// meanwhile, and a head that came while it was being written is read once the write ends.
func earlyAnswer(net.Conn) (refused, answered bool) { return false, false }

// writeWhole writes b, a whole request, on c. There is no waiting for its answer here (see the
// unix version): the answer's first read waits.
func (c *h1Conn) writeWhole(tc *net.TCPConn, b []byte) error {
	_, err := tc.Write(b)
	return err
}
