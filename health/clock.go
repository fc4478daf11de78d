package health

import (
	"slices"
	"sync"
	"time"
)

// Clock is where the tracker reads the time, so that tests move time forward instead of sleeping.
type Clock interface {
	Now() time.Time
}

// TimerClock is a Clock that can also call a function later; the Checker schedules its rounds
// with it, so that tests run a round by advancing a ManualClock rather than by waiting.
type TimerClock interface {
	Clock
	// AfterFunc calls f once d has passed: in its own goroutine for SystemClock, from Advance or
	// Set for ManualClock.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened yet, and reports whether it did so.
	Stop() bool
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// ManualClock is a Clock that moves only when told to. It lives outside the test files so that
// other packages' tests can drive a Tracker (and anything else that takes a Clock) with it.
// It is safe for concurrent use.
type ManualClock struct {
	mu     sync.Mutex
	cond   *sync.Cond // signalled when a timer is added; uses mu
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c  *ManualClock
	at time.Time
	f  func()
}

// NewManualClock returns a clock stopped at start.
func NewManualClock(start time.Time) *ManualClock {
	c := &ManualClock{now: start}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward when d is negative) and runs, in the caller's
// goroutine and in time order, every timer that is then due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.fireLocked()
}

// Set moves the clock to t and runs every timer that is then due, like Advance.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.fireLocked()
}

// fireLocked takes the due timers off the list, unlocks, and calls them: a timer's function may
// use the clock.
func (c *ManualClock) fireLocked() {
	var due []*manualTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			keep = append(keep, t)
		} else {
			due = append(due, t)
		}
	}
	clear(c.timers[len(keep):])
	c.timers = keep
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *manualTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
}

// AfterFunc calls f from the Advance or Set that moves the clock to or past now+d. A d of zero or
// less is due at the next Advance or Set.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	c.cond.Broadcast()
	return t
}

// Pending is the number of timers not yet fired or stopped.
func (c *ManualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// BlockUntil waits until at least n timers are pending, so that a test advances the clock only
// after the code under test has scheduled what it should.
func (c *ManualClock) BlockUntil(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) < n {
		c.cond.Wait()
	}
}

func (t *manualTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	return true
}
