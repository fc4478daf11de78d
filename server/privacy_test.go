package server_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestPrivacyNeverLeaks: over random routes, target classes, strictness sources and upstream
// failures (cooldowns included), a strict request never reaches a public target.
func TestPrivacyNeverLeaks(t *testing.T) {
	t.Parallel()
	const n = 5
	fakes := make([]*fake, n)
	for i := range fakes {
		fakes[i] = newFake(t, fmt.Sprintf("t%d", i))
	}
	behaviours := []http.HandlerFunc{
		nil, // ok
		errHandler(500, "internal", "down"),
		errHandler(429, "rate", "slow"),
		errHandler(401, "invalid_api_key", "bad"),
		errHandler(400, "context_length_exceeded", "too long"),
		errHandler(404, "model_not_found", "gone"),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 120; iter++ {
		var cfg strings.Builder
		public := map[int]bool{}
		for i, f := range fakes {
			class := "private"
			if rng.IntN(2) == 0 {
				class, public[i] = "public", true
			}
			cfg.WriteString(target(f.name, f.url(), class, fmt.Sprintf("tools = %v", rng.IntN(3) > 0)))
		}
		perm := rng.Perm(n)[:1+rng.IntN(n)]
		names := make([]string, len(perm))
		for i, p := range perm {
			names[i] = fmt.Sprintf("%q", fakes[p].name)
		}
		routeStrict := rng.IntN(3) == 0
		allPublic := true
		for _, p := range perm {
			allPublic = allPublic && public[p]
		}
		if allPublic {
			// A strict route of public targets only does not load (TestParseErrors, config);
			// the requests below make themselves strict.
			routeStrict = false
		}
		fmt.Fprintf(&cfg, "[cooldown]\nfailures = %d\n\n[routes.r]\ntargets = [%s]\nstrict = %v\npolicy = %q\n",
			1+rng.IntN(3), strings.Join(names, ", "), routeStrict,
			[]string{"ordered", "weighted", "least-busy", "latency"}[rng.IntN(4)])
		g := newGateway(t, cfg.String(), nil)
		for i, f := range fakes {
			h := behaviours[rng.IntN(len(behaviours))]
			if h == nil {
				h = okHandler(f.name)
			}
			fakes[i].set(h)
		}
		before := make([]int64, n)
		for i, f := range fakes {
			before[i] = f.hits.Load()
		}
		for req := 0; req < 4; req++ {
			var hdr []string
			if !routeStrict {
				hdr = []string{"x-hayula-privacy", "strict"}
			}
			body := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
			if rng.IntN(2) == 0 {
				body = `{"model":"r","x-hayula-privacy":"strict","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"hi"}]}`
				hdr = nil
			}
			rep := g.post(t, "/v1/chat/completions", body, hdr...)
			if rep.status == 200 && public[indexOf(fakes, rep.header.Get("x-hayula-target"))] {
				t.Fatalf("iteration %d: strict request served by public %s", iter, rep.header.Get("x-hayula-target"))
			}
			if rep.status != 200 {
				rep.errorField(t, "message") // still a well-formed error
			}
		}
		for i, f := range fakes {
			if public[i] && f.hits.Load() != before[i] {
				t.Fatalf("iteration %d: public target %s was reached by a strict request\nconfig:\n%s", iter, f.name, cfg.String())
			}
		}
	}
}

func indexOf(fs []*fake, name string) int {
	for i, f := range fs {
		if f.name == name {
			return i
		}
	}
	return -1
}

// TestPrivacyAnyStrictCounts: a request that says strict anywhere is strict. A header sent twice
// (a client library's default beside the application's own), or a body member sent twice, where
// both decoders keep the last value, once let a later "default" or null undo an earlier "strict"
// and reach the public target.
func TestPrivacyAnyStrictCounts(t *testing.T) {
	pub := newFake(t, "pub")
	g := newGateway(t, target("pub", pub.url(), "public")+"[routes.r]\ntargets = [\"pub\"]\n", nil)
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	tests := []struct {
		name, path, body string
		headers          []string
	}{
		{"body strict then default", "/v1/chat/completions", `{"model":"r","x-hayula-privacy":"strict","x-hayula-privacy":"default",` + msgs + `}`, nil},
		{"body strict then null", "/v1/chat/completions", `{"model":"r","x-hayula-privacy":"strict",` + msgs + `,"x-hayula-privacy":null}`, nil},
		{"body strict then folded default", "/v1/chat/completions", `{"model":"r","x-hayula-privacy":"strict","X-Hayula-Privacy":"default",` + msgs + `}`, nil},
		{"completions body strict then default", "/v1/completions", `{"model":"r","x-hayula-privacy":"strict","prompt":"x","x-hayula-privacy":"default"}`, nil},
		{"header default then strict", "/v1/chat/completions", `{"model":"r",` + msgs + `}`, []string{"default", "strict"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, g.ts.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			for _, v := range tc.headers {
				req.Header.Add("x-hayula-privacy", v)
			}
			before := pub.hits.Load()
			resp, err := g.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || pub.hits.Load() != before {
				t.Errorf("status %d, public target hit %d times: want 503 no_private_target and no hit",
					resp.StatusCode, pub.hits.Load()-before)
			}
		})
	}
}

// TestPrivacyValues: the values CONFIG.md names. "strict" in any case makes the request strict;
// "default", "none" and an empty value ask for nothing (and loosen nothing); anything else is a
// 400 naming the option, before any target is asked.
func TestPrivacyValues(t *testing.T) {
	pub := newFake(t, "pub")
	g := newGateway(t, target("pub", pub.url(), "public")+"[routes.r]\ntargets = [\"pub\"]\n", nil)
	for _, tc := range []struct {
		value  string
		status int
	}{
		{"strict", 503}, {"STRICT", 503}, {" Strict ", 503},
		{"default", 200}, {"none", 200}, {"", 200},
		{"private", 400}, {"strict,default", 400},
	} {
		t.Run(tc.value, func(t *testing.T) {
			before := pub.hits.Load()
			rep := g.chat(t, "r", "x-hayula-privacy", tc.value)
			if rep.status != tc.status {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
			if hit := pub.hits.Load() - before; (tc.status == 200) != (hit == 1) {
				t.Fatalf("public target hit %d times", hit)
			}
			if tc.status == 400 && rep.errorField(t, "param") != "x-hayula-privacy" {
				t.Fatalf("%s", rep.body)
			}
		})
	}
}

// TestStrictEverySourceEveryEndpoint: every way a request becomes strict (the header, the body
// member, the key, the route) holds on every endpoint (chat, completions, embeddings, Responses,
// whole and streamed, and explain for a chat or a Responses body), while health has set every
// private target aside (the cooldown stage fails open to them, never to the public target the
// privacy stage dropped before it). The public target is never asked; explain says strict and
// names it nowhere a request would go.
func TestStrictEverySourceEveryEndpoint(t *testing.T) {
	priv, pub := newFake(t, "priv"), newFake(t, "pub")
	priv.set(errHandler(500, "internal", "down")) // its health checks fail too
	pub.set(withHealth("pub", healthOK))
	g := newGateway(t, keyBlock("strict", "hk-strict", "strict = true")+keyBlock("plain", "hk-plain")+
		target("priv", priv.url(), "private")+target("pub", pub.url(), "public")+
		"[routes.r]\ntargets = [\"priv\", \"pub\"]\n[routes.rs]\ntargets = [\"priv\", \"pub\"]\nstrict = true\n", nil)
	for range 3 {
		g.checkAll()
	}
	pubChecks, privChecks := pub.hits.Load(), priv.hits.Load() // health checks carry no request
	plain, strictKey := []string{"Authorization", "Bearer hk-plain"}, []string{"Authorization", "Bearer hk-strict"}
	sources := []struct {
		name, model, field string
		hdr                []string
	}{
		{"header", "r", "", append([]string{"x-hayula-privacy", "strict"}, plain...)},
		{"body", "r", `"x-hayula-privacy":"strict",`, plain},
		{"key", "r", "", strictKey},
		{"route", "rs", "", plain},
	}
	for _, src := range sources {
		m := `"model":"` + src.model + `",` + src.field
		for _, ep := range []struct{ path, body string }{
			{"/v1/chat/completions", `{` + m + `"messages":[{"role":"user","content":"hi"}]}`},
			{"/v1/chat/completions", `{` + m + `"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
			{"/v1/completions", `{` + m + `"prompt":"hi"}`},
			{"/v1/completions", `{` + m + `"stream":true,"prompt":"hi"}`},
			{"/v1/embeddings", `{` + m + `"input":"hi"}`},
			{"/v1/embeddings", `{` + m + `"input":["hi","there"]}`},
			{"/v1/responses", `{` + m + `"input":"hi"}`},
			{"/v1/responses", `{` + m + `"stream":true,"input":"hi"}`},
			{"/v1/route/explain", `{` + m + `"messages":[{"role":"user","content":"hi"}]}`},
			{"/v1/route/explain", `{` + m + `"input":"hi"}`},
		} {
			rep := g.post(t, ep.path, ep.body, src.hdr...)
			if ep.path == "/v1/route/explain" {
				var x struct {
					Strict     bool     `json:"strict"`
					Order      []string `json:"order"`
					Reserve    []string `json:"reserve"`
					FailedOpen []string `json:"failed_open"`
				}
				if err := json.Unmarshal(rep.body, &x); err != nil || rep.status != 200 || !x.Strict ||
					slices.Contains(x.Order, "pub") || slices.Contains(x.Reserve, "pub") ||
					!slices.Equal(x.FailedOpen, []string{"cooldown"}) || !slices.Equal(x.Order, []string{"priv"}) {
					t.Errorf("%s, explain %s: %d %s: want strict, failed open to priv alone, pub in neither order nor reserve",
						src.name, ep.body, rep.status, rep.body)
				}
				continue
			}
			if rep.status == 200 && !strings.Contains(string(rep.body), "stream_interrupted") {
				t.Errorf("%s, %s %s: 200 with the only private target down: %s", src.name, ep.path, ep.body, rep.body)
			}
		}
	}
	if n := pub.hits.Load() - pubChecks; n != 0 {
		t.Errorf("the public target was asked %d times by strict requests", n)
	}
	if priv.hits.Load() == privChecks {
		t.Error("the private target was never asked: health did not fail open to it, or nothing was sent")
	}
	// The same gateway serves from the public target when nothing asks for strictness, so the
	// requests above were kept from it by their strictness.
	if rep := g.chat(t, "r", plain...); rep.status != 200 || pub.hits.Load() == pubChecks {
		t.Errorf("a plain request: %d %s", rep.status, rep.body)
	}
}

// TestUnauthenticatedLearnsNothing: on a gateway with keys, a caller without one is refused 401
// by explain (a chat or a Responses body), /v1/models and /metrics, and the refusal names no
// route, target or upstream; /healthz, open to it for liveness probes, says only that the gateway
// is up and how often health failed open: no target, no route, no upstream's error.
func TestUnauthenticatedLearnsNothing(t *testing.T) {
	dead := newFake(t, "zz-dead-target")
	deadURL := dead.url()
	dead.srv.Close()
	g := newGateway(t, keyBlock("k", "hk-k")+target("zz-dead-target", deadURL, "private")+
		"[routes.zz-secret-route]\ntargets = [\"zz-dead-target\"]\n", nil)
	for range 3 {
		g.checkAll()
	}
	if rep := g.chat(t, "zz-secret-route", "Authorization", "Bearer hk-k"); rep.status == 200 {
		t.Fatalf("the dead target answered: %s", rep.body)
	}
	addr := strings.TrimPrefix(strings.TrimSuffix(deadURL, "/v1"), "http://")
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/route/explain", `{"model":"zz-secret-route","messages":[{"role":"user","content":"hi"}]}`},
		{"POST", "/v1/route/explain", `{"model":"zz-secret-route","input":"hi"}`},
		{"GET", "/v1/models", ""},
		{"GET", "/v1/models/zz-secret-route", ""},
		{"GET", "/metrics", ""},
		{"GET", "/healthz", ""},
	} {
		rep := g.do(t, c.method, c.path, c.body, "Content-Type", "application/json")
		want := 401
		if c.path == "/healthz" {
			want = 200
			if body := strings.TrimSpace(string(rep.body)); !strings.HasPrefix(body, `{"status":"ok","fail_open_total":`) ||
				strings.Count(body, ",") != 1 {
				t.Errorf("/healthz: %s, want status and fail_open_total alone", body)
			}
		}
		if rep.status != want {
			t.Errorf("%s %s without a key: %d %s, want %d", c.method, c.path, rep.status, rep.body, want)
		}
		for _, secret := range []string{"zz-dead-target", "zz-secret-route", addr, "refused"} {
			if strings.Contains(string(rep.body), secret) {
				t.Errorf("%s %s without a key tells %q: %s", c.method, c.path, secret, rep.body)
			}
		}
	}
}
