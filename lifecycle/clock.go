package lifecycle

import "time"

// Clock is the source of time for idle_stop, load_timeout, restart backoff and the stop grace. Tests pass a fake
// clock and advance it instead of sleeping. It also satisfies backoff.Clock.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (or, for a fake clock, from Advance) once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened yet, and reports whether it did so.
	Stop() bool
}

// WallClock is the real time.
type WallClock struct{}

// Now is time.Now.
func (WallClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (WallClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
