package server

import (
	"github.com/hayula/gateway/internal/h1"
	"github.com/hayula/gateway/metrics"
)

// ConnLimit caps the client connections the gateway has open at once (max_connections) and
// counts what the cap did: at the cap the gateway takes no new connection until one closes, and
// closes idle ones, the oldest idle first, to make room (then ones stalled in a request head).
// One lives as long as the process: a reload Sets the cap from the file it applies, and
// connections open over a lowered cap stay open. See h1.ConnLimit.
type ConnLimit = h1.ConnLimit

// NewConnLimit caps connections at n (config.Config.MaxConnections); 0 means no cap.
func NewConnLimit(n int) *ConnLimit { return h1.NewConnLimit(n) }

// WithConnLimit makes Serve's HTTP server keep its connections under l's cap, and count them in l.
func WithConnLimit(l *ConnLimit) ServeOption {
	return func(o *serveOptions) { o.conns = l }
}

// writeConns writes the connection families from l; nil writes none.
func writeConns(w *metrics.Writer, l *ConnLimit) {
	if l == nil {
		return
	}
	st := l.Stats()
	w.Family("hayula_connections_open", "gauge", "Client connections open now.")
	w.Sample("hayula_connections_open", uint64(max(st.Open, 0)))
	w.Family("hayula_connections_max", "gauge", "The cap on client connections open at once (max_connections); 0 means none.")
	w.Sample("hayula_connections_max", uint64(l.Max()))
	w.Family("hayula_connections_waited_total", "counter", "Client connections that came at the cap and waited for room before they were served.")
	w.Sample("hayula_connections_waited_total", st.Waited)
	w.Family("hayula_connections_idle_closed_total", "counter", "Idle client connections, and ones stalled in a request head, closed to make room for a new one: at the cap, or when the process was out of file descriptors.")
	w.Sample("hayula_connections_idle_closed_total", st.IdleClosed)
	w.Family("hayula_accept_errors_total", "counter", "Accepts of client connections that failed (out of file descriptors and the like) and were retried after a pause.")
	w.Sample("hayula_accept_errors_total", st.AcceptErrors)
}
