package lifecycle

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrClosed is returned by Ensure and Start once Close has begun.
var ErrClosed = errors.New("lifecycle: manager closed")

// ErrStopping is returned by Ensure for a target whose process is not ready once Drain has been
// called: the gateway is stopping, and no process starts any more.
var ErrStopping = errors.New("lifecycle: the gateway is stopping; no model process starts")

// ErrRemoved is returned by Ensure for a target a Reload removed, to a call that waited for its
// process then or came after (an attempt of the replaced configuration): it will not start.
var ErrRemoved = errors.New("lifecycle: the target was removed by a reload; its process does not start")

// UnknownTargetError is Ensure on a name that has no Spec; the server should call Manages first.
type UnknownTargetError struct {
	Name string
}

func (e *UnknownTargetError) Error() string {
	return "lifecycle: " + e.Name + " is not a managed target"
}

// ProcessError is a target process that could not be started or that exited on its own before it
// was asked to stop. Err is the exec error or the *exec.ExitError (nil for a clean exit 0).
type ProcessError struct {
	Target string
	Err    error
	// Stderr holds the last lines the process wrote to stderr, oldest first.
	Stderr []string
}

func (e *ProcessError) Error() string {
	var b strings.Builder
	b.WriteString(e.Target)
	b.WriteString(": process ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("exited")
	}
	if n := len(e.Stderr); n > 0 {
		b.WriteString(": ")
		b.WriteString(e.Stderr[n-1])
	}
	return b.String()
}

func (e *ProcessError) Unwrap() error { return e.Err }

// LoadTimeoutError is a target that did not become healthy within its load_timeout (or, for a
// request, whose group had no room within it). Last is the most recent start failure, if any.
type LoadTimeoutError struct {
	Target string
	After  time.Duration
	Last   error
	// Group names the target's group when the request waited its whole load_timeout for a slot
	// there (every one held by a member in use, waited for, pinned or loading) and no process of
	// the target was started for it; "" when one was, or the target has no group.
	Group string
}

func (e *LoadTimeoutError) Error() string {
	s := fmt.Sprintf("%s: not healthy within load_timeout %s", e.Target, e.After)
	if e.Group != "" {
		s = fmt.Sprintf("%s: no slot of group %s came free within load_timeout %s", e.Target, e.Group, e.After)
	}
	if e.Last != nil {
		s += " (last: " + e.Last.Error() + ")"
	}
	return s
}

func (e *LoadTimeoutError) Unwrap() error { return e.Last }
