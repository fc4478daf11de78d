package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// A browser may send requests on any page's behalf: under a name a site pointed at this machine
// (DNS rebinding), or from another site's page (Origin). Those are refused unless allowed, and
// an allowed origin gets CORS, so that its page can read the answers.
func TestBrowserHostAndOrigin(t *testing.T) {
	up := newFake(t, "a")
	g := newGateway(t, target("a", up.url(), "private")+"[routes.a]\ntargets = [\"a\"]\n", nil)
	gl := newGateway(t, `allowed_hosts = ["gateway.lan"]
allowed_origins = ["https://chat.example.com"]
`+target("a", up.url(), "private")+"[routes.a]\ntargets = [\"a\"]\n", nil)
	const chat = `{"model":"a","messages":[{"role":"user","content":"x"}]}`
	for _, tc := range []struct {
		name   string
		g      *gateway
		hdr    []string
		status int
		code   string
		cors   string
	}{
		{"an IP literal", g, nil, 200, "", ""},
		{"localhost", g, []string{"Host", "localhost:8000"}, 200, "", ""},
		{"a rebound name", g, []string{"Host", "evil.example:8000"}, 403, "host_not_allowed", ""},
		{"a name allowed", gl, []string{"Host", "gateway.lan:8000"}, 200, "", ""},
		{"another site's page", g, []string{"Origin", "https://evil.example"}, 403, "origin_not_allowed", ""},
		{"a sandboxed page", g, []string{"Origin", "null"}, 403, "origin_not_allowed", ""},
		{"a local page", g, []string{"Origin", "http://localhost:5173"}, 200, "", "http://localhost:5173"},
		{"an origin allowed", gl, []string{"Origin", "https://chat.example.com"}, 200, "", "https://chat.example.com"},
		{"an origin allowed, rebound name", gl, []string{"Origin", "https://chat.example.com", "Host", "evil.example"}, 403, "host_not_allowed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := up.hits.Load()
			rep := tc.g.post(t, "/v1/chat/completions", chat, tc.hdr...)
			if rep.status != tc.status {
				t.Fatalf("status %d, want %d: %s", rep.status, tc.status, rep.body)
			}
			if tc.code != "" {
				if got := rep.errorField(t, "code"); got != tc.code {
					t.Errorf("code %v, want %s", got, tc.code)
				}
				if up.hits.Load() != before {
					t.Error("the upstream was asked")
				}
			}
			if got := rep.header.Get("Access-Control-Allow-Origin"); got != tc.cors {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.cors)
			}
			if tc.cors != "" && rep.header.Get("Access-Control-Expose-Headers") == "" {
				t.Error("no Access-Control-Expose-Headers: the page cannot read x-hayula-chain")
			}
		})
	}
	t.Run("preflight", func(t *testing.T) {
		rep := gl.do(t, http.MethodOptions, "/v1/chat/completions", "", "Origin", "https://chat.example.com",
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
		if rep.status != http.StatusNoContent || rep.header.Get("Access-Control-Allow-Origin") != "https://chat.example.com" ||
			rep.header.Get("Access-Control-Allow-Headers") != "authorization, content-type" ||
			rep.header.Get("Access-Control-Allow-Methods") == "" ||
			!strings.Contains(strings.Join(rep.header.Values("Vary"), ", "), "Access-Control-Request-Headers") {
			t.Errorf("%d %v", rep.status, rep.header)
		}
		rep = gl.do(t, http.MethodOptions, "/v1/chat/completions", "", "Origin", "https://evil.example",
			"Access-Control-Request-Method", "POST")
		if rep.status != http.StatusForbidden || rep.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("a preflight from another site: %d %v", rep.status, rep.header)
		}
	})
	t.Run("counted", func(t *testing.T) {
		// g refused one rebound name and two origins above; gl one rebound name and a preflight's origin.
		for _, c := range []struct {
			g    *gateway
			want []string
		}{
			{g, []string{`hayula_browser_refused_total{reason="host_not_allowed"} 1`, `hayula_browser_refused_total{reason="origin_not_allowed"} 2`}},
			{gl, []string{`hayula_browser_refused_total{reason="host_not_allowed"} 1`, `hayula_browser_refused_total{reason="origin_not_allowed"} 1`}},
		} {
			rep, lines := scrape(t, c.g)
			for _, w := range c.want {
				if !lines[w] {
					t.Errorf("no line %q in:\n%s", w, rep.body)
				}
			}
		}
	})
}

// A browser sends a method other than GET, HEAD and POST only when the preflight's
// Access-Control-Allow-Methods names it (Fetch, CORS-preflight fetch): a page's DELETE of a stored
// response (openai-node's responses.delete) failed in the browser as a network error instead of
// reading the gateway's 404 response_not_found.
func TestPreflightAllowsEveryMethodRouted(t *testing.T) {
	up := newFake(t, "a")
	g := newGateway(t, target("a", up.url(), "private")+"[routes.a]\ntargets = [\"a\"]\n", nil)
	const origin = "http://localhost:5173"
	for _, tc := range []struct{ method, path string }{
		{http.MethodDelete, "/v1/responses/resp_1"},
		{http.MethodPost, "/v1/responses/resp_1/cancel"},
		{http.MethodGet, "/v1/responses/resp_1"},
		{http.MethodPost, "/v1/chat/completions"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			pre := g.do(t, http.MethodOptions, tc.path, "", "Origin", origin, "Access-Control-Request-Method", tc.method)
			allowed := false
			for _, m := range strings.Split(pre.header.Get("Access-Control-Allow-Methods"), ",") {
				allowed = allowed || strings.TrimSpace(m) == tc.method
			}
			if pre.status != http.StatusNoContent || !allowed {
				t.Fatalf("preflight %d, Access-Control-Allow-Methods %q", pre.status, pre.header.Get("Access-Control-Allow-Methods"))
			}
			rep := g.do(t, tc.method, tc.path, "", "Origin", origin)
			if rep.header.Get("Access-Control-Allow-Origin") != origin {
				t.Errorf("%d without Access-Control-Allow-Origin: %s", rep.status, rep.body)
			}
		})
	}
}
