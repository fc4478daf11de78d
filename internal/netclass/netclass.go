// Package netclass owns one answer: whether a host is on this machine or a network of the user's
// own, or out on the internet. config asks it to warn of a target without `class` whose url looks
// like a third party's; config/litellm asks it for the class an imported target is written with.
// One answer for both, so that the import never writes `public` for a host the config takes for
// the user's own, nor the other way round.
package netclass

import (
	"net/netip"
	"strings"
)

// localSuffixes are the name suffixes of local networks, each with what it says of the host.
var localSuffixes = [...]struct{ suffix, why string }{
	{".localhost", "is loopback"},
	{".local", "is a .local (mDNS) name on the LAN"},
	{".lan", "is a .lan name"},
	{".home", "is a .home name on the LAN"},
	{".home.arpa", "is a .home.arpa name on the LAN (RFC 8375)"},
	{".internal", "is an .internal name of a private network"},
	{".localdomain", "is a .localdomain name on the LAN"},
	{".test", "is a .test name (RFC 2606), not on the internet"},
	{".ts.net", "is a Tailscale name on the tailnet"},
}

// Local reports whether host (a name, or an IP address with or without brackets; no port) is on
// this machine or a local network (loopback, RFC 1918, fc00::/7, link-local, 100.64.0.0/10, the
// unspecified address, a name without a dot, localhost, or a name under a local network's suffix),
// and why, as "HOST is …". Anything else may be a third party's, on the internet.
func Local(host string) (local bool, why string) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	// 100.64.0.0/10: Tailscale's addresses, and carrier-grade NAT's.
	shared := netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64, 0, 0}), 10)
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		a = a.Unmap()
		switch {
		case a.IsLoopback():
			return true, host + " is loopback"
		case a.IsUnspecified():
			return true, host + " reaches this machine"
		case a.IsPrivate() && a.Is4():
			return true, host + " is a private address (RFC 1918)"
		case a.IsPrivate():
			return true, host + " is a unique local address (fc00::/7)"
		case a.IsLinkLocalUnicast():
			return true, host + " is link-local"
		case shared.Contains(a):
			return true, host + " is a shared address (100.64.0.0/10: Tailscale's, or carrier-grade NAT's)"
		}
		return false, host + " is an internet address"
	}
	if h == "localhost" {
		return true, host + " is loopback"
	}
	for _, s := range localSuffixes {
		if strings.HasSuffix(h, s.suffix) {
			return true, host + " " + s.why
		}
	}
	if !strings.Contains(h, ".") {
		return true, host + " is a single-label name (the LAN's, or a container's)"
	}
	return false, host + " is on the internet: a third party"
}
