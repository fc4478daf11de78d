package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The auto-router's move: model "auto" leaves the route its text classifies to when no target of
// that route can take the request for what it is (images, tools, its length, its strictness),
// for the first route in its move order that can (CONFIG.md, [auto]).

const (
	// reasoningText is classified to deepseek-r1 (intent reasoning), securityText to saif.
	reasoningText = "Explain step by step why the sum of two odd numbers is even, and prove it."
	securityText  = "How do I exploit a buffer overflow in this C program? Is CVE-2021-3156 relevant?"
	// anImage is an inline image part.
	anImage = `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}`
	// aTool is a declared function tool.
	aTool = `[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{}}}}]`
)

// withImage is a chat body for model with one user turn of text and an image.
func withImage(model, text, extra string) string {
	return `{"model":"` + model + `"` + extra + `,"messages":[{"role":"user","content":[{"type":"text","text":` +
		jsonString(text) + `},` + anImage + `]}]}`
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// moveLayout is the demo's layout made smaller: saif (text only, no tools) alone on its route,
// deepseek-r1 text only with the public, paid tail behind it, averroes-q that sees images. Auto's
// move order is saif, deepseek-r1 (the intents'), then averroes-q (the default).
func moveLayout(t *testing.T, extra string, opts ...gwOption) (*gateway, map[string]*fake) {
	t.Helper()
	fakes := map[string]*fake{}
	for _, n := range []string{"saif", "averroes-q", "deepseek-r1", "openrouter"} {
		fakes[n] = newFake(t, n)
	}
	cfg := target("saif", fakes["saif"].url(), "private", "tools = false", "vision = false") +
		target("averroes-q", fakes["averroes-q"].url(), "private") +
		target("deepseek-r1", fakes["deepseek-r1"].url(), "private", "vision = false") +
		target("openrouter", fakes["openrouter"].url(), "public", "vision = false") + `
[routes.saif]
targets = ["saif"]

[routes.averroes-q]
targets = ["averroes-q", "deepseek-r1"]

[routes.deepseek-r1]
targets = ["deepseek-r1", "openrouter"]
guard   = { openrouter = ["overflow"] }

[auto]
` + extra
	return newGateway(t, cfg, nil, opts...), fakes
}

// twoRouteAuto is the [routes] and [auto] of a gateway with two routes of one target each:
// auto sends intent's requests to route (whose target is target) and every other request, a
// specialist hint's included, to def (whose target is defTarget). terms are the intent's own
// (a TOML array; "" for the default rules' terms of that name).
func twoRouteAuto(intent, route, target, def, defTarget, terms string) string {
	s := fmt.Sprintf("\n[routes.%s]\ntargets = [%q]\n\n[routes.%s]\ntargets = [%q]\n\n[auto]\ndefault = %q\nspecialist_route = %q\n\n"+
		"[[auto.intents]]\nname = %q\nroute = %q\n", route, target, def, defTarget, def, def, intent, route)
	if terms != "" {
		s += "terms = " + terms + "\n"
	}
	return s
}

func hits(fakes map[string]*fake) map[string]int64 {
	m := map[string]int64{}
	for n, f := range fakes {
		if h := f.hits.Load(); h > 0 {
			m[n] = h
		}
	}
	return m
}

// TestAutoMovesOffARouteThatCannotServe: an image sent with a reasoning question was a 400 (no
// target of deepseek-r1 sees images) though averroes-q, which auto may choose, sees them; it is
// served there, the intent kept, and the answer says where auto moved from and why. Declared
// tools on a security question move it off saif (no tools) to deepseek-r1, the first of the
// order that takes tools. Whole, streamed and through /v1/responses alike.
func TestAutoMovesOffARouteThatCannotServe(t *testing.T) {
	for _, tc := range []struct {
		name, path, body            string
		route, intent, from, reason string
	}{
		{"image", "/v1/chat/completions", withImage("auto", reasoningText, ""),
			"averroes-q", "reasoning", "deepseek-r1", "vision"},
		{"image/stream", "/v1/chat/completions", withImage("auto", reasoningText, `,"stream":true`),
			"averroes-q", "reasoning", "deepseek-r1", "vision"},
		{"image/responses", "/v1/responses", `{"model":"auto","input":[{"role":"user","content":[{"type":"input_text","text":` +
			jsonString(reasoningText) + `},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}]}`,
			"averroes-q", "reasoning", "deepseek-r1", "vision"},
		{"tools", "/v1/chat/completions", `{"model":"auto","tools":` + aTool +
			`,"messages":[{"role":"user","content":` + jsonString(securityText) + `}]}`,
			"deepseek-r1", "security", "saif", "tools"},
		// Nothing to move for: the classified route serves, and the answer says no more than before.
		{"no image", "/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":` + jsonString(reasoningText) + `}]}`,
			"deepseek-r1", "reasoning", "", ""},
		{"tools where they are", "/v1/chat/completions", `{"model":"auto","tools":` + aTool +
			`,"messages":[{"role":"user","content":` + jsonString(reasoningText) + `}]}`,
			"deepseek-r1", "reasoning", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, fakes := moveLayout(t, "")
			rep := g.post(t, tc.path, tc.body)
			if rep.status != 200 {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			for h, want := range map[string]string{"x-hayula-route": tc.route, "x-hayula-intent": tc.intent,
				"x-hayula-moved-from": tc.from, "x-hayula-move-reason": tc.reason, "x-hayula-target": tc.route} {
				if got := rep.header.Get(h); got != want {
					t.Errorf("%s %q, want %q", h, got, want)
				}
			}
			if got := hits(fakes); len(got) != 1 || got[tc.route] != 1 {
				t.Errorf("asked %v, want %s once", got, tc.route)
			}
		})
	}
}

// TestAutoMoveKeepsWhenNoRouteCan: a request that no route auto may choose can serve keeps the
// classified route and gets its 400, naming the real reason, with no word of a move.
func TestAutoMoveKeepsWhenNoRouteCan(t *testing.T) {
	r1, gen := newFake(t, "r1"), newFake(t, "gen")
	g := newGateway(t, target("r1", r1.url(), "private", "vision = false")+target("gen", gen.url(), "private", "vision = false")+
		twoRouteAuto("reasoning", "deepseek-r1", "r1", "general", "gen", ""), nil)
	rep := g.post(t, "/v1/chat/completions", withImage("auto", reasoningText, ""))
	if rep.status != 400 || rep.errorField(t, "code") != "unsupported_request" ||
		!strings.Contains(rep.errorField(t, "message").(string), "vision") {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	if rep.header.Get("x-hayula-route") != "deepseek-r1" || rep.header.Get("x-hayula-intent") != "reasoning" ||
		rep.header.Get("x-hayula-moved-from") != "" || rep.header.Get("x-hayula-move-reason") != "" {
		t.Errorf("headers %v", rep.header)
	}
	if r1.hits.Load()+gen.hits.Load() != 0 {
		t.Errorf("a target was asked")
	}
}

// TestAutoMoveHintKept: a hint that names a route (or a specialist) is the client's choice, and
// auto does not move off it, even where the route cannot serve the request.
func TestAutoMoveHintKept(t *testing.T) {
	g, fakes := moveLayout(t, "")
	for _, tc := range []struct{ hint, route string }{{"deepseek-r1", "deepseek-r1"}, {"webapp", "saif"}} {
		rep := g.post(t, "/v1/chat/completions", withImage("auto", reasoningText, ""), "x-route-hint", tc.hint)
		if rep.status != 400 || rep.header.Get("x-hayula-route") != tc.route || rep.header.Get("x-hayula-intent") != "hint" ||
			rep.header.Get("x-hayula-moved-from") != "" {
			t.Errorf("hint %s: %d route %q intent %q moved-from %q: %s", tc.hint, rep.status, rep.header.Get("x-hayula-route"),
				rep.header.Get("x-hayula-intent"), rep.header.Get("x-hayula-moved-from"), rep.body)
		}
	}
	if got := hits(fakes); len(got) != 0 {
		t.Errorf("asked %v", got)
	}
}

// TestAutoMoveKeyAllowlist: a key allowed "auto" may use whatever route auto chooses, so auto
// moves its request to a route that can serve it whatever else the key's list names or leaves
// out, as it would have sent it there for its text.
func TestAutoMoveKeyAllowlist(t *testing.T) {
	g, fakes := moveLayout(t, `
[[keys]]
name = "open"
sha256 = "`+sha256hex("hk-open")+`"

[[keys]]
name = "with-q"
sha256 = "`+sha256hex("hk-with-q")+`"
routes = ["auto", "averroes-q"]

[[keys]]
name = "r1-only"
sha256 = "`+sha256hex("hk-r1-only")+`"
routes = ["auto", "deepseek-r1"]

[[keys]]
name = "auto-only"
sha256 = "`+sha256hex("hk-auto-only")+`"
routes = ["auto"]
`)
	for _, tc := range []struct {
		key, route string
		status     int
	}{
		{"hk-open", "averroes-q", 200},
		{"hk-with-q", "averroes-q", 200},
		{"hk-r1-only", "averroes-q", 200},
		{"hk-auto-only", "averroes-q", 200},
	} {
		rep := g.post(t, "/v1/chat/completions", withImage("auto", reasoningText, ""), "Authorization", "Bearer "+tc.key)
		moved := ""
		if tc.status == 200 {
			moved = "deepseek-r1"
		}
		if rep.status != tc.status || rep.header.Get("x-hayula-route") != tc.route || rep.header.Get("x-hayula-moved-from") != moved {
			t.Errorf("%s: %d route %q moved-from %q: %s", tc.key, rep.status, rep.header.Get("x-hayula-route"),
				rep.header.Get("x-hayula-moved-from"), rep.body)
		}
	}
	if got := hits(fakes); len(got) != 1 || got["averroes-q"] != 4 {
		t.Errorf("asked %v, want averroes-q four times", got)
	}
}

// strictLayout: deepseek-r1 is private and text only, the default route public and seeing
// images.
func strictLayout(t *testing.T) (*gateway, *fake, *fake) {
	t.Helper()
	r1, sky := newFake(t, "r1"), newFake(t, "sky")
	g := newGateway(t, target("r1", r1.url(), "private", "vision = false")+target("sky", sky.url(), "public")+
		twoRouteAuto("reasoning", "deepseek-r1", "r1", "sky", "sky", "")+`
[[keys]]
name = "strict"
sha256 = "`+sha256hex("hk-strict")+`"
strict = true

[[keys]]
name = "plain"
sha256 = "`+sha256hex("hk-plain")+`"
`, nil)
	return g, r1, sky
}

// TestAutoMoveStrict: a strict request (by its key or by its own option) is moved only to a
// route with a private target that can take it: never to a public one. The same request
// without strictness is moved there.
func TestAutoMoveStrict(t *testing.T) {
	g, r1, sky := strictLayout(t)
	for _, hdr := range [][]string{
		{"Authorization", "Bearer hk-strict"},
		{"Authorization", "Bearer hk-plain", "x-hayula-privacy", "strict"},
	} {
		rep := g.post(t, "/v1/chat/completions", withImage("auto", reasoningText, ""), hdr...)
		if rep.status != 400 || rep.header.Get("x-hayula-route") != "deepseek-r1" || rep.header.Get("x-hayula-moved-from") != "" {
			t.Errorf("%v: %d route %q moved-from %q: %s", hdr, rep.status, rep.header.Get("x-hayula-route"),
				rep.header.Get("x-hayula-moved-from"), rep.body)
		}
	}
	if sky.hits.Load()+r1.hits.Load() != 0 {
		t.Fatalf("a strict request was sent: sky %d, r1 %d", sky.hits.Load(), r1.hits.Load())
	}
	rep := g.post(t, "/v1/chat/completions", withImage("auto", reasoningText, ""), "Authorization", "Bearer hk-plain")
	if rep.status != 200 || rep.header.Get("x-hayula-route") != "sky" || rep.header.Get("x-hayula-moved-from") != "deepseek-r1" {
		t.Errorf("plain: %d route %q moved-from %q: %s", rep.status, rep.header.Get("x-hayula-route"),
			rep.header.Get("x-hayula-moved-from"), rep.body)
	}
}

// TestAutoMoveNotForHealth: a classified route whose every target is failing and benched is
// still the route tried (health never denies service, nor moves a request).
func TestAutoMoveNotForHealth(t *testing.T) {
	g, fakes := moveLayout(t, "")
	fakes["deepseek-r1"].set(errHandler(500, "internal", "down"))
	body := `{"model":"auto","messages":[{"role":"user","content":` + jsonString(reasoningText) + `}]}`
	for i := range 5 {
		rep := g.post(t, "/v1/chat/completions", body)
		if rep.header.Get("x-hayula-route") != "deepseek-r1" || rep.header.Get("x-hayula-moved-from") != "" {
			t.Fatalf("request %d: %d route %q moved-from %q", i, rep.status, rep.header.Get("x-hayula-route"),
				rep.header.Get("x-hayula-moved-from"))
		}
	}
	if got := hits(fakes); got["deepseek-r1"] != 5 || len(got) != 1 {
		t.Errorf("asked %v, want deepseek-r1 five times", got)
	}
}

// TestAutoMoveExplain: explain says that auto moved, from where and why, with the classified
// route's drops and the routes passed over on the way; and carries the answer's headers.
func TestAutoMoveExplain(t *testing.T) {
	g, fakes := moveLayout(t, "")
	rep := g.post(t, "/v1/route/explain", withImage("auto", reasoningText, ""))
	if rep.status != 200 {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	var x struct {
		Route string `json:"route"`
		Auto  struct {
			Route  string `json:"route"`
			Intent string `json:"intent"`
		} `json:"auto"`
		Moved *struct {
			From   string `json:"from"`
			Reason string `json:"reason"`
			Drops  []struct {
				Target, Filter string
			} `json:"drops"`
			Passed []struct {
				Route, Reason string
			} `json:"passed"`
		} `json:"moved"`
		Error any `json:"error"`
	}
	if err := json.Unmarshal(rep.body, &x); err != nil {
		t.Fatal(err)
	}
	if x.Route != "averroes-q" || x.Auto.Route != "deepseek-r1" || x.Auto.Intent != "reasoning" || x.Error != nil || x.Moved == nil {
		t.Fatalf("explain %s", rep.body)
	}
	if x.Moved.From != "deepseek-r1" || x.Moved.Reason != "vision" || len(x.Moved.Drops) != 2 ||
		x.Moved.Drops[0].Target != "deepseek-r1" || x.Moved.Drops[0].Filter != "vision" ||
		x.Moved.Drops[1].Target != "openrouter" || x.Moved.Drops[1].Filter != "vision" ||
		len(x.Moved.Passed) != 1 || x.Moved.Passed[0].Route != "saif" || x.Moved.Passed[0].Reason != "vision" {
		t.Errorf("moved %+v", *x.Moved)
	}
	if rep.header.Get("x-hayula-route") != "averroes-q" || rep.header.Get("x-hayula-intent") != "reasoning" ||
		rep.header.Get("x-hayula-moved-from") != "deepseek-r1" || rep.header.Get("x-hayula-move-reason") != "vision" {
		t.Errorf("headers %v", rep.header)
	}
	// Kept: no move to show.
	rep = g.post(t, "/v1/route/explain", withImage("auto", reasoningText, ""), "x-route-hint", "deepseek-r1")
	if m := rep.json(t); m["moved"] != nil || m["route"] != "deepseek-r1" || rep.header.Get("x-hayula-moved-from") != "" {
		t.Errorf("hinted explain %s", rep.body)
	}
	if got := hits(fakes); len(got) != 0 {
		t.Errorf("explain asked %v", got)
	}
}
