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
	RetryAfter time.Duration // from the Retry-After header (a 429 without one: from its body's relayed rate-limit headers); 0 when absent
	// LimitReset is a 429's wait by its x-ratelimit-reset-* headers (OpenAI's, Groq's), read only
	// when RetryAfter is 0: the reset of the per-minute limit it ran out of. errmap takes it for
	// the Retry-After of a 429 that is not a bill or a daily cap; 0 when absent.
	LimitReset time.Duration
	Header     http.Header // the upstream's response headers
	Body       []byte      // the raw body, capped
	// Coding is the body's Content-Encoding (br…) when it came coded and was not decoded (a
	// coding other than gzip, x-gzip or deflate, or a body that does not decode): Body is then
	// empty and Message, Type, Code and Param say nothing, and the client is told the body was
	// coded. "" for a body as it was, or decoded (Body then holds the decoded bytes).
	Coding string
}

// Unquoted is the error without the upstream's words: its status, and its type and code when
// each is a plain identifier (context_length_exceeded), which a message echoing the prompt is not.
func (e *StatusError) Unquoted() string {
	s := fmt.Sprintf("%s: status %d", e.Target, e.Status)
	if identifier(e.Type) {
		s += " type " + e.Type
	}
	if identifier(e.Code) {
		s += " code " + e.Code
	}
	if n := len(e.Message); n > 0 {
		s += fmt.Sprintf(" (message of %d bytes, not logged)", n)
	}
	if e.Coding != "" {
		s += fmt.Sprintf(" (body in Content-Encoding %q, not decoded)", e.Coding)
	}
	return s
}

// PlainCode is the error's code when it is a plain identifier (insufficient_quota), else "".
func (e *StatusError) PlainCode() string {
	if identifier(e.Code) {
		return e.Code
	}
	return ""
}

// identifier reports whether s is a short word of letters, digits, '_', '-' and '.', as error
// types and codes are: nothing a prompt could be repeated in at length.
func identifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
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

// TimeoutError is no response headers within the target's timeout or, Idle, no bytes of the
// answer's body for its idle timeout once the head had come.
type TimeoutError struct {
	Target string
	After  time.Duration
	Idle   bool
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no response within %s", e.Target, e.After)
}

// StreamError is a failure after the response started: a broken stream or an error event.
type StreamError struct {
	Target  string
	Message string
	Err     error
	// Quoted is how many of Message's last bytes are the upstream's words (its error event's
	// message, the start of a line it could not read), which the log leaves out (Unquoted); 0
	// when none are.
	Quoted int
}

func (e *StreamError) Error() string { return e.Target + ": stream: " + e.Message }

// Unquoted is the error without the upstream's words.
func (e *StreamError) Unquoted() string {
	switch {
	case e.Quoted > 0 && e.Quoted <= len(e.Message):
		return fmt.Sprintf("%s: stream: %s[the upstream's words: %d bytes, not logged]",
			e.Target, e.Message[:len(e.Message)-e.Quoted], e.Quoted)
	case e.Err != nil:
		if q, ok := e.Err.(Quoting); ok {
			return e.Target + ": stream: " + q.Unquoted()
		}
	}
	return e.Error()
}
func (e *StreamError) Unwrap() error { return e.Err }

// ProtocolError is an upstream answer the adapter could not understand.
type ProtocolError struct {
	Target string
	Err    error
}

func (e *ProtocolError) Error() string { return e.Target + ": bad upstream answer: " + e.Err.Error() }
func (e *ProtocolError) Unwrap() error { return e.Err }

// Unquoted is the error without the upstream's words or bytes, when Err quotes any.
func (e *ProtocolError) Unquoted() string {
	if q, ok := e.Err.(Quoting); ok {
		return e.Target + ": bad upstream answer: " + q.Unquoted()
	}
	return e.Error()
}

// UnmetError is a 2xx answer that does not give what a valid request asked for, where another
// target might: an embeddings answer whose vectors are not of the request's dimensions (a server
// that ignores the field, or a model narrower than asked), or not one per input (a server that
// embeds a batch's first input alone); or an upstream's refusal that says its
// model lacks what the request needs (Ollama's 400 "… does not support tools"). The failure is
// that endpoint's, not the request's: errmap classes it endpoint, so the chain moves on, as for a
// 404, and the target's health is not blamed. Err is what the client gets when nothing else
// answers: a 400 naming the parameter, the upstream's own, or a 502 saying what the answer lacked.
type UnmetError struct {
	Err *StatusError
}

func (e *UnmetError) Error() string    { return e.Err.Error() }
func (e *UnmetError) Unwrap() error    { return e.Err }
func (e *UnmetError) Unquoted() string { return e.Err.Unquoted() }

// Quoting is implemented by an error whose text may quote what an upstream sent: its error
// message, or the start of an answer the adapter could not read. Those words may repeat the
// prompt, or be the answer, and the client is given them (they are its own); the gateway's log
// is not. Unquoted is the error's text without them (errmap.LogText).
type Quoting interface {
	error
	Unquoted() string
}

var (
	_ Quoting = (*StatusError)(nil)
	_ Quoting = (*StreamError)(nil)
	_ Quoting = (*ProtocolError)(nil)
	_ Quoting = (*UnmetError)(nil)
)
