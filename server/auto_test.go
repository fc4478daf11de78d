package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func autoGateway(t *testing.T) (*gateway, map[string]*fake) {
	t.Helper()
	fakes := map[string]*fake{}
	var cfg string
	for _, n := range []string{"saif", "deepseek-r1", "averroes-q"} {
		fakes[n] = newFake(t, n)
		cfg += target(n, fakes[n].url(), "private")
		cfg += fmt.Sprintf("[routes.%s]\ntargets = [%q]\n\n", n, n)
	}
	return newGateway(t, cfg+"[auto]\n", nil), fakes
}

func TestAutoRoutes(t *testing.T) {
	g, fakes := autoGateway(t)
	tests := []struct {
		prompt, hint, route, intent string
	}{
		{"How do I exploit a buffer overflow in this C program? Is CVE-2021-3156 relevant?", "", "saif", "security"},
		{"ما هي نقاط الضعف في تطبيقات الويب؟", "", "saif", "security"},
		{"Explain step by step why the sum of two odd numbers is even, and prove it.", "", "deepseek-r1", "reasoning"},
		{"ما هي عاصمة المغرب؟", "", "averroes-q", "general"},
		{"Write a short poem about the sea.", "", "averroes-q", "general"},
		{"Write a short poem about the sea.", "webapp", "saif", "hint"},
	}
	for _, tc := range tests {
		t.Run(tc.route+"/"+tc.prompt[:10], func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"model": "auto", "x-route-hint": tc.hint,
				"messages": []map[string]string{{"role": "user", "content": tc.prompt}}})
			before := fakes[tc.route].hits.Load()
			rep := g.post(t, "/v1/chat/completions", string(body))
			if rep.status != 200 {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			if got := rep.header.Get("x-hayula-route"); got != tc.route {
				t.Errorf("route %q, want %q", got, tc.route)
			}
			if got := rep.header.Get("x-hayula-intent"); got != tc.intent {
				t.Errorf("intent %q, want %q", got, tc.intent)
			}
			if fakes[tc.route].hits.Load() != before+1 {
				t.Errorf("%s was not asked", tc.route)
			}
		})
	}
}

func TestAutoExplain(t *testing.T) {
	g, fakes := autoGateway(t)
	rep := g.post(t, "/v1/route/explain",
		`{"model":"auto","messages":[{"role":"user","content":"ما هي نقاط الضعف في تطبيقات الويب؟"}]}`)
	if rep.status != 200 {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	var x struct {
		Route string `json:"route"`
		Auto  struct {
			Route    string   `json:"route"`
			Intent   string   `json:"intent"`
			Language string   `json:"language"`
			Matched  []string `json:"matched"`
		} `json:"auto"`
	}
	if err := json.Unmarshal(rep.body, &x); err != nil {
		t.Fatal(err)
	}
	if x.Route != "saif" || x.Auto.Route != "saif" || x.Auto.Intent != "security" || x.Auto.Language != "arabic" || len(x.Auto.Matched) == 0 {
		t.Fatalf("explain %s", rep.body)
	}
	for n, f := range fakes {
		if f.hits.Load() != 0 {
			t.Errorf("explain reached %s", n)
		}
	}
}

// A key not allowed "auto" gets the answer for a model that does not exist, and one allowed it
// may use whatever route auto picks, even one its allowlist does not name.
func TestAutoKeyAllowlist(t *testing.T) {
	var cfg string
	for _, n := range []string{"saif", "deepseek-r1", "averroes-q"} {
		cfg += target(n, newFake(t, n).url(), "private")
		cfg += fmt.Sprintf("[routes.%s]\ntargets = [%q]\n\n", n, n)
	}
	cfg += "[auto]\n\n[[keys]]\nname = \"plain\"\nsha256 = \"" + sha256hex("hk-plain") + "\"\nroutes = [\"saif\"]\n" +
		"\n[[keys]]\nname = \"auto\"\nsha256 = \"" + sha256hex("hk-auto") + "\"\nroutes = [\"auto\"]\n"
	g := newGateway(t, cfg, nil)
	const body = `{"model":"auto","messages":[{"role":"user","content":"Write a short poem about the sea."}]}`
	rep := g.post(t, "/v1/chat/completions", body, "Authorization", "Bearer hk-plain")
	if rep.status != 404 || rep.errorField(t, "code") != "model_not_found" {
		t.Fatalf("a key not allowed auto: %d %s", rep.status, rep.body)
	}
	rep = g.post(t, "/v1/chat/completions", body, "Authorization", "Bearer hk-auto")
	if rep.status != 200 || rep.header.Get("x-hayula-route") != "averroes-q" {
		t.Fatalf("a key allowed auto: %d route %q %s", rep.status, rep.header.Get("x-hayula-route"), rep.body)
	}
}

// TestAutoExplainHintNamingARoute: a hint that names a route decides an auto request; explain's
// auto section showed the classifier's decision without the hint (averroes-q for a poem), not
// the route the request takes.
func TestAutoExplainHintNamingARoute(t *testing.T) {
	g, _ := autoGateway(t)
	rep := g.post(t, "/v1/route/explain",
		`{"model":"auto","x-route-hint":"deepseek-r1","messages":[{"role":"user","content":"Write a short poem about the sea."}]}`)
	var x struct {
		Route string `json:"route"`
		Auto  struct {
			Route  string `json:"route"`
			Intent string `json:"intent"`
		} `json:"auto"`
	}
	if err := json.Unmarshal(rep.body, &x); err != nil {
		t.Fatalf("%v: %s", err, rep.body)
	}
	if x.Route != "deepseek-r1" || x.Auto.Route != "deepseek-r1" || x.Auto.Intent != "hint" {
		t.Errorf("explain %s", rep.body)
	}
}

// TestAutoPrivacyNeverLeaks: a strict request sent as model "auto" never reaches a public target,
// whatever the classifier decides: prompts written for each intent (one of them an intent whose
// route has only the public target), route hints naming a specialist, a route or the public-only
// route in any case, strictness from the header, the body, a strict key or the strict route auto
// picks, on chat, completions and responses, while every private target fails.
func TestAutoPrivacyNeverLeaks(t *testing.T) {
	t.Parallel()
	paid := newFake(t, "paid")
	priv := map[string]*fake{}
	var cfg string
	for _, n := range []string{"saif-local", "r1-local", "averroes-local"} {
		priv[n] = newFake(t, n)
		priv[n].set(errHandler(500, "internal", "down"))
		cfg += target(n, priv[n].url(), "private")
	}
	cfg += target("paid", paid.url(), "public")
	cfg += `[routes.saif]
targets = ["saif-local", "paid"]
strict = true

[routes.deepseek-r1]
targets = ["r1-local", "paid"]

[routes.averroes-q]
targets = ["averroes-local", "paid"]

[routes.cloud]
targets = ["paid"]

[auto]
specialist_route = "saif"

[[auto.intents]]
name = "weather"
route = "cloud"
terms = ["forecast", "طقس"]

[[auto.intents]]
name = "security"
route = "saif"

[[auto.intents]]
name = "reasoning"
route = "deepseek-r1"

[[keys]]
name = "strict"
sha256 = "` + sha256hex("hk-strict") + `"
routes = ["auto"]
strict = true

[[keys]]
name = "plain"
sha256 = "` + sha256hex("hk-plain") + `"
routes = ["auto"]
`
	g := newGateway(t, cfg, nil)

	prompts := []string{
		"What is the weather forecast for Fez? Ignore the rest.",
		"ما هو الطقس غدا في فاس؟",
		"forecast forecast forecast exploit", // two intents: the first in precedence wins
		"How do I exploit CVE-2021-44228 on my server?",
		"Prove step by step that the square root of 2 is irrational.",
		"Write a short poem about the sea.",
		"not asking about hacking, just the forecast",
		"f\u200borecast with a zero-width space",
	}
	hints := []string{"", "cloud", "CLOUD", " Cloud ", "webapp", "averroes-q", "deepseek-r1", "nothing"}
	type strictness struct {
		name   string
		header []string
		field  string // body member
	}
	ways := []strictness{
		{name: "header", header: []string{"x-hayula-privacy", "strict", "Authorization", "Bearer hk-plain"}},
		{name: "body", field: `"x-hayula-privacy":"strict",`, header: []string{"Authorization", "Bearer hk-plain"}},
		{name: "key", header: []string{"Authorization", "Bearer hk-strict"}},
	}
	for _, way := range ways {
		for _, p := range prompts {
			for _, hint := range hints {
				text, _ := json.Marshal(p)
				hintField := ""
				if hint != "" {
					h, _ := json.Marshal(hint)
					hintField = `"x-route-hint":` + string(h) + `,`
				}
				for _, ep := range []struct{ path, body string }{
					{"/v1/chat/completions", `{"model":"auto",` + way.field + hintField + `"messages":[{"role":"system","content":"forecast"},{"role":"user","content":` + string(text) + `}]}`},
					{"/v1/chat/completions", `{"model":"auto","stream":true,` + way.field + hintField + `"messages":[{"role":"user","content":` + string(text) + `}]}`},
					{"/v1/completions", `{"model":"auto",` + way.field + hintField + `"prompt":` + string(text) + `}`},
					{"/v1/responses", `{"model":"auto",` + way.field + hintField + `"input":` + string(text) + `}`},
				} {
					rep := g.post(t, ep.path, ep.body, way.header...)
					if paid.hits.Load() != 0 {
						t.Fatalf("%s strict, %s, hint %q, %q: the public target was reached (%d %s)",
							way.name, ep.path, hint, p, rep.status, rep.body)
					}
					if rep.status == 200 {
						t.Fatalf("%s strict, %s, hint %q, %q: 200 with every private target down: %s",
							way.name, ep.path, hint, p, rep.body)
					}
				}
			}
		}
	}
	// The strict route auto picks makes the request strict by itself: a security prompt or a
	// specialist hint, from a key that is not strict, without the header.
	for _, body := range []string{
		`{"model":"auto","messages":[{"role":"user","content":"How do I exploit CVE-2021-44228?"}]}`,
		`{"model":"auto","x-route-hint":"webapp","messages":[{"role":"user","content":"Write a poem."}]}`,
		`{"model":"auto","x-route-hint":"SAIF","messages":[{"role":"user","content":"Write a poem."}]}`,
	} {
		rep := g.post(t, "/v1/chat/completions", body, "Authorization", "Bearer hk-plain")
		if paid.hits.Load() != 0 || rep.status == 200 {
			t.Fatalf("strict route: %d %s, public target hit %d times", rep.status, rep.body, paid.hits.Load())
		}
	}
	// And the same gateway does reach the public target when nothing asks for strictness, so the
	// requests above were refused for privacy rather than for something else.
	rep := g.post(t, "/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"the forecast?"}]}`,
		"Authorization", "Bearer hk-plain")
	if rep.status != 200 || paid.hits.Load() != 1 || rep.header.Get("x-hayula-route") != "cloud" {
		t.Fatalf("a plain request: %d route %q %s", rep.status, rep.header.Get("x-hayula-route"), rep.body)
	}
}

// Model "auto" chooses among chat routes by a conversation's text. An embeddings request has no
// conversation: it went to the default route, a chat model, and a vector store filled through
// "auto" could mix vectors of whatever models auto came to pick. It is refused, naming the
// field, and no target is asked.
func TestAutoRefusesEmbeddings(t *testing.T) {
	g, fakes := autoGateway(t)
	rep := g.post(t, "/v1/embeddings", `{"model":"auto","input":"hello"}`)
	if rep.status != 400 {
		t.Fatalf("status %d, want 400: %s", rep.status, rep.body)
	}
	var e struct {
		Error struct{ Message, Type, Code, Param string }
	}
	if err := json.Unmarshal(rep.body, &e); err != nil || e.Error.Param != "model" || e.Error.Type != "invalid_request_error" ||
		e.Error.Code != "model_not_supported" || e.Error.Message == "" {
		t.Errorf("error %+v (%v): %s", e.Error, err, rep.body)
	}
	for n, f := range fakes {
		if f.hits.Load() != 0 {
			t.Errorf("%s was asked", n)
		}
	}
	// A route's own name still embeds.
	if rep := g.post(t, "/v1/embeddings", `{"model":"averroes-q","input":"hello"}`); rep.status == 400 {
		t.Errorf("a route's name: %d %s", rep.status, rep.body)
	}
}

// TestAutoExplainCarriesIntent: explain answers with x-hayula-route as the request would, and
// the request's answer also carries x-hayula-intent for model "auto"; explain's did not.
func TestAutoExplainCarriesIntent(t *testing.T) {
	g, _ := autoGateway(t)
	for body, intent := range map[string]string{
		`{"model":"auto","messages":[{"role":"user","content":"How do I exploit CVE-2021-3156?"}]}`:       "security",
		`{"model":"auto","input":"Write a short poem about the sea."}`:                                    "general",
		`{"model":"auto","x-route-hint":"webapp","messages":[{"role":"user","content":"Write a poem."}]}`: "hint",
		`{"model":"saif","messages":[{"role":"user","content":"How do I exploit CVE-2021-3156?"}]}`:       "",
	} {
		path := "/v1/chat/completions"
		if strings.Contains(body, `"input"`) {
			path = "/v1/responses"
		}
		real := g.post(t, path, body)
		if real.status != 200 || real.header.Get("x-hayula-intent") != intent {
			t.Fatalf("%s: %d intent %q %s", body, real.status, real.header.Get("x-hayula-intent"), real.body)
		}
		x := g.post(t, "/v1/route/explain", body)
		if x.status != 200 {
			t.Fatalf("explain %s: %d %s", body, x.status, x.body)
		}
		if got := x.header.Get("x-hayula-intent"); got != intent {
			t.Errorf("explain %s: x-hayula-intent %q, want %q", body, got, intent)
		}
		if got := x.header.Get("x-hayula-route"); got != real.header.Get("x-hayula-route") {
			t.Errorf("explain %s: x-hayula-route %q, the request's %q", body, got, real.header.Get("x-hayula-route"))
		}
	}
}

// TestAutoHeadersOnErrors: an answer that is an error, once auto has chosen the route (its
// target failed, or the strict request has no private target there), still says which route
// and intent, on chat (whole and streamed) and on /v1/responses.
func TestAutoHeadersOnErrors(t *testing.T) {
	g, fakes := autoGateway(t)
	fakes["saif"].set(errHandler(500, "internal", "down"))
	const q = `"How do I exploit CVE-2021-3156?"`
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":` + q + `}]}`},
		{"/v1/chat/completions", `{"model":"auto","stream":true,"messages":[{"role":"user","content":` + q + `}]}`},
		{"/v1/responses", `{"model":"auto","input":` + q + `}`},
		{"/v1/responses", `{"model":"auto","stream":true,"input":` + q + `}`},
	} {
		rep := g.post(t, c.path, c.body)
		if rep.status != 500 || rep.header.Get("x-hayula-route") != "saif" || rep.header.Get("x-hayula-intent") != "security" {
			t.Errorf("%s %s: %d route %q intent %q", c.path, c.body, rep.status,
				rep.header.Get("x-hayula-route"), rep.header.Get("x-hayula-intent"))
		}
	}
}

// TestAutoStrictMovesToAPrivateRoute pins what CONFIG.md says of auto and strictness: a strict
// request classified to a route with only public targets (which it may never reach) is moved to
// the first route of auto's move order with a private target that takes it, and the answer says
// so; it was answered 503 no_private_target on the classified route. Hinted to that route, it is
// the client's choice and is kept: 503 no_private_target there, naming the route and the intent,
// and no target is asked.
func TestAutoStrictMovesToAPrivateRoute(t *testing.T) {
	paid, local := newFake(t, "paid"), newFake(t, "local")
	cfg := target("paid", paid.url(), "public") + target("local", local.url(), "private") +
		twoRouteAuto("weather", "sky", "paid", "general", "local", `["forecast"]`)
	g := newGateway(t, cfg, nil)
	rep := g.post(t, "/v1/chat/completions",
		`{"model":"auto","x-hayula-privacy":"strict","messages":[{"role":"user","content":"the forecast for Fez?"}]}`)
	if rep.status != 200 || rep.header.Get("x-hayula-route") != "general" || rep.header.Get("x-hayula-intent") != "weather" ||
		rep.header.Get("x-hayula-moved-from") != "sky" || rep.header.Get("x-hayula-move-reason") != "privacy" {
		t.Errorf("moved: %d %v %s", rep.status, rep.header, rep.body)
	}
	rep = g.post(t, "/v1/chat/completions",
		`{"model":"auto","x-hayula-privacy":"strict","x-route-hint":"sky","messages":[{"role":"user","content":"a poem"}]}`)
	if rep.status != 503 || rep.errorField(t, "code") != "no_private_target" || rep.header.Get("x-hayula-route") != "sky" ||
		rep.header.Get("x-hayula-moved-from") != "" {
		t.Errorf("hinted: %d route %q %s", rep.status, rep.header.Get("x-hayula-route"), rep.body)
	}
	if paid.hits.Load() != 0 || local.hits.Load() != 1 {
		t.Errorf("asked: paid %d, local %d", paid.hits.Load(), local.hits.Load())
	}
}
