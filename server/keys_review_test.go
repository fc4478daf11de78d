package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// keysConfig: route r is a private target that fails, then a public one; route p is the public
// one only; auto picks r by default, p for "zebra" or for the specialist hint "webapp". Key
// "strict" is strict, "kid" may use only r, "scrape" no route.
func keysConfig(priv, pub *fake) string {
	return keyBlock("strict", "hk-strict", "strict = true") + keyBlock("kid", "hk-kid", `routes = ["r"]`) +
		keyBlock("scrape", "hk-scrape", "routes = []") + keyBlock("admin", "hk-admin") +
		target("priv", priv.url(), "private") + target("pub", pub.url(), "public") +
		"[routes.r]\ntargets = [\"priv\", \"pub\"]\n[routes.p]\ntargets = [\"pub\"]\n" +
		"[auto]\ndefault = \"r\"\nspecialist_route = \"p\"\nspecialists = [\"webapp\"]\n" +
		"[[auto.intents]]\nname = \"zoo\"\nroute = \"p\"\nterms = [\"zebra\"]\n"
}

// TestStrictKeyNoPublicOnAnyEndpoint: a strict key's requests reach no public target through any
// endpoint or option: asking for the default privacy, a route of public targets only, model
// "auto" with a text or a hint that picks one, the Responses bridge whole and streamed,
// completions, embeddings; explain says strict and lists no public target to try: for a route of
// public targets only a 503, and for model "auto", which moves the request off that route to one
// with a private target (TestAutoMoveStrict), the private target alone.
func TestStrictKeyNoPublicOnAnyEndpoint(t *testing.T) {
	priv, pub := newFake(t, "priv"), newFake(t, "pub")
	priv.set(errHandler(500, "boom", "down"))
	g := newGateway(t, keysConfig(priv, pub), nil)
	auth := []string{"Authorization", "Bearer hk-strict"}
	def := append([]string{"x-hayula-privacy", "default"}, auth...)
	cases := []struct {
		name, path, body string
		hdr              []string
	}{
		{"chat", "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"hi"}]}`, def},
		{"chat body default", "/v1/chat/completions", `{"model":"r","x-hayula-privacy":"default","messages":[{"role":"user","content":"hi"}]}`, auth},
		{"chat stream", "/v1/chat/completions", `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`, def},
		{"public route", "/v1/chat/completions", `{"model":"p","messages":[{"role":"user","content":"hi"}]}`, def},
		{"auto text", "/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"a zebra"}]}`, def},
		{"auto hint route", "/v1/chat/completions", `{"model":"auto","x-route-hint":"p","messages":[{"role":"user","content":"hi"}]}`, def},
		{"auto hint header", "/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"hi"}]}`, append([]string{"x-route-hint", "webapp"}, def...)},
		{"responses", "/v1/responses", `{"model":"p","input":"hi","x-hayula-privacy":"default"}`, auth},
		{"responses stream", "/v1/responses", `{"model":"r","input":"hi","stream":true}`, def},
		{"responses auto", "/v1/responses", `{"model":"auto","input":"a zebra"}`, def},
		{"completions", "/v1/completions", `{"model":"p","prompt":"hi"}`, def},
		{"completions auto", "/v1/completions", `{"model":"auto","prompt":"a zebra"}`, def},
		{"embeddings", "/v1/embeddings", `{"model":"p","input":"hi"}`, def},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := g.post(t, c.path, c.body, c.hdr...)
			if rep.status == 200 && strings.Contains(string(rep.body), "pub") {
				t.Errorf("%d %s", rep.status, rep.body)
			}
			if rep.status != 200 {
				rep.errorField(t, "message")
			}
		})
	}
	for _, model := range []string{"p", "auto"} {
		rep := g.post(t, "/v1/route/explain", `{"model":"`+model+`","messages":[{"role":"user","content":"a zebra"}]}`, def...)
		var x struct {
			Strict bool     `json:"strict"`
			Order  []string `json:"order"`
			Error  *struct {
				Status int `json:"status"`
			} `json:"error"`
			Moved *struct {
				From string `json:"from"`
			} `json:"moved"`
		}
		if err := json.Unmarshal(rep.body, &x); err != nil || rep.status != 200 {
			t.Fatalf("explain %s: %d %s", model, rep.status, rep.body)
		}
		if model == "auto" {
			if !x.Strict || len(x.Order) != 1 || x.Order[0] != "priv" || x.Error != nil || x.Moved == nil || x.Moved.From != "p" {
				t.Errorf("explain %s: %s, want strict, moved from p, the private target alone", model, rep.body)
			}
			continue
		}
		if !x.Strict || len(x.Order) != 0 || x.Error == nil || x.Error.Status != 503 {
			t.Errorf("explain %s: %s, want strict, no target to try, a 503", model, rep.body)
		}
	}
	if n := pub.hits.Load(); n != 0 {
		t.Errorf("the public target was reached %d times by a strict key", n)
	}
}

// TestRouteLimitedKey: a key limited to route r reaches no other route through any endpoint,
// model "auto", a hint, /v1/models, explain or the Responses bridge: each is the 404 a model
// that does not exist gets; /metrics is 403; a scrape-only key (routes = []) chats nowhere and
// scrapes. Refusals are OpenAI-shaped, and counted.
func TestRouteLimitedKey(t *testing.T) {
	priv, pub := newFake(t, "priv"), newFake(t, "pub")
	g := newGateway(t, keysConfig(priv, pub), nil)
	kid := []string{"Authorization", "Bearer hk-kid"}
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"p","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/chat/completions", `{"model":"auto","x-route-hint":"r","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/responses", `{"model":"p","input":"hi"}`},
		{"/v1/responses", `{"model":"auto","input":"hi","stream":true}`},
		{"/v1/completions", `{"model":"p","prompt":"hi"}`},
		{"/v1/embeddings", `{"model":"p","input":"hi"}`},
		{"/v1/route/explain", `{"model":"p","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/route/explain", `{"model":"auto","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/route/explain", `{"model":"p","input":"hi"}`},
	} {
		rep := g.post(t, c.path, c.body, kid...)
		if rep.status != 404 || rep.errorField(t, "code") != "model_not_found" || rep.errorField(t, "type") != "invalid_request_error" {
			t.Errorf("%s %s: %d %s, want 404 model_not_found", c.path, c.body, rep.status, rep.body)
		}
	}
	// A hint on a route the key may use stays on that route.
	rep := g.post(t, "/v1/chat/completions", `{"model":"r","x-route-hint":"p","messages":[{"role":"user","content":"hi"}]}`, kid...)
	if rep.status != 200 || rep.header.Get("x-hayula-route") != "r" {
		t.Errorf("model r with a hint naming p: %d route %q %s", rep.status, rep.header.Get("x-hayula-route"), rep.body)
	}
	for path, want := range map[string]int{"/v1/models/p": 404, "/v1/models/auto": 404, "/v1/models/r": 200} {
		if rep := g.do(t, http.MethodGet, path, "", kid...); rep.status != want {
			t.Errorf("GET %s: %d %s, want %d", path, rep.status, rep.body, want)
		}
	}
	rep = g.do(t, http.MethodGet, "/v1/models", "", kid...)
	if !strings.Contains(string(rep.body), `"id":"r"`) || strings.Contains(string(rep.body), `"id":"p"`) ||
		strings.Contains(string(rep.body), `"id":"auto"`) {
		t.Errorf("/v1/models for the kid: %s", rep.body)
	}
	rep = g.do(t, http.MethodGet, "/metrics", "", kid...)
	if rep.status != 403 || rep.errorField(t, "code") != "permission_denied" {
		t.Errorf("/metrics for a key with routes: %d %s, want 403 permission_denied", rep.status, rep.body)
	}

	scrapeKey := []string{"Authorization", "Bearer hk-scrape"}
	if rep := g.chat(t, "r", scrapeKey...); rep.status != 404 {
		t.Errorf("scrape-only key chatting: %d %s, want 404", rep.status, rep.body)
	}
	if rep := g.do(t, http.MethodGet, "/v1/models", "", scrapeKey...); !strings.Contains(string(rep.body), `"data":[]`) {
		t.Errorf("/v1/models for a scrape-only key: %s", rep.body)
	}
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer hk-nope"}, {"x-api-key", "hk-nope"}} {
		rep := g.chat(t, "r", hdr...)
		if rep.status != 401 || rep.errorField(t, "code") != "invalid_api_key" || rep.errorField(t, "type") != "authentication_error" {
			t.Errorf("key %v: %d %s, want 401 invalid_api_key", hdr, rep.status, rep.body)
		}
	}
	if pub.hits.Load() != 0 || priv.hits.Load() != 1 {
		t.Errorf("upstream hits: pub %d, priv %d; want 0 and 1", pub.hits.Load(), priv.hits.Load())
	}
	_, lines := scrape(t, g, scrapeKey...)
	for _, w := range []string{
		`hayula_requests_total{endpoint="chat",route="",code="401"} 3`,
		`hayula_requests_total{endpoint="chat",route="",code="404"} 3`,
		`hayula_key_requests_total{key="kid"} 7`,
		`hayula_key_requests_total{key="scrape"} 1`,
	} {
		if !lines[w] {
			t.Errorf("/metrics has no line %q", w)
		}
	}
}
