package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
	"github.com/hayula/gateway/upstream"
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
	// Public targets are checked only when health_interval says so (TestPublicTargetNotPolledByDefault).
	every := `health_interval = "30s"`
	cfg := target("same", up.url(), "public", k, every, `health_path = "/models"`) +
		target("other", up.url(), "public", k, every, `health_path = "`+elsewhere.srv.URL+`/health"`) +
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

// TestBrowserGuardOddForms: the Host and Origin checks hold for the spellings a browser or a
// crafted client may send, over raw TCP so that nothing rewrites them: an absolute-form target
// (its authority is the host, RFC 9112 §3.2.2), a trailing dot, upper case, an IPv6 literal,
// HTTP/1.0 without Host (no browser sends that), a look-alike of localhost, two Origin lines, a
// lower-case field name, 0.0.0.0, a preflight from a sandboxed page.
func TestBrowserGuardOddForms(t *testing.T) {
	up := newFake(t, "a")
	g := newGateway(t, target("a", up.url(), "private")+"[routes.a]\ntargets = [\"a\"]\n", nil)
	addr := strings.TrimPrefix(g.ts.URL, "http://")
	const body = `{"model":"a","messages":[{"role":"user","content":"x"}]}`
	post := func(line, fields string) string {
		return fmt.Sprintf("%s\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			line, fields, len(body), body)
	}
	const chat = "POST /v1/chat/completions HTTP/1.1"
	for _, tc := range []struct {
		name, req string
		status    int
	}{
		{"absolute form naming another host", post("POST http://evil.example/v1/chat/completions HTTP/1.1", "Host: 127.0.0.1\r\n"), 403},
		{"a trailing dot", post(chat, "Host: evil.example.\r\n"), 403},
		{"upper case", post(chat, "Host: EVIL.EXAMPLE:8000\r\n"), 403},
		{"a short IPv4 form", post(chat, "Host: 127.1\r\n"), 403},
		{"an IPv6 literal", post(chat, "Host: [::1]:8000\r\n"), 200},
		{"localhost, upper case, trailing dot", post(chat, "Host: LOCALHOST.:8000\r\n"), 200},
		{"HTTP/1.0 without Host", post("POST /v1/chat/completions HTTP/1.0", ""), 200},
		{"a localhost look-alike origin", post(chat, "Host: 127.0.0.1\r\nOrigin: http://localhost.evil.example\r\n"), 403},
		{"two Origin lines", post(chat, "Host: 127.0.0.1\r\nOrigin: http://localhost\r\nOrigin: https://evil.example\r\n"), 403},
		{"a lower-case origin field", post(chat, "Host: 127.0.0.1\r\norigin: https://evil.example\r\n"), 403},
		{"0.0.0.0", post(chat, "Host: 127.0.0.1\r\nOrigin: http://0.0.0.0:8000\r\n"), 403},
		{"a sandboxed page's preflight", "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: null\r\n" +
			"Access-Control-Request-Method: POST\r\nConnection: close\r\n\r\n", 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := up.hits.Load()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tc.req); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.status == 403 && (up.hits.Load() != before || resp.Header.Get("Access-Control-Allow-Origin") != "") {
				t.Errorf("refused, yet the upstream was asked or CORS granted: %v", resp.Header)
			}
		})
	}
}

// TestUpstreamRedirectNotFollowed: a target that answers with a redirect to another server is
// a failed attempt; the other server is never asked, so neither the prompt nor the target's key
// reaches it (Go's client would carry the key to another port of the same host).
func TestUpstreamRedirectNotFollowed(t *testing.T) {
	const key = "sk-redirect-key-0123456789"
	other, red := newFake(t, "other"), newFake(t, "red")
	red.set(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.srv.URL+r.URL.Path, http.StatusTemporaryRedirect)
	})
	g := newGateway(t, target("red", red.url(), "private", `api_key_env = "K"`)+"[routes.r]\ntargets = [\"red\"]\n",
		map[string]string{"K": key})
	for _, stream := range []bool{false, true} {
		rep := g.post(t, "/v1/chat/completions", fmt.Sprintf(`{"model":"r","stream":%v,"messages":[{"role":"user","content":"x"}]}`, stream))
		if rep.status == http.StatusOK || strings.Contains(string(rep.body), key) || rep.header.Get("Location") != "" {
			t.Errorf("stream %v: %d %v %s", stream, rep.status, rep.header, rep.body)
		}
	}
	if n := other.hits.Load(); n != 0 {
		t.Errorf("the redirect's target was asked %d times", n)
	}

	// The same through net/http's client (an https target, or a proxied one), whose default is
	// to follow a 307 with the body.
	tlsOther := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect's https target was asked, Authorization %q", r.Header.Get("Authorization"))
	}))
	defer tlsOther.Close()
	tlsRed := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, tlsOther.URL+r.URL.Path, http.StatusPermanentRedirect)
	}))
	defer tlsRed.Close()
	cfgText := target("red", tlsRed.URL+"/v1", "private", `api_key_env = "K"`, `health_interval = "0s"`) +
		"[routes.r]\ntargets = [\"red\"]\n"
	cfg, err := config.Parse([]byte(cfgText), "test.toml", func(string) string { return key })
	if err != nil {
		t.Fatal(err)
	}
	tr := tlsRed.Client().Transport.(*http.Transport)
	gt := newGateway(t, cfgText, map[string]string{"K": key}, func(o *server.Options) {
		o.Upstream = upstream.NewSet(cfg.Targets, upstream.Options{Transport: tr})
	})
	if rep := gt.chat(t, "r"); rep.status != http.StatusBadGateway || strings.Contains(string(rep.body), key) {
		t.Errorf("https: %d %s", rep.status, rep.body)
	}
}
