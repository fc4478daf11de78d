package h1

import (
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ConnLimit caps how many client connections a Server has open at once (nginx's
// worker_connections, Envoy's downstream connection limit), and counts what the cap and the
// accept loop did. At the cap the server takes no new connection from its listener (they wait in
// the kernel's queue) until one of its own closes, and closes its idle connections, the oldest
// idle first, to make room: a client that sends a request is served ahead of one that holds a
// connection and sends nothing (a flood of silent connections, or idle keep-alive ones). With
// none idle, it closes one stalled in a request's head past headGrace (slowloris).
//
// One ConnLimit serves one Server for the life of the process: Set changes the cap while it
// serves (a reload); connections already open over a lowered cap stay open. The zero value
// has no cap and counts; a nil *ConnLimit has no cap and counts nothing.
type ConnLimit struct {
	max atomic.Int64 // 0: no cap

	mu      sync.Mutex
	changed chan struct{} // closed by Set; made on first use

	open       atomic.Int64  // connections open now
	waited     atomic.Uint64 // connections accepted at the cap, which waited for room
	idleClosed atomic.Uint64 // idle connections closed to make room
	acceptErrs atomic.Uint64 // accepts that failed (out of file descriptors and the like)
}

// NewConnLimit caps connections at n; 0 means no cap.
func NewConnLimit(n int) *ConnLimit {
	l := new(ConnLimit)
	l.Set(n)
	return l
}

// Set makes n the cap (0: none). A raised cap lets a waiting connection in at once; a lowered
// one closes nothing that is open: the next connections wait, and idle ones are closed to make
// room, until fewer than n are open.
func (l *ConnLimit) Set(n int) {
	l.max.Store(int64(max(n, 0)))
	l.mu.Lock()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	l.mu.Unlock()
}

// Max is the cap; 0 means none.
func (l *ConnLimit) Max() int {
	if l == nil {
		return 0
	}
	return int(l.max.Load())
}

// changedChan is closed by the next Set.
func (l *ConnLimit) changedChan() <-chan struct{} {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// ConnStats is what a ConnLimit counted.
type ConnStats struct {
	// Open is how many connections are open now.
	Open int64
	// Waited counts the connections accepted at the cap, which waited for room before they
	// were served.
	Waited uint64
	// IdleClosed counts the idle connections, and those stalled in a request head past
	// headGrace, closed to make room: at the cap, or when an accept failed for want of file
	// descriptors.
	IdleClosed uint64
	// AcceptErrors counts the accepts that failed and were retried after a pause (EMFILE,
	// ENFILE and the like).
	AcceptErrors uint64
}

// Stats reads the counts.
func (l *ConnLimit) Stats() ConnStats {
	if l == nil {
		return ConnStats{}
	}
	return ConnStats{Open: l.open.Load(), Waited: l.waited.Load(), IdleClosed: l.idleClosed.Load(),
		AcceptErrors: l.acceptErrs.Load()}
}

// counter names one of the counts, for count.
type counter uint8

const (
	countWaited counter = iota
	countIdleClosed
	countAcceptErr
)

func (l *ConnLimit) count(c counter) {
	if l == nil {
		return
	}
	switch c {
	case countWaited:
		l.waited.Add(1)
	case countIdleClosed:
		l.idleClosed.Add(1)
	case countAcceptErr:
		l.acceptErrs.Add(1)
	}
}

func (l *ConnLimit) setOpen(n int) {
	if l != nil {
		l.open.Store(int64(n))
	}
}

// outOfFiles reports whether an accept failed for want of file descriptors, the process's
// (EMFILE) or the system's (ENFILE): closing a connection of the server's own frees one.
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// admit tracks c, a connection just accepted, once there is room for it under the cap: at the
// cap it closes the oldest idle connection and waits for it (or any other) to end, or for the
// cap to be raised. It reports false when the server shuts down meanwhile.
func (s *Server) admit(c *conn) bool {
	waited := false
	for {
		ch := s.Conns.changedChan()
		s.mu.Lock()
		if s.inShutdown.Load() {
			s.mu.Unlock()
			return false
		}
		if n := s.Conns.Max(); n == 0 || len(s.conns) < n {
			if s.conns == nil {
				s.conns = map[*conn]struct{}{}
			}
			c.idleAt.Store(s.now())
			s.conns[c] = struct{}{}
			s.Conns.setOpen(len(s.conns))
			s.mu.Unlock()
			return true
		}
		// Wanted before the look for an idle connection, not after: a connection that goes idle
		// once the look has passed it over then sees roomWanted (wentIdle's Store of its state
		// comes before its Load of roomWanted, as this Store comes before the look's Loads) and
		// wakes this loop, which otherwise waited for a connection's end
		// (TestConnLimitIdleDuringLookWakesAcceptLoop).
		if s.room == nil {
			s.room = make(chan struct{})
			s.roomWanted.Store(true)
		}
		room := s.room
		later := s.closeOldestIdle()
		if s.lookedForIdle != nil {
			s.lookedForIdle()
		}
		s.mu.Unlock()
		if !waited {
			waited = true
			s.Conns.count(countWaited)
			if s.waitingRoom != nil {
				s.waitingRoom()
			}
		}
		// A head that stalls passes its grace with nothing to wake this loop: it looks again then.
		var grace <-chan time.Time
		var t *time.Timer
		if later > 0 {
			t = time.NewTimer(later)
			grace = t.C
		}
		stopped := false
		select {
		case <-room:
		case <-ch:
		case <-grace:
		case <-s.doneChan():
			stopped = true
		}
		if t != nil {
			t.Stop()
		}
		if stopped {
			return false
		}
	}
}

// headGrace is how long a connection may wait on the socket for the rest of a request's head
// before, at the cap, it may be closed to make room (stateHead). A client's head comes in one
// write, which a network cuts into packets that follow each other within a round trip; one that
// is still short a second after the gateway began waiting for its rest is sent by a client that
// stalls, which the ReadHeaderTimeout (10 s) would otherwise let hold its slot until then.
const headGrace = time.Second

// headLeft is how much of headGrace a head whose wait on the socket began at at has left at now
// (both s.now's): 0 or less once it has stalled. The cap (closeOldestIdle) and Shutdown
// (closeIdle) judge a stalled head by it alike.
func headLeft(at, now int64) time.Duration { return time.Duration(at + int64(headGrace) - now) }

// closeOldestIdle closes the connection that has waited longest for a request, if one waits,
// to make room for a new one; its goroutine ends it, and untrackConn says so (roomMade). When
// none waits for a request, it closes the one that has waited longest for the rest of a head,
// once that wait has passed headGrace (stateHead): a client with a request under way is never
// closed, and one that sends a head is let finish it first; later is how long until the first of
// those still in their grace passes it (0: none is), for the accept loop to look again then.
// s.mu is held. The socket is closed on a goroutine of its own: a TLS connection's Close writes
// a close_notify alert first, which waits up to 5 s for a client that stopped reading, and
// neither the accept loop nor s.mu may wait for that. A connection stalled in its head is
// stopped rather than closed (stopHead): its goroutine closes it, or serves its head if that came
// whole meanwhile (keepHead). One such close is under way at a time (making).
func (s *Server) closeOldestIdle() (later time.Duration) {
	if s.making > 0 {
		return 0
	}
	var oldest, stalled *conn
	var at, headAt int64
	begun := false // a head is being read that has not yet waited on the socket (headAt 0)
	for c := range s.conns {
		switch c.state.Load() {
		case stateIdle:
			if t := c.idleAt.Load(); oldest == nil || t < at {
				oldest, at = c, t
			}
		case stateHead:
			t := c.headAt.Load()
			begun = begun || t == 0
			if t != 0 && (stalled == nil || t < headAt) {
				stalled, headAt = c, t
			}
		}
	}
	from := int32(stateIdle)
	if oldest == nil {
		if stalled == nil {
			if begun {
				// Its head may stall from its next read on, which wakes no accept loop: without a
				// look again once its grace could have passed, the new connection waited for the
				// stalled one's ReadHeaderTimeout (TestConnLimitLooksAgainAtHeadBegun).
				return headGrace
			}
			return 0
		}
		if wait := headLeft(headAt, s.now()); wait > 0 {
			return wait
		}
		oldest, from = stalled, stateHead
	}
	if !oldest.state.CompareAndSwap(from, stateClosing) {
		return 0 // it moved on meanwhile: its going idle or ending wakes the accept loop
	}
	oldest.madeRoom = true
	s.making++
	if from == stateHead {
		// Stopped, not closed: a head that came whole meanwhile is served, and the connection
		// taken back (keepHead); one that did not is counted and closed by its goroutine.
		oldest.stopHead()
		return 0
	}
	s.Conns.count(countIdleClosed)
	go oldest.nc.Close()
	return 0
}

// keepHead decides for a connection whose head stopHead stopped (closeOldestIdle, or Shutdown's
// closeIdle) once its goroutine's read of that head has ended: a head that came whole is a
// request in the server's hands, which the client may not send again (a chat POST is not
// idempotent), so it is served (perr nil, or a parseError, answered by reject) and the
// connection taken back from the stop, which makes its room with another, or waits for this one
// under Shutdown (TestStoppedHeadThatCameWholeIsServed); it was dropped unanswered. A head that
// is not whole reports false, and the connection ends, counted then when it was closed to make
// room.
func (s *Server) keepHead(c *conn, perr error) bool {
	var pe *parseError
	whole := perr == nil || errors.As(perr, &pe)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !whole || !c.state.CompareAndSwap(stateClosing, stateActive) {
		if c.madeRoom {
			s.Conns.count(countIdleClosed)
		}
		return false
	}
	if c.madeRoom {
		c.madeRoom = false
		s.making--
		s.roomMade() // the accept loop looks again
	}
	return true
}

// roomMade wakes the accept loops waiting for room. s.mu is held.
func (s *Server) roomMade() {
	if s.room != nil {
		close(s.room)
		s.room = nil
		s.roomWanted.Store(false)
	}
}

// wentIdle is called by a connection that has begun to wait for its next request: an accept
// loop waiting for room may close it for the new connection it holds.
func (s *Server) wentIdle() {
	if !s.roomWanted.Load() {
		return
	}
	s.mu.Lock()
	s.roomMade()
	s.mu.Unlock()
}
