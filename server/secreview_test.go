package server_test

import (
	"net/http"
	"testing"
)

// TestHealthCheckKeyStaysOnItsOrigin: a target's key goes with its health checks only to the
// origin (scheme, host, port) of its url. An absolute health_path elsewhere, a status page or
// the same host over plain http, is checked without it, as Go's client and browsers drop
// Authorization on a redirect to another host: the key is the target's, not the check URL's.
func TestHealthCheckKeyStaysOnItsOrigin(t *testing.T) {
	const key = "sk-health-origin-key-0123456789"
	up, elsewhere := newFake(t, "up"), newFake(t, "elsewhere")
	ok := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }
	up.set(ok)
	elsewhere.set(ok)
	k := `api_key_env = "K"`
	cfg := target("same", up.url(), "public", k, `health_path = "/models"`) +
		target("other", up.url(), "public", k, `health_path = "`+elsewhere.srv.URL+`/health"`) +
		"[routes.r]\ntargets = [\"same\", \"other\"]\n[[keys]]\nname = \"c\"\nsha256 = \"" + sha256hex("hk-c") + "\"\n"
	g := newGateway(t, cfg, map[string]string{"K": key})
	g.checkAll()
	for _, c := range []struct {
		f    *fake
		want string
	}{{up, "Bearer " + key}, {elsewhere, ""}} {
		c.f.mu.Lock()
		if len(c.f.headers) != 1 {
			t.Errorf("%s was checked %d times, want once", c.f.name, len(c.f.headers))
		} else if got := c.f.headers[0].Get("Authorization"); got != c.want {
			t.Errorf("%s's check carried Authorization %q, want %q", c.f.name, got, c.want)
		}
		c.f.mu.Unlock()
	}
}
