package config

import (
	"net"
	"net/netip"
	"slices"
	"strings"
)

// Browsers is what the gateway accepts from web browsers, which send requests on behalf of any
// page they show: a page may post to the gateway (a cross-site request carries its Origin), or
// reach it under a name of its own that it points at this machine (DNS rebinding: the Host is
// that name). IP literals, localhost and loopback origins are always accepted.
type Browsers struct {
	// Hosts are the host names (lower case, without port) a request's Host may have besides IP
	// literals, localhost and Listen: allowed_hosts.
	Hosts []string
	// Listen is the host name the gateway listens under (lower case), allowed as Hosts are; ""
	// when listen names an IP literal. It follows Config.SetListen: a --listen override, and the
	// address a reload keeps listening on whatever the file's listen says
	// (TestReloadKeepsListenHostAllowed).
	Listen string
	// AnyHost: allowed_hosts has "*"; no Host is refused.
	AnyHost bool
	// Origins are the origins (lower-case scheme://host[:port]) a request's Origin may be besides
	// loopback ones.
	Origins []string
	// AnyOrigin: allowed_origins has "*"; no Origin is refused.
	AnyOrigin bool
}

// AllowHost reports whether a request whose Host header is host (with or without a port) may be
// served. Browsers always send Host; an empty one (HTTP/1.0) is not a browser's.
func (b *Browsers) AllowHost(host string) bool {
	if host == "" || b.AnyHost {
		return true
	}
	h := hostOnly(host)
	if isLoopbackName(h) {
		return true
	}
	if _, ok := ipLiteral(h); ok {
		// An IP literal names no domain, so no other site's name can have been pointed at it.
		return true
	}
	h = hostName(h)
	return h == b.Listen && h != "" || slices.Contains(b.Hosts, h)
}

// listenHost is the host name listen (host:port) names, as Browsers.Listen holds it; "" for an
// IP literal, an empty host or an address that is not host:port.
func listenHost(listen string) string {
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" && net.ParseIP(host) == nil {
		return hostName(host)
	}
	return ""
}

// AllowOrigin reports whether a request whose Origin header is origin may be served: none (not a
// cross-site request), a loopback origin, or one allowed_origins lists. "null" (a sandboxed page
// or a file) is not loopback.
func (b *Browsers) AllowOrigin(origin string) bool {
	if origin == "" || b.AnyOrigin {
		return true
	}
	scheme, host, ok := strings.Cut(origin, "://")
	if !ok {
		return false
	}
	if strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https") {
		h := hostOnly(host)
		if isLoopbackName(h) {
			return true
		}
		if a, ok := ipLiteral(h); ok && a.IsLoopback() {
			return true
		}
	}
	return slices.Contains(b.Origins, strings.ToLower(origin))
}

// ipLiteral is h (a host without its port, IPv6 in brackets or not) as an IP address, if it is
// one.
func ipLiteral(h string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	return a, err == nil
}

// hostOnly is host without its port: "[::1]:8000" → "[::1]", "a:1" → "a", "::1" → "::1". A port
// that is not a number is not taken off: "localhost:1.evil.example" stays whole, and is no
// loopback name.
func hostOnly(host string) string {
	if strings.HasPrefix(host, "[") {
		if i := strings.IndexByte(host, ']'); i >= 0 && (i == len(host)-1 || host[i+1] == ':' && digits(host[i+2:])) {
			return host[:i+1]
		}
		return host
	}
	if h, port, ok := strings.Cut(host, ":"); ok && !strings.Contains(port, ":") && digits(port) {
		return h
	}
	return host
}

// digits reports whether s is a non-empty run of ASCII digits.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isLoopbackName: localhost and its subdomains, which resolve to this machine by RFC 6761.
func isLoopbackName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	return strings.EqualFold(h, "localhost") || len(h) > len(".localhost") &&
		strings.EqualFold(h[len(h)-len(".localhost"):], ".localhost")
}

// AllowedHosts are the host names a request's Host may have besides IP literals and localhost:
// Listen, then Hosts.
func (b *Browsers) AllowedHosts() []string {
	if b.Listen == "" || slices.Contains(b.Hosts, b.Listen) {
		return b.Hosts
	}
	return append([]string{b.Listen}, b.Hosts...)
}
