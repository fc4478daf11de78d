package upstream

import (
	"context"
	"time"
)

// The synchronous client's exchanges are bounded by one sweeper goroutine per transport rather
// than by a context.AfterFunc and read deadlines per exchange: registering a callback on the
// caller's context cost five allocations and a lock, and setting and clearing a deadline moves a
// runtime timer each time, on every request. An exchange instead puts its connection in
// h1Transport.live (under the pool's lock, in the same critical section that takes it from or
// gives it back to the pool) and moves through its phases with atomic stores; while anything is
// live the sweeper looks every sweepEvery, and interrupts a connection (its deadline moved into
// the past, as the canceler did) whose caller gave up or whose phase ran out of time.
//
// The price is precision: a cancellation is noticed at most one round late, and a phase's time
// limit is counted from the first visit that saw the phase (the head's from the first that saw
// the request being written, when one did: one limit covers both), so it ends between the limit
// and the limit plus two rounds after the phase began, never before. On a new connection the
// limit of the write and the head counts from the connect's start instead (watchLocked's since),
// so that one limit covers the connect too, and ends within two rounds of it. The body phase's
// limit (the idle timeout) is counted the same way from the first visit that saw the current
// read waiting. A
// round is one tick while up to sweepBatch exchanges are live; beyond that a tick visits a
// sweepRounds-th of them in turn (see sweepLocked), so a round is sweepRounds ticks, and an
// exchange moved by another's end (unwatchLocked fills the hole with the last) may wait two.

// sweepEvery is the sweeper's period.
const sweepEvery = 10 * time.Millisecond

// sweepBatch is how many live exchanges a tick visits at least, and sweepRounds how many ticks
// a round of visits to all of them may take beyond that. Every visit reads the exchange's
// context, phase and read count, a cache miss or three: with a thousand streams open that was
// 100,000 visits a second and 6% of the gateway's CPU (perf, 1,000 slow streams), for limits
// counted in seconds and cancellations that a stream's own write notices anyway.
const (
	sweepBatch  = 64
	sweepRounds = 10
)

// sweepQuiet is how many ticks the sweeper waits with nothing live before it ends; the next
// exchange starts another. Ending rather than parking means that a transport nobody uses any
// more holds no goroutine, whether or not it was closed.
const sweepQuiet = 100

// An exchange's phases, in order. The exchange moves itself forward with compare-and-swap; the
// sweeper moves it to one of the last two, after which the connection is good for nothing.
const (
	phaseWrite    int32 = iota // writing the request: bounded by the transport's timeout, with phaseHead
	phaseHead                  // awaiting the answer's head: bounded by the transport's timeout, counted from phaseWrite
	phaseBody                  // reading the body: each wait for bytes bounded by the transport's bodyIdle
	phaseDrain                 // reading a finished stream's tail: bounded by drainWait
	phaseCanceled              // interrupted: the caller's context is done
	phaseTimedOut              // interrupted: the head, a wait for the body's bytes or the tail took too long
)

// phaseNone is no phase: what a new exchange's sweeper has seen of it before its first visit.
const phaseNone int32 = -1

// pastDeadline interrupts a connection's blocked read or write.
var pastDeadline = time.Unix(1, 0)

// limit is how long an exchange may stay in phase ph; 0 means no limit.
func (t *h1Transport) limit(ph int32) time.Duration {
	switch ph {
	case phaseWrite, phaseHead:
		// One limit from the request's sending to its answer's head: an upstream that reads
		// nothing (a wedged or stopped server whose kernel accepted the connection) would
		// otherwise hold a body larger than the socket buffers for ever
		// (TestUpstreamThatNeverReadsTimesOut).
		return t.timeout
	case phaseBody:
		return t.bodyIdle
	case phaseDrain:
		return drainWait
	}
	return 0
}

// watchLocked makes c's exchange, on behalf of ctx, live. since is when the limit of its write
// and head began (a new connection's connect's start); zero for the sweeper's first visit.
// t.mu is held.
func (t *h1Transport) watchLocked(ctx context.Context, c *h1Conn, since time.Time) {
	c.ctx = ctx
	c.phase.Store(phaseWrite)
	c.seen = phaseNone
	c.seenAt = since
	c.headAt, c.idleCut = time.Time{}, false
	t.live = append(t.live, c)
	c.slot = len(t.live)
	if !t.sweeping {
		t.startSweeperLocked()
	}
}

// unwatchLocked ends c's exchange's watch and returns its last phase, which the sweeper can no
// longer change. t.mu is held.
func (t *h1Transport) unwatchLocked(c *h1Conn) int32 {
	if i := c.slot - 1; i >= 0 {
		last := len(t.live) - 1
		moved := t.live[last]
		t.live[i] = moved
		moved.slot = i + 1
		t.live[last] = nil
		t.live = t.live[:last]
		c.slot = 0
		c.ctx = nil
	}
	return c.phase.Load()
}

func (t *h1Transport) unwatch(c *h1Conn) int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unwatchLocked(c)
}

func (t *h1Transport) startSweeperLocked() {
	t.sweeping = true
	t.quit = make(chan struct{})
	var tick <-chan time.Time
	var stop func()
	if t.ticker != nil {
		tick, stop = t.ticker()
	} else {
		tk := time.NewTicker(sweepEvery)
		tick, stop = tk.C, tk.Stop
	}
	go t.sweep(tick, stop, t.quit)
}

// sweep runs the rounds until nothing has been live for sweepQuiet ticks, or until quit is
// closed (CloseIdleConnections) and nothing is live.
func (t *h1Transport) sweep(tick <-chan time.Time, stop func(), quit chan struct{}) {
	defer stop()
	quiet, quitting := 0, false
	for {
		var now time.Time
		select {
		case at := <-tick:
			if t.tickTime != nil {
				now = t.tickTime(at)
			} else {
				now = time.Now()
			}
		case <-quit:
			quit, quitting = nil, true
		}
		t.mu.Lock()
		if len(t.live) > 0 {
			quiet = 0
			if !now.IsZero() {
				t.sweepLocked(now)
			}
			t.mu.Unlock()
			continue
		}
		if quiet++; quitting || quiet >= sweepQuiet {
			t.sweeping = false
			t.quit = nil
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
}

// sweepLocked interrupts the live exchanges whose caller gave up or whose phase ran out of
// time at now. t.mu is held.
func (t *h1Transport) sweepLocked(now time.Time) {
	n := len(t.live)
	visits := max(sweepBatch, (n+sweepRounds-1)/sweepRounds)
	if visits >= n {
		visits, t.cursor = n, 0
	}
	for range visits {
		if t.cursor >= len(t.live) {
			t.cursor = 0
		}
		t.visitLocked(t.live[t.cursor], now)
		t.cursor++
	}
}

// visitLocked interrupts c's exchange if its caller gave up or its phase ran out of time at now.
// t.mu is held.
func (t *h1Transport) visitLocked(c *h1Conn, now time.Time) {
	ph := c.phase.Load()
	if ph >= phaseCanceled {
		return
	}
	if c.ctx.Err() != nil {
		// Whatever phase the exchange has moved to since, it reads this at its next step.
		c.phase.Store(phaseCanceled)
		_ = c.Conn.SetDeadline(pastDeadline)
		return
	}
	if ph == phaseWrite && c.seen == phaseWrite && answeredEarly(c, now) {
		return
	}
	if ph == phaseWrite && !c.headAt.IsZero() && t.bodyIdle > 0 && now.Sub(c.headAt) >= t.bodyIdle &&
		c.phase.CompareAndSwap(ph, phaseTimedOut) {
		// A 2xx head came while the request was being written, and no byte of its body can
		// have been read since: the write is still under way. net/http's Transport reads such a
		// head as it comes and bounds its body's reads by the idle timeout; so does this, from
		// the tick that saw the head, where the write held the exchange until the target's
		// timeout (TestEarlySuccessThenNothingIsIdle).
		c.idleCut = true
		_ = c.Conn.SetDeadline(pastDeadline)
		return
	}
	limit := t.limit(ph)
	if limit <= 0 {
		if ph == phaseWrite {
			c.seen = ph // for answeredEarly, at the next visit
		}
		return
	}
	if ph == phaseBody {
		// The body's limit is on each wait for bytes, not on the whole body: it counts only
		// while one read stays blocked from visit to visit. A caller that is not reading (its
		// own client is slow) is not the upstream's silence. The reader pays two uncontended
		// atomic adds per read for this; nothing else per read.
		n := c.reads.Load()
		if c.seen != ph || n&1 == 0 || n != c.seenReads {
			c.seen, c.seenAt, c.seenReads = ph, now, n
			return
		}
	} else if c.seen != ph {
		// The head's wait goes on counting from the visit that saw the request being written,
		// and a new connection's write and head from its connect's start (watchLocked).
		counting := ph == phaseHead && c.seen == phaseWrite ||
			c.seen == phaseNone && ph <= phaseHead && !c.seenAt.IsZero()
		c.seen = ph
		if !counting {
			c.seenAt = now
			return
		}
	}
	if now.Sub(c.seenAt) >= limit && c.phase.CompareAndSwap(ph, phaseTimedOut) {
		_ = c.Conn.SetDeadline(pastDeadline)
	}
}

// answeredEarly looks, without waiting, for an answer that refuses c's request while the
// request is still being written (a visit before this one saw the write under way too), and
// when there is one (or the server has ended the connection), stops the write: a server may
// refuse a request from its head (a 413 for a length it will not take, a 401 from a proxy that
// checks the key first) and then read nothing more, and a body larger than the socket buffers
// held the exchange until the target's timeout, where net/http's reader goroutine reads such an
// answer as it comes (TestEarlyAnswerStopsTheWrite). The exchange reads the answer (see
// exchange). It costs a system call in the sweeper, only for a write still under way from one
// visit to the next; a request that goes out in one write is never looked at.
//
// A 2xx that came instead is not a refusal: the write goes on, but the answer's head has come,
// and headAt notes the tick that saw it (its body's idle timeout counts from there; see
// visitLocked). It is looked for no more after that.
func answeredEarly(c *h1Conn, now time.Time) bool {
	if c.early.Load() || !c.headAt.IsZero() {
		return false
	}
	refused, answered := earlyAnswer(c.Conn)
	if answered {
		c.headAt = now
	}
	if !refused {
		return false
	}
	c.early.Store(true)
	_ = c.Conn.SetWriteDeadline(pastDeadline)
	return true
}

// earlyVerdict judges b, the first bytes of what the server sent while its request was being
// written, past whole informational heads (a 100 Continue a server may send unasked, a 103 Early
// Hints), as readResponse reads past them: refused when the first final status line is no status
// line or one of 300 or more (earlyRefusal), or when more informational heads come than
// readResponse takes; sure is false when b ends before that line's status can be told. Looking
// only at the first line, a 1xx followed by a refusal let the write run out the target's timeout
// (TestEarlyRefusalAfterInformational).
func earlyVerdict(b []byte) (refused, sure bool) {
	for range max1xx + 1 {
		if len(b) < len("HTTP/1.1 200") {
			return false, false
		}
		if earlyRefusal(b[:len("HTTP/1.1 200")]) {
			return true, true
		}
		if b[9] != '1' || string(b[9:12]) == "101" {
			return false, true // a final status below 300
		}
		end := headEnd(b)
		if end < 0 {
			return false, false // the informational head is not whole yet
		}
		b = b[end:]
	}
	return true, true
}

// headEnd is where the head that b begins with ends, past its empty line (CRLF or a bare LF, as
// heads.read takes either); -1 when b does not hold it whole.
func headEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		switch {
		case i+1 < len(b) && b[i+1] == '\n':
			return i + 2
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			return i + 3
		}
	}
	return -1
}

// earlyRefusal reports whether b, the first bytes of a status line that came while its request
// was being written, is no status line, or one of a status of 300 or more.
func earlyRefusal(b []byte) bool {
	if len(b) < len("HTTP/1.1 200") || string(b[:len("HTTP/1.")]) != "HTTP/1." || b[8] != ' ' {
		return true
	}
	code := 0
	for _, d := range b[9:12] {
		if d < '0' || d > '9' {
			return true
		}
		code = 10*code + int(d-'0')
	}
	return code >= 300
}
