package httpwire

import (
	"sync"
	"sync/atomic"
)

// ScratchSize is a scratch buffer's size: a connection's write buffer's, in the server and in
// the upstream client.
const ScratchSize = 4 << 10

// Scratch is one buffer that whole messages are put together in for their one write, by the
// server (a whole answer) and by the upstream client (a whole POST): taken for the write and
// given back once it is done, so that it stays in the CPU's cache, where a connection's own
// write buffer, last written a message ago on that connection, has left it by then when many
// are busy. The first Take makes it; a Take that finds it taken gets none, and the caller uses
// its connection's buffer: nothing waits, nothing more is allocated. The zero value is ready.
type Scratch struct {
	buf  atomic.Pointer[[ScratchSize]byte]
	once sync.Once
}

// Take is the buffer, now the caller's until it gives it back; nil while another has it.
func (s *Scratch) Take() *[ScratchSize]byte {
	if b := s.buf.Swap(nil); b != nil {
		return b
	}
	var made *[ScratchSize]byte
	s.once.Do(func() { made = new([ScratchSize]byte) })
	return made
}

// Give puts back b, taken by Take, once what was put together in it is written (or failed):
// nothing of it is read again. A nil b (none was taken) is nothing to give.
func (s *Scratch) Give(b *[ScratchSize]byte) {
	if b != nil {
		s.buf.Store(b)
	}
}
