package core

import (
	"fmt"
	"net/http"
	"time"
)

// StatusError is an upstream answer with a non-2xx status. Message, Type, Code and Param come from
// the upstream's OpenAI-shaped error body when it had one.
type StatusError struct {
	Target     string
	Status     int
	Message    string
	Type       string
	Code       string
	Param      string
	RetryAfter time.Duration // from the Retry-After header; 0 when absent
	Header     http.Header   // the upstream's response headers
	Body       []byte        // the raw body, capped
}

func (e *StatusError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s: status %d: %s", e.Target, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: status %d", e.Target, e.Status)
}

// ConnError is a failure to reach the upstream, or a connection dropped before any answer.
type ConnError struct {
	Target string
	Err    error
}

func (e *ConnError) Error() string { return e.Target + ": connection: " + e.Err.Error() }
func (e *ConnError) Unwrap() error { return e.Err }

// TimeoutError is no response headers within the target's timeout.
type TimeoutError struct {
	Target string
	After  time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no response within %s", e.Target, e.After)
}

// StreamError is a failure after the response started: a broken stream or an error event.
type StreamError struct {
	Target  string
	Message string
	Err     error
}

func (e *StreamError) Error() string { return e.Target + ": stream: " + e.Message }
func (e *StreamError) Unwrap() error { return e.Err }

// ProtocolError is an upstream answer the adapter could not understand.
type ProtocolError struct {
	Target string
	Err    error
}

func (e *ProtocolError) Error() string { return e.Target + ": bad upstream answer: " + e.Err.Error() }
func (e *ProtocolError) Unwrap() error { return e.Err }
