package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hayula/gateway/internal/h1"
)

// Serve answers on ln until ctx ends or ln fails, then drains in-flight requests for up to grace
// before closing them; it returns once the handlers of those it closed have ended (up to
// cutWait more), so that their request lines are logged before the gateway exits. It serves
// HTTP/1.1 with the gateway's own server (internal/h1: no goroutine per request;
// PERFORMANCE.md); a request it cannot parse gets an OpenAI-shaped error. log
// receives the HTTP server's own events (a panic that escaped h, a failed accept); nil
// discards them. opts change the HTTP server's defaults; the gateway passes WithTLS when it
// serves HTTPS.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration, log *slog.Logger, opts ...ServeOption) error {
	// A client that stops reading must not hold its stream, and the upstream connection and
	// target slot behind it, for ever: nginx's send_timeout, 60 s by default.
	so := serveOptions{sendTimeout: 60 * time.Second}
	for _, o := range opts {
		o(&so)
	}
	if so.certs != nil {
		now := so.tlsNow
		if now == nil {
			now = time.Now
		}
		ln = newTLSListener(ln, so.certs, now)
	}
	srv := &h1.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadBodyTimeout:   60 * time.Second,
		IdleTimeout:       120 * time.Second,
		SendTimeout:       so.sendTimeout,
		MaxHeaderBytes:    64 << 10,
		Reject:            rejectBody,
		Log:               log,
		Conns:             so.conns,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var serr error
	select {
	case serr = <-errc:
		// The listener failed (closed under it): the connections the server still holds, its
		// sweeper among them, would go on with nobody to stop them. They drain as on a stop.
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
		// The requests cut are cancelled; their handlers end, and log their request lines, once
		// the cancel has reached them. The gateway exits when Serve returns: wait for them, a
		// little, so that a request cut by the stop is in the log (TestStopPastGraceLogsCutRequests).
		wctx, wcancel := context.WithTimeout(context.Background(), cutWait)
		_ = srv.Shutdown(wctx) // after Close, it only waits for the connections to be gone
		wcancel()
	}
	if serr == nil {
		serr = <-errc
	}
	if serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

// cutWait bounds how long Serve waits, once its grace has passed and the requests still under way
// are cancelled, for their handlers to end.
const cutWait = 2 * time.Second

// ServeOption changes a default of Serve's HTTP server.
type ServeOption func(*serveOptions)

type serveOptions struct {
	sendTimeout time.Duration
	certs       *Certificates    // nil: plain HTTP
	tlsNow      func() time.Time // the TLS listener's clock; nil: time.Now
	conns       *ConnLimit       // nil: no cap on connections
}

// WithSendTimeout sets how long a write to a client may make no progress before the connection
// is closed and its request cancelled (h1.Server.SendTimeout); 60 s by default, zero for none.
func WithSendTimeout(d time.Duration) ServeOption {
	return func(o *serveOptions) { o.sendTimeout = d }
}

// rejectBody is the answer to a request the HTTP server could not parse, in OpenAI's shape.
func rejectBody(status int, code, msg string) (string, []byte) {
	typ := typeInvalidRequest
	if status >= 500 && status != http.StatusNotImplemented && status != http.StatusHTTPVersionNotSupported {
		typ = typeServer
	}
	return "application/json", append(errorBody(&apiError{Status: status, Type: typ, Code: code, Message: msg}), '\n')
}
