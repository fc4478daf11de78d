//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package upstream

import "net"

// unsolicited cannot peek at a socket here: a pooled connection is taken as it is, and a stale
// one is still replaced when the request's write or the answer's first read fails (RoundTrip).
func unsolicited(net.Conn) bool { return false }
