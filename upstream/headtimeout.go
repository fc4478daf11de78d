package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// headTransport bounds net/http's exchanges (https://, proxied targets, a Transport template)
// from the request's sending to its answer's head by the target's timeout, as the sweeper does
// for the synchronous client's. net/http's ResponseHeaderTimeout counts only once the request
// is written: an upstream that reads nothing (a wedged or stopped server whose kernel accepted
// the connection) held a body larger than the socket buffers for as long as the client stayed
// (TestTimeoutBoundsTheWrite).
type headTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

var _ http.RoundTripper = (*headTransport)(nil)

// errHeadTimeout is the cause headTransport cancels an exchange with.
const errHeadTimeout = targetTimeout("no answer head within the target's timeout")

// targetTimeout is a wait the target's timeout ended (errHeadTimeout, errConnectTimeout): a
// net.Error that says Timeout, and not a dial's *net.OpError, so that the adapters'
// transportError makes it a *core.TimeoutError.
type targetTimeout string

func (e targetTimeout) Error() string { return string(e) }
func (targetTimeout) Timeout() bool   { return true }
func (targetTimeout) Temporary() bool { return false }
func (targetTimeout) Unwrap() error   { return os.ErrDeadlineExceeded }

func (t *headTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(t.timeout, func() { cancel(errHeadTimeout) })
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if !timer.Stop() && errors.Is(context.Cause(ctx), errHeadTimeout) {
		// The timeout ran out, whatever came back as it did: a body already cancelled is no answer.
		if err == nil {
			_ = resp.Body.Close()
		}
		return nil, errHeadTimeout
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		cancel(nil)
		return resp, nil
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// CloseIdleConnections is what http.Client.CloseIdleConnections calls.
func (t *headTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// cancelBody is an answer's body whose exchange's context ends when the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
