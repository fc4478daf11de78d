package server

import (
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/internal/echo"
	"github.com/hayula/gateway/metrics"
)

// browserGuard refuses what a web browser may send on a page's behalf that the operator did not
// allow (config.Browsers): a request under a Host name that is not this gateway's (a site that
// pointed its own name at this machine, DNS rebinding, then reads the answers as its own), and a
// cross-site request from an Origin not allowed (any page can post to 127.0.0.1, and an open
// gateway would spend the cloud tail's credit for it). For an allowed Origin it answers CORS,
// so that a browser page the operator allowed can read the answers. It also sends a path with an
// escaped slash where a route has a separator (escapedSlash) to notFound rather than to next:
// a proxy in front reads that path differently from the router.
type browserGuard struct {
	next     http.Handler
	notFound http.Handler // the router's 404 unknown_url
	b        config.Browsers
	metrics  *metrics.Set // counts the refusals; nil counts nothing
	// host is the last Host allowed: clients send the same one request after request, and
	// a string comparison is a tenth of the check (80 ns with an IP literal).
	host atomic.Pointer[string]
}

// allowHost is b.AllowHost, remembering the last host allowed.
func (g *browserGuard) allowHost(host string) bool {
	if p := g.host.Load(); p != nil && *p == host {
		return true
	}
	if !g.b.AllowHost(host) {
		return false
	}
	allowed := host // a copy, so that only this path puts a string on the heap
	g.host.Store(&allowed)
	return true
}

// corsExposed are the answer's fields a page may read besides the CORS-safelisted ones: every
// X-Hayula-* field an answer may carry (TestCORSExposesEveryHayulaHeader), Retry-After and the
// request's ID.
const corsExposed = "X-Hayula-Chain, X-Hayula-Route, X-Hayula-Target, X-Hayula-Intent, X-Hayula-Specialist, " +
	"X-Hayula-Moved-From, X-Hayula-Move-Reason, Retry-After, X-Request-Id"

func (g *browserGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.allowHost(r.Host) {
		g.refuseHost(w, r)
		return
	}
	// A path without escapes (RawPath "", the common case) costs this comparison.
	next := g.next
	if r.URL.RawPath != "" && escapedSlash(r.URL.RawPath) {
		next = g.notFound
	}
	if origin := field(r, "Origin"); len(origin) > 0 {
		g.fromPage(w, r, next, origin)
		return
	}
	next.ServeHTTP(w, r)
}

// refuseHost answers a request for a host the gateway does not serve. It and fromPage are
// functions of their own so that what they build is not a part of the frame of ServeHTTP, which
// is on the stack of every request while it waits for its upstream.
//
//go:noinline
func (g *browserGuard) refuseHost(w http.ResponseWriter, r *http.Request) {
	g.metrics.BrowserRefused(metrics.RefusedHost)
	writeError(w, &apiError{Status: http.StatusForbidden, Type: typeInvalidRequest, Code: "host_not_allowed",
		Message: fmt.Sprintf("Requests for host \"%s\" are not served: name it in the gateway's allowed_hosts.", echo.String(r.Host))})
}

// fromPage serves a request that came with an Origin (a page's, in a browser): refused unless
// the origin is allowed, answered at once when it is a preflight, passed to next with the CORS
// fields otherwise.
//
//go:noinline
func (g *browserGuard) fromPage(w http.ResponseWriter, r *http.Request, next http.Handler, origin []string) {
	if len(origin) > 1 || !g.b.AllowOrigin(origin[0]) {
		g.metrics.BrowserRefused(metrics.RefusedOrigin)
		writeError(w, &apiError{Status: http.StatusForbidden, Type: typeInvalidRequest, Code: "origin_not_allowed",
			Message: fmt.Sprintf("Requests from origin \"%s\" are not served: name it in the gateway's allowed_origins.", echo.String(origin[0]))})
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin[0])
	h.Add("Vary", "Origin")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		// A preflight: the page may send what it asked to (its key, the Hayula options).
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, DELETE, OPTIONS") // every method the router routes
		if hdrs := r.Header.Get("Access-Control-Request-Headers"); hdrs != "" {
			h.Set("Access-Control-Allow-Headers", hdrs)
		}
		h.Set("Access-Control-Max-Age", "600")
		// The answer echoes what the preflight asked: a cache must not reuse it for another.
		h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.Set("Access-Control-Expose-Headers", corsExposed)
	next.ServeHTTP(w, r)
}
