package server_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// TestPrivacyNeverLeaks: over random routes, target classes, strictness sources and upstream
// failures (cooldowns included), a strict request never reaches a public target.
func TestPrivacyNeverLeaks(t *testing.T) {
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
