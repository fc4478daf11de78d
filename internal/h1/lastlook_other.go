//go:build !unix

package h1

// lastLook does not look where the socket cannot be read without waiting: a stopped head that
// has not been read whole ends (see the unix lastLook).
func (c *conn) lastLook([]byte) (int, error) { return 0, errHeadStopped }
