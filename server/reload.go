package server

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
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

// Replace makes next serve every request from now on and returns the server it replaced, which
// goes on serving the requests it had until each has ended, however long (an LLM stream may run
// for minutes): nginx's old workers likewise finish their requests, with no bound unless one is
// configured. The caller closes it once Drained is closed (Retired.Close), so that its upstream
// pools, processes and health checks outlive none of its requests and stop under none of them.
//
// The metrics forget, at once and for good, the counts of the routes, targets and keys next's
// configuration does not name (metrics.Set.Prune): not when next is built, since a reload may
// build a server and then be refused (TestReloadForgetsRemovedSeries).
//
// From then on, a strict request still under way on the replaced server makes no attempt on a
// target that next (or a later reload) makes public, nor a request whose route or key it makes
// strict on a public target (Server.reloadForbids).
func (l *Live) Replace(next *Server) *Retired {
	// Linked before the swap, so that no attempt of the replaced server's comes after the swap
	// without seeing next; and after it too, in case another Replace came in between.
	link := newReloadLink(next)
	next.link.Store(link)
	prev := l.cur.Load()
	prev.srv.succeed(link)
	g := l.cur.Swap(newGeneration(next))
	if g != prev {
		g.srv.succeed(link)
	}
	// next serves: the counts of what its configuration no longer names are forgotten, for good.
	next.metrics.Prune()
	g.retired.Store(true)
	if g.active.Load() == 0 {
		g.once.Do(func() { close(g.drained) })
	}
	return &Retired{g: g}
}

// succeed records link as the reload that replaced s: for s's requests still under way
// (successor), and for those of the servers before s, which reach it through s's own link.
func (s *Server) succeed(link *reloadLink) {
	s.successor.Store(link)
	if own := s.link.Load(); own != nil {
		own.next.Store(link)
	}
}

// Retired is a server that Replace took out of service, with the requests it is still serving.
type Retired struct{ g *generation }

// Server is the replaced server.
func (r *Retired) Server() *Server { return r.g.srv }

// Drained is closed once the last request the server was serving has ended.
func (r *Retired) Drained() <-chan struct{} { return r.g.drained }

// InFlight counts the requests the server is still serving.
func (r *Retired) InFlight() int64 { return max(r.g.active.Load(), 0) }

// Close closes the server and returns how many of its requests were still in flight: 0 once
// Drained is closed. Those go on, on a closed server (the gateway is stopping, and its HTTP
// server has cancelled them): the upstream connections they give back as they end are closed once
// the last has ended, since Close closed only the connections idle then.
func (r *Retired) Close() int64 {
	g := r.g
	g.srv.Close()
	select {
	case <-g.drained:
		return 0
	default:
	}
	// Nothing would ever take or expire a connection pooled by a server that no longer serves: a
	// file descriptor, and the upstream's connection, for each.
	go func() {
		<-g.drained
		g.srv.closeIdle()
	}()
	return r.InFlight()
}

// reloadLink is a configuration that a reload put in service in another's place, with what it
// makes strict or public for the requests still under way on the servers before it
// (reloadForbids), and the tpm buckets their answers are charged to (tpmNow), built once when
// Replace links it rather than scanned on every attempt of theirs. It holds these and not the
// server: a request under way on a replaced server reaches every link after it, and through a
// server each reload's whole server (its routes, upstream pools, metrics, classifier) stayed
// reachable for as long as that request ran (TestReplacedServerHoldsNoSuccessor).
type reloadLink struct {
	// next is the link of the reload that replaced this link's configuration; nil while it serves.
	next atomic.Pointer[reloadLink]
	// strictRoutes are the names of the configuration's strict routes; strictKeys the names of
	// its strict keys, and strictHashes their sha256s; publicNames and publicURLs the names and
	// URLs of its public targets. nil when there are none.
	strictRoutes, strictKeys, publicNames, publicURLs map[string]struct{}
	strictHashes                                      map[[32]byte]struct{}
	// tpm are the tpm buckets of its keys that have one, by sha256; nil when none has.
	tpm map[[32]byte]*tokenBucket
}

func newReloadLink(s *Server) *reloadLink {
	l := &reloadLink{}
	add := func(m *map[string]struct{}, k string) {
		if *m == nil {
			*m = map[string]struct{}{}
		}
		(*m)[k] = struct{}{}
	}
	for name, rs := range s.routes {
		if rs.Strict {
			add(&l.strictRoutes, name)
		}
	}
	for i := range s.cfg.Keys {
		k := &s.cfg.Keys[i]
		if k.Strict {
			add(&l.strictKeys, k.Name)
			if l.strictHashes == nil {
				l.strictHashes = map[[32]byte]struct{}{}
			}
			l.strictHashes[k.SHA256] = struct{}{}
		}
		if k.Index >= 0 && k.Index < len(s.limits) && s.limits[k.Index].tpm != nil {
			if l.tpm == nil {
				l.tpm = map[[32]byte]*tokenBucket{}
			}
			if _, dup := l.tpm[k.SHA256]; !dup { // the first of a sha256, as tpmNow took it
				l.tpm[k.SHA256] = s.limits[k.Index].tpm
			}
		}
	}
	for _, t := range s.cfg.Targets {
		if t.Privacy == core.Public {
			add(&l.publicNames, t.Name)
			add(&l.publicURLs, t.URL)
		}
	}
	return l
}

// reloadForbids reports whether a reload since s became current forbids an attempt on t, a
// target of s's configuration, for req, made on route with key (nil for none), after model auto
// moved it off the route from ("" when it did not): a later configuration makes the request
// strict (its route or its key is strict there: the key by its name or by its sha256, so that a
// key renamed and made strict is held too, TestReloadMakingTargetPublicHoldsInFlight; or the
// route auto moved it off, whose strictness a request moved goes with,
// TestInvReloadMakingAutosClassifiedRouteStrictHoldsInFlight) or the target
// public (a public target there has t's name or, unless it is a {port} template, t's URL), and
// the request is strict and the target public once both are counted. A request under way on s
// then makes no further attempt on t, neither the next in its chain nor a retry
// (TestReloadMakingTargetPublicHoldsInFlight): the operator has said that the upstream is a third
// party, or that this traffic is private, and the attempt comes after that. It costs a pointer
// load while s is current, and a few map lookups for each reload since
// (TestReloadForbidsMatchesScan).
func (s *Server) reloadForbids(req *core.Request, route, from string, key *config.Key, t *core.Target) bool {
	n := s.successor.Load()
	if n == nil {
		return false
	}
	strict, public := req.Strict, t.Privacy == core.Public
	for ; n != nil && !(strict && public); n = n.next.Load() {
		if !strict {
			strict = has(n.strictRoutes, route) || key != nil && (has(n.strictKeys, key.Name) || has(n.strictHashes, key.SHA256))
			if !strict && from != "" {
				strict = has(n.strictRoutes, from)
			}
		}
		if !public {
			public = has(n.publicNames, t.Name) || has(n.publicURLs, t.URL) && !strings.Contains(t.URL, "{port}")
		}
	}
	return strict && public
}

func has[K comparable](set map[K]struct{}, k K) bool {
	_, ok := set[k]
	return ok
}
