package errmap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"syscall"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/lifecycle"
)

// connCause is what the client may read of why a target could not be reached: a short phrase
// chosen by the error's type, never its text. The text of a dial or read error names the
// upstream's address ("dial tcp 10.0.0.7:8080: connect: connection refused"), a DNS error its
// host name, an exec error its binary's path: the gateway's internal topology, which a
// privacy-strict gateway does not tell its clients. The whole error goes to the gateway's log
// (server's "attempt failed" line) instead.
func connCause(err error) string {
	if c, ok := netCause(err); ok {
		return c
	}
	return "connection failed"
}

// Cause is connCause for other packages: what a client may read of why an upstream could not be
// reached (server words a failed health check with it).
func Cause(err error) string { return connCause(err) }

// netCause is connCause for the errors it recognises; ok is false for anything else.
func netCause(err error) (cause string, ok bool) {
	if err == nil {
		return "", false
	}
	if pe, ok := errors.AsType[*lifecycle.ProcessError](err); ok {
		if _, exited := errors.AsType[*exec.ExitError](pe.Err); exited || pe.Err == nil {
			return "the target's process exited", true
		}
		return "the target's process could not start", true
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return "name not resolved", true
	}
	if isTLS(err) {
		return "TLS handshake failed", true
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED):
		return "connection reset", true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.EHOSTDOWN):
		return "host unreachable", true
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.ENETDOWN):
		return "network unreachable", true
	case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, context.DeadlineExceeded):
		return "connection timed out", true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed):
		return "connection closed before the answer", true
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return "connection timed out", true
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return "connection failed", true
	}
	return "", false
}

// isTLS reports a failed TLS handshake: a peer that does not speak TLS, an alert, a certificate
// the gateway does not trust.
func isTLS(err error) bool {
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return true
	}
	if errors.Is(err, http.ErrSchemeMismatch) {
		// What net/http's client makes of the RecordHeaderError of a peer that answered the
		// hello in plain HTTP (TestHTTPSTargetOnPlainHTTPCause).
		return true
	}
	if _, ok := errors.AsType[tls.AlertError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	return false
}

// StreamMessage is what the client may read of a stream that failed (a *core.StreamError in
// err): the adapter's message, unless the failure underneath was the connection's, whose text
// names the upstream's address; the connection's cause, as connCause words it ("connection
// reset"), then stands in its place. The server's mid-stream error event should use it for the
// same reason Restore does.
func StreamMessage(err error) string {
	se, ok := errors.AsType[*core.StreamError](err)
	if !ok {
		return connCause(err)
	}
	if c, ok := netCause(se.Err); ok {
		return c
	}
	return se.Message
}

// LogText is what the gateway's log may say of a failed attempt: the error's text without any
// words or bytes the upstream sent (core.Quoting). An upstream's error message may repeat the
// prompt (a validation error quoting its input), and an answer the adapter could not read may be
// the answer itself; the client is given those, since they are its own, but a privacy-strict
// gateway's log holds no prompt or answer text (TestLogHoldsNoContent). Connection errors keep
// their whole text (the upstream's address is the operator's to read).
func LogText(err error) string {
	if err == nil {
		return ""
	}
	if q, ok := errors.AsType[core.Quoting](err); ok {
		return q.Unquoted()
	}
	return err.Error()
}
