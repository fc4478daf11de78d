package server

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
)

// reloadServer is a Server with only what reloadForbids reads of it: its configuration's
// targets and keys, and its routes.
func reloadServer(targets []*core.Target, keys []config.Key, strictRoutes map[string]bool) *Server {
	s := &Server{cfg: &config.Config{Targets: targets, Keys: keys}, routes: map[string]*routeState{}}
	for name, strict := range strictRoutes {
		s.routes[name] = &routeState{Route: &config.Route{Name: name, Strict: strict}}
	}
	return s
}

// scanStrict and scanPublic are reloadForbids as it was, scanning each successor's keys and
// targets: the reference that the precomputed sets are held to. A request on a replaced server
// is forbidden a target when some successor made it strict (or it was) and some successor made
// the target public (or it was); a successor never undoes either, so the two scans are apart.

// scanStrict reports whether a successor made route or key strict.
func scanStrict(successors []*Server, route string, key *config.Key) bool {
	for _, n := range successors {
		if rs, ok := n.routes[route]; ok && rs.Strict {
			return true
		}
		if key != nil {
			for _, k := range n.cfg.Keys {
				if (k.Name == key.Name || k.SHA256 == key.SHA256) && k.Strict {
					return true
				}
			}
		}
	}
	return false
}

// scanPublic reports whether a successor made t public, by its name or (not a {port} template)
// its URL.
func scanPublic(successors []*Server, t *core.Target) bool {
	for _, n := range successors {
		for _, o := range n.cfg.Targets {
			if o.Privacy == core.Public && (o.Name == t.Name || (o.URL == t.URL && !strings.Contains(t.URL, "{port}"))) {
				return true
			}
		}
	}
	return false
}

// randomReloadServer draws a configuration of many targets and keys over small pools of names
// and URLs (some {port} templates), so that successive ones share names, URLs and keys, each
// public or strict by chance.
func randomReloadServer(r *rand.Rand) *Server {
	var targets []*core.Target
	for i := range 80 {
		if r.IntN(3) == 0 {
			continue
		}
		url := fmt.Sprintf("http://10.0.0.%d:8080/v1", r.IntN(40))
		if r.IntN(5) == 0 {
			url = fmt.Sprintf("http://127.0.0.%d:{port}/v1", r.IntN(4))
		}
		t := &core.Target{Name: fmt.Sprintf("t%02d", i), URL: url, Index: len(targets)}
		if r.IntN(6) == 0 {
			t.Privacy = core.Public
		}
		targets = append(targets, t)
	}
	// Each key's sha256 is drawn apart from its name (shifted by a configuration's offset, so
	// that no two of one configuration share one): successive ones rename keys and give names
	// other keys.
	var keys []config.Key
	shift := r.IntN(40)
	for i := range 40 {
		if r.IntN(3) == 0 {
			continue
		}
		keys = append(keys, config.Key{Name: fmt.Sprintf("k%02d", i), Index: len(keys), Strict: r.IntN(8) == 0,
			SHA256: sha256.Sum256(fmt.Appendf(nil, "h%d", (i+shift)%40))})
	}
	routes := map[string]bool{}
	for i := range 10 {
		if r.IntN(3) != 0 {
			routes[fmt.Sprintf("r%d", i)] = r.IntN(6) == 0
		}
	}
	return reloadServer(targets, keys, routes)
}

// TestReloadForbidsMatchesScan: over reloads of many targets and keys, one after another, what a
// request still under way on a replaced server may no longer attempt is what scanning every
// later configuration's keys and targets says, for every target, route, key and strictness the
// request can have, from every server of the chain (TestReloadMakingTargetPublicHoldsInFlight
// pins the same end to end).
func TestReloadForbidsMatchesScan(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var forbidden [2]int // by outcome: allowed, forbidden
	for round := range 20 {
		chain := []*Server{randomReloadServer(r)}
		l := NewLive(chain[0])
		for range 3 {
			next := randomReloadServer(r)
			l.Replace(next)
			chain = append(chain, next)
			for i, s := range chain {
				checkForbids(t, round, s, chain[i+1:], &forbidden)
			}
		}
	}
	if forbidden[0] == 0 || forbidden[1] == 0 {
		t.Fatalf("outcomes %v: the draw tests nothing", forbidden)
	}
}

func checkForbids(t *testing.T, round int, s *Server, successors []*Server, outcomes *[2]int) {
	t.Helper()
	keys := []*config.Key{nil}
	for i := range s.cfg.Keys {
		keys = append(keys, &s.cfg.Keys[i])
	}
	// The reference's two scans, made once for each target and each route and key rather than
	// for every request (each request scanning them took the test 80 s under -race).
	public := make([]bool, len(s.cfg.Targets))
	for i, tg := range s.cfg.Targets {
		public[i] = tg.Privacy == core.Public || scanPublic(successors, tg)
	}
	var strictBy [11][]bool
	for route := range strictBy {
		for _, key := range keys {
			strictBy[route] = append(strictBy[route], scanStrict(successors, fmt.Sprintf("r%d", route), key))
		}
	}
	for ti, tg := range s.cfg.Targets {
		for route := range 11 { // r10 is in no configuration
			name := fmt.Sprintf("r%d", route)
			for ki, key := range keys {
				for _, strict := range []bool{false, true} {
					req := &core.Request{Strict: strict}
					// No successor, no reload: the plan judged the request as it is.
					want := len(successors) > 0 && (strict || strictBy[route][ki]) && public[ti]
					if want {
						outcomes[1]++
					} else {
						outcomes[0]++
					}
					if got := s.reloadForbids(req, name, "", key, tg); got != want {
						t.Fatalf("round %d, %d successors: target %s (%s, %s), route %s, key %v, strict %v: %v, want %v",
							round, len(successors), tg.Name, tg.URL, tg.Privacy, name, key, strict, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkReloadForbids is one attempt's check on a server that a reload replaced, for a request
// on a route and key that stay as they were, to a target that stays private, over
// configurations of n targets and n keys, every other one of which the reload made public or
// strict: what each attempt of a request still under way pays.
func BenchmarkReloadForbids(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			build := func(marked bool) *Server {
				targets := make([]*core.Target, n)
				keys := make([]config.Key, n)
				for i := range n {
					targets[i] = &core.Target{Name: fmt.Sprintf("t%d", i), URL: fmt.Sprintf("http://10.0.%d.%d/v1", i/256, i%256), Index: i}
					keys[i] = config.Key{Name: fmt.Sprintf("k%d", i), Index: i, Strict: marked && i%2 == 1, SHA256: [32]byte{byte(i), byte(i >> 8), 1}}
					if marked && i%2 == 1 {
						targets[i].Privacy = core.Public
					}
				}
				return reloadServer(targets, keys, map[string]bool{"r": false})
			}
			old := build(false)
			NewLive(old).Replace(build(true))
			mid := n / 2 &^ 1 // even: neither public nor strict
			req, key, tg := &core.Request{}, &old.cfg.Keys[mid], old.cfg.Targets[mid]
			b.ReportAllocs()
			for b.Loop() {
				if old.reloadForbids(req, "r", "", key, tg) {
					b.Fatal("forbidden")
				}
			}
		})
	}
}
