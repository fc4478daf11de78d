package main

import (
	"bytes"
	"cmp"
	"context"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/lifecycle"
	"github.com/hayula/gateway/metrics"
	"github.com/hayula/gateway/server"
)

// shutdownGrace bounds how long requests in flight may run on once the gateway is told to stop.
// A reload has no such bound: the server it replaced serves its requests to their end
// (server.Live.Replace).
const shutdownGrace = 10 * time.Second

// reloader applies the edited configuration file to a running gateway (SIGHUP): the same file,
// environment and --listen as at start, through the same config.Load.
type reloader struct {
	path   string // --config
	listen string // --listen; "" = the file's
	getenv func(string) string
	log    *slog.Logger
	// hup has room for one: signal.Notify does not block on a full channel, so signals that
	// come during a reload queue one more reload, not one each.
	hup chan os.Signal

	// Set by serve once it listens.
	live    *server.Live
	addr    net.Addr // where the listener is bound
	running string   // the listen address in use: a reload cannot move the listener
	// certs is the certificate served over HTTPS, which a reload replaces; nil when the gateway
	// serves plain HTTP, which only a restart changes.
	certs   *server.Certificates
	reloads *metrics.Reloads
	// conns is the cap on client connections the HTTP server keeps, which a reload sets to the
	// file's max_connections.
	conns *server.ConnLimit

	warnedListen string // the changed listen already warned about
	afterBuild   func() // tests: runs once a reload has built, where the gateway may begin to stop

	// retiring are the servers reloads replaced that still serve requests: each is closed when
	// its last request ends, or when the gateway stops (closeRetired), whichever comes first.
	retiring sync.WaitGroup
	mu       sync.Mutex
	stopped  chan struct{}                // closed by closeRetired; made on first use
	held     map[*server.Retired]struct{} // the replaced servers not yet closed; under mu
}

// loop reloads once per value on hup until ctx ends, when the gateway begins to stop; from then
// until served is closed (the HTTP server has stopped) a SIGHUP is logged and ignored: a reload
// then would build a server, and start its pinned processes, only to close them.
func (r *reloader) loop(ctx context.Context, served <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			r.ignoreUntil(served)
			return
		case <-served: // Serve failed
			return
		case <-r.hup:
		}
		// select picks at random when both are ready.
		if ctx.Err() != nil {
			r.log.Info("reload: SIGHUP ignored: the gateway is stopping")
			r.ignoreUntil(served)
			return
		}
		r.reload(ctx)
	}
}

// ignoreUntil logs the SIGHUPs that come until done is closed.
func (r *reloader) ignoreUntil(done <-chan struct{}) {
	for {
		select {
		case <-r.hup:
			r.log.Info("reload: SIGHUP ignored: the gateway is stopping")
		case <-done:
			return
		}
	}
}

// reload loads the file again and, if it loads and builds, puts the server it builds in the
// running one's place; the replaced server finishes its requests in flight, however long they run,
// and is closed after the last (retire). On any error the running configuration goes on serving,
// untouched. It reports whether the file was applied.
func (r *reloader) reload(ctx context.Context) bool {
	start := time.Now()
	r.log.Info("reloading the configuration", "file", r.path)
	next, err := r.build(ctx)
	if r.afterBuild != nil {
		r.afterBuild()
	}
	if ctx.Err() != nil {
		// The gateway began to stop while this reload built: what it built is released, and the
		// running configuration serves out the shutdown grace.
		if next != nil {
			r.discard(next)
		}
		r.log.Warn("reload abandoned: the gateway is stopping", "file", r.path)
		return false
	}
	if err != nil {
		for line := range strings.SplitSeq(err.Error(), "\n") {
			r.log.Error("reload: " + line)
		}
		r.log.Error("reload failed: still serving the previous configuration", "file", r.path)
		r.reloads.Done(false, time.Now())
		return false
	}
	r.reloads.Done(true, time.Now())
	cfg := next.Config()
	r.renewCertificate(cfg)
	r.setMaxConnections(cfg)
	r.log.Info("configuration reloaded", "file", r.path, "routes", len(cfg.Routes), "targets", len(cfg.Targets),
		"keys", len(cfg.Keys), "managed", len(cfg.Lifecycle.Specs), "took", time.Since(start).Round(time.Millisecond))
	r.retire(r.live.Replace(next))
	return true
}

// retire closes old once its last request has ended. A bound would close its upstream pools and
// processes under a stream that an LLM may well run for minutes; the gateway's stop is what bounds
// it (closeRetired, after the shutdown grace). The reload does not wait for it: a later SIGHUP is
// not held behind a long stream.
func (r *reloader) retire(old *server.Retired) {
	select {
	case <-old.Drained():
		old.Close()
		return
	default:
	}
	r.log.Info("reload: the previous configuration serves its requests in flight to their end",
		"in_flight", old.InFlight())
	stopped := r.stopCh()
	r.mu.Lock()
	if r.held == nil {
		r.held = map[*server.Retired]struct{}{}
	}
	r.held[old] = struct{}{}
	r.mu.Unlock()
	r.retiring.Go(func() {
		defer func() {
			r.mu.Lock()
			delete(r.held, old)
			r.mu.Unlock()
		}()
		select {
		case <-old.Drained():
			old.Close()
			r.log.Info("reload: the previous configuration's last request has ended; closed it")
		case <-stopped:
			if left := old.Close(); left > 0 {
				r.log.Warn("stopping: closing a previous configuration under its requests in flight", "in_flight", left)
			}
		}
	})
}

// drainRetired is the first step of the stop (lifecycle.Manager.Drain) for the processes of the
// replaced servers still serving requests, as serve takes it for the current server's: a request
// of theirs that waits for a process to start is answered at once, not held through the shutdown
// grace and cut off (TestStopDrainsReplacedConfigurationsLoads). A replaced server shares its
// processes with its successor unless that one runs none, or its own.
func (r *reloader) drainRetired() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for old := range r.held {
		if p := old.Server().Processes(); p != nil {
			p.Drain()
		}
	}
}

// discard releases a server a reload built but did not apply. One that runs processes of its own
// stops them now; one that took over the running server's (server.Options.Previous) is closed
// only when the gateway has stopped (closeRetired): its processes serve the requests the running
// server finishes meanwhile.
func (r *reloader) discard(next *server.Server) {
	if p := next.Processes(); p == nil || p != r.live.Server().Processes() {
		next.Close()
		return
	}
	stopped := r.stopCh()
	r.retiring.Go(func() {
		<-stopped
		next.Close()
	})
}

func (r *reloader) stopCh() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped == nil {
		r.stopped = make(chan struct{})
	}
	return r.stopped
}

// closeRetired closes the replaced servers still serving requests and waits until they are closed.
// serve calls it once its HTTP server has stopped (the shutdown grace has passed, and the
// requests still under way were cancelled) and no reload runs any more.
func (r *reloader) closeRetired() {
	ch := r.stopCh()
	r.mu.Lock()
	select {
	case <-ch:
	default:
		close(ch)
	}
	r.mu.Unlock()
	r.retiring.Wait()
}

// build loads the file and builds and starts its server, taking over the running one's model
// processes; nothing is applied yet.
func (r *reloader) build(ctx context.Context) (*server.Server, error) {
	cfg, err := config.Load(r.path, r.getenv)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		// Before server.New, which takes over the running server's processes and starts the
		// new pinned ones.
		return nil, err
	}
	if r.listen == "" {
		switch cfg.Listen {
		case r.running:
			// Back to the listen in use: a later change is a new one, and warned about again
			// (TestReloadWarnsListenChangeAgain).
			r.warnedListen = ""
		case r.warnedListen:
		default:
			r.warnedListen = cfg.Listen
			r.log.Warn("reload: listen changed in the file; that takes a restart: still listening on the old address",
				"listen", cfg.Listen, "addr", r.addr.String())
		}
	}
	if err := cfg.SetListen(r.running); err != nil {
		return nil, err
	}
	logWarnings(r.log, cfg)
	switch {
	case r.certs != nil && cfg.TLS == nil:
		r.log.Warn("reload: tls_cert_file and tls_key_file left out of the file; plain HTTP takes a restart: still serving HTTPS with the previous certificate")
	case r.certs == nil && cfg.TLS != nil:
		r.log.Warn("reload: tls_cert_file and tls_key_file set in the file; HTTPS takes a restart: still serving plain HTTP",
			"tls_cert_file", cfg.TLS.CertFile)
	}
	if err := openLoopback(cfg.Open(), cfg.Listen, r.addr); err != nil {
		return nil, err
	}
	cur := r.live.Server()
	if p := cur.Processes(); p != nil && len(cfg.Lifecycle.Specs) > 0 {
		// next takes over p, which keeps the settings it was built with.
		if f := cfg.Lifecycle.StateFile; f != p.StateFile() {
			r.log.Warn("reload: state_file changed in the file; that takes a restart while the gateway runs processes: still using the old one",
				"state_file", f, "in_use", p.StateFile())
		}
		if w := cfg.Lifecycle.WaitHealthy; w != p.WaitsHealthy() {
			r.log.Warn("reload: wait_healthy changed in the file; that takes a restart while the gateway runs processes",
				"wait_healthy", w, "in_use", p.WaitsHealthy())
		}
	}
	next, err := server.New(server.Options{Config: cfg, Logger: r.log, Previous: cur, Reloads: r.reloads, Conns: r.conns})
	if err != nil {
		return nil, err
	}
	sctx := ctx
	if cur.Processes() == nil && cfg.Lifecycle.WaitHealthy && len(cfg.Lifecycle.Specs) > 0 {
		// next runs processes of its own and waits for its pinned ones (wait_healthy). At start
		// nothing serves yet, so that wait has no end; here a configuration serves, and a pinned
		// member that never becomes healthy would hold this reload, and every later SIGHUP, for
		// good. A member not healthy within its load_timeout has failed to start.
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, pinnedLoadTimeout(cfg))
		defer cancel()
	}
	if err := next.Start(sctx); err != nil {
		// Only a manager of its own waits (wait_healthy), and only then does Start fail: the
		// running server's processes were not handed over.
		next.Close()
		return nil, err
	}
	return next, nil
}

// renewCertificate serves the certificate of cfg, just applied, to the connections to come; those
// open keep theirs. A reload that failed never gets here, and the previous certificate stays.
func (r *reloader) renewCertificate(cfg *config.Config) {
	if r.certs == nil || cfg.TLS == nil {
		return
	}
	next := cfg.TLS.Certificate
	// The whole chain, not the server's certificate alone: a file fixed to hold the intermediate
	// it lacked keeps its server certificate (TestReloadServesAFixedChain).
	if prev := r.certs.Current(); prev != nil && slices.EqualFunc(prev.Certificate, next.Certificate, bytes.Equal) {
		return
	}
	r.certs.Set(next)
	r.log.Info("reload: serving the certificate in the file", "tls_cert_file", cfg.TLS.CertFile,
		"serial", next.Leaf.SerialNumber.Text(16), "not_after", next.Leaf.NotAfter.UTC().Format(time.RFC3339))
}

// setMaxConnections puts the cap of cfg, just applied, on the client connections. The
// connections open stay open, those over a lowered cap too: none has its request cut, and the
// new ones wait, idle ones being closed to make room, until fewer than the cap are open
// (TestReloadMaxConnections).
func (r *reloader) setMaxConnections(cfg *config.Config) {
	prev := r.conns.Max()
	if r.conns == nil || prev == cfg.MaxConnections {
		return
	}
	r.conns.Set(cfg.MaxConnections)
	open := r.conns.Stats().Open
	attrs := []any{"max_connections", cfg.MaxConnections, "was", prev, "open", open}
	if cfg.MaxConnections > 0 && open > int64(cfg.MaxConnections) {
		r.log.Info("reload: max_connections lowered under the connections open: those stay open; new ones wait, and idle ones are closed to make room, until fewer are open", attrs...)
		return
	}
	r.log.Info("reload: max_connections changed", attrs...)
}

// pinnedLoadTimeout is the longest load_timeout of the pinned members: how long a reload waits
// for them (wait_healthy).
func pinnedLoadTimeout(cfg *config.Config) time.Duration {
	var d time.Duration
	for _, g := range cfg.Lifecycle.Groups {
		for _, name := range g.Pinned {
			for _, s := range cfg.Lifecycle.Specs {
				if s.Name == name {
					d = max(d, cmp.Or(s.LoadTimeout, lifecycle.DefaultLoadTimeout))
				}
			}
		}
	}
	return cmp.Or(d, lifecycle.DefaultLoadTimeout)
}
