package server

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
)

// Live is the gateway's HTTP handler across configuration reloads: each request is served by the
// Server that was current when it came, to its end (a stream's last event included), and Replace
// puts another in place for the requests that come after. The HTTP server keeps its listener and
// connections: only what answers them changes.
type Live struct {
	cur atomic.Pointer[generation]
}

// generation is one Server in a Live and the requests it is serving.
type generation struct {
	srv     *Server
	h       http.Handler
	active  atomic.Int64 // requests in ServeHTTP, plus transient claims that back off
	retired atomic.Bool  // replaced: drained is closed once active reaches zero
	once    sync.Once
	drained chan struct{}
}

func newGeneration(s *Server) *generation {
	return &generation{srv: s, h: s.Handler(), drained: make(chan struct{})}
}

// leave ends a claim on g.
func (g *generation) leave() {
	if g.active.Add(-1) == 0 && g.retired.Load() {
		g.once.Do(func() { close(g.drained) })
	}
}

// NewLive serves through s until Replace.
func NewLive(s *Server) *Live {
	l := &Live{}
	l.cur.Store(newGeneration(s))
	return l
}

// Server is the current server.
func (l *Live) Server() *Server { return l.cur.Load().srv }

func (l *Live) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A claim taken on a generation that Replace has meanwhile retired is given back and taken
	// on the new one: Replace may have seen the old one idle already and be closing it.
	g := l.cur.Load()
	for {
		g.active.Add(1)
		now := l.cur.Load()
		if now == g {
			break
		}
		g.leave()
		g = now
	}
	defer g.leave()
	g.h.ServeHTTP(w, r)
}

// Replace makes next serve every request from now on, then waits until the requests that the
// server it replaces was serving have ended, or ctx has. It returns that server, for the caller to
// Close, and how many of its requests had not ended (0 unless ctx ended first). Those go on, on a
// closed server: the upstream connections they give back as they end are closed once the last
// has ended, since Close closed only the connections idle then.
func (l *Live) Replace(ctx context.Context, next *Server) (prev *Server, left int64) {
	g := l.cur.Swap(newGeneration(next))
	g.retired.Store(true)
	if g.active.Load() == 0 {
		g.once.Do(func() { close(g.drained) })
	}
	select {
	case <-g.drained:
		return g.srv, 0
	case <-ctx.Done():
		// Nothing would ever take or expire a connection pooled by a server that no longer
		// serves: a file descriptor, and the upstream's connection, for every such reload.
		go func() {
			<-g.drained
			g.srv.closeIdle()
		}()
		return g.srv, max(g.active.Load(), 0)
	}
}
