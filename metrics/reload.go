package metrics

import (
	"sync/atomic"
	"time"
)

// Reloads counts configuration reloads. Unlike a Set, which is built for one configuration and
// replaced with it, one Reloads lives as long as the process. Its zero value is ready; a nil
// *Reloads counts nothing and writes nothing.
type Reloads struct {
	ok, failed atomic.Uint64
	lastOK     atomic.Int64 // Unix nanoseconds of the last successful reload; 0 = none yet
}

// Done counts one reload: applied when ok, else refused with the running configuration kept.
func (r *Reloads) Done(ok bool, at time.Time) {
	if r == nil {
		return
	}
	if !ok {
		r.failed.Add(1)
		return
	}
	r.ok.Add(1)
	r.lastOK.Store(at.UnixNano())
}

// Write writes the reload families. The timestamp is that of the last successful reload, or the
// start given until one happened (what Prometheus's own config_last_reload_success_timestamp
// means: when the configuration in use was loaded).
func (r *Reloads) Write(w *Writer, started time.Time) {
	if r == nil {
		return
	}
	w.Family("hayula_config_reloads_total", "counter", "Configuration reloads (SIGHUP), by result: ok (applied) or failed (the running configuration kept).")
	w.Sample("hayula_config_reloads_total", r.ok.Load(), "result", "ok")
	w.Sample("hayula_config_reloads_total", r.failed.Load(), "result", "failed")
	last := r.lastOK.Load()
	if last == 0 {
		last = started.UnixNano()
	}
	w.Family("hayula_config_last_reload_success_timestamp_seconds", "gauge", "When the configuration in use was loaded, at start or by the last successful reload, since the Unix epoch, in seconds.")
	w.Float("hayula_config_last_reload_success_timestamp_seconds", float64(last)/1e9)
}
