package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestFallbackAnyFalseInBody: x-fallback-on counts every value it is sent, in the body as on
// header lines: a member sent twice (in any spelling) turns fallback off when either says false,
// and a body value reads as a header value does (" false ", "no"), beside a header too. A decoder
// keeps the last member, so a later true or null undid an earlier false, and a body string other
// than "false" beside a header was dropped unread: "no" left fallback on, "maybe" was not refused.
func TestFallbackAnyFalseInBody(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	bodies := map[string]func(opts string) string{
		"/v1/chat/completions": func(o string) string { return `{"model":"saif",` + o + `,` + msgs + `}` },
		"/v1/completions":      func(o string) string { return `{"model":"saif",` + o + `,"prompt":"hi"}` },
		"/v1/responses":        func(o string) string { return `{"model":"saif",` + o + `,"input":"hi"}` },
		"/v1/route/explain":    func(o string) string { return `{"model":"saif",` + o + `,` + msgs + `}` },
	}
	tests := []struct {
		name, opts, header string
		status             int // 0: fallback off, the first target's failure answered as it is
	}{
		{name: "false then true", opts: `"x-fallback-on":false,"x-fallback-on":true`},
		{name: "false then null", opts: `"x-fallback-on":false,"x-fallback-on":null`},
		{name: "false then folded true", opts: `"x-fallback-on":"false","X-Fallback-On":true`},
		{name: "escaped false then true", opts: `"x-fallback-\u006fn":false,"x-fallback-on":"true"`},
		{name: "header true, body spaced false", opts: `"x-fallback-on":" false "`, header: "true"},
		{name: "header true, body no", opts: `"x-fallback-on":"no"`, header: "true"},
		{name: "header true, body upper FALSE", opts: `"x-fallback-on":"FALSE"`, header: "true"},
		{name: "header true, body maybe", opts: `"x-fallback-on":"maybe"`, header: "true", status: 400},
		{name: "maybe then false", opts: `"x-fallback-on":"maybe","x-fallback-on":false`, status: 400},
		{name: "false then a number", opts: `"x-fallback-on":false,"X-FALLBACK-ON":0`, status: 400},
	}
	for path, body := range bodies {
		for _, tc := range tests {
			t.Run(path+" "+tc.name, func(t *testing.T) {
				g, saif, r1, _ := threeChain(t)
				saif.set(errHandler(500, "internal", "boom"))
				req, err := http.NewRequest(http.MethodPost, g.ts.URL+path, strings.NewReader(body(tc.opts)))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				if tc.header != "" {
					req.Header.Set("x-fallback-on", tc.header)
				}
				rep := g.send(t, req)
				switch {
				case tc.status != 0:
					if rep.status != tc.status || rep.errorField(t, "param") != "x-fallback-on" {
						t.Fatalf("%d %s, want %d naming x-fallback-on", rep.status, rep.body, tc.status)
					}
				case path == "/v1/route/explain":
					if rep.status != 200 || rep.json(t)["fallback"] != false {
						t.Fatalf("%d %s, want fallback false", rep.status, rep.body)
					}
				default:
					if rep.status != 500 || r1.hits.Load() != 0 {
						t.Fatalf("status %d, deepseek-r1 hits %d: want saif's 500 and no fallback: %s",
							rep.status, r1.hits.Load(), rep.body)
					}
				}
				if path != "/v1/route/explain" && tc.status == 0 {
					for k := range saif.lastBody(t) {
						if strings.EqualFold(k, "x-fallback-on") {
							t.Errorf("%s forwarded upstream", k)
						}
					}
				}
			})
		}
	}
}
