package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// hintGateway is a route of two SAIF targets whose specialists differ, then an OpenAI target.
func hintGateway(t *testing.T, tail bool) (*gateway, *adUpstream, *adUpstream) {
	t.Helper()
	a, b := newAdUpstream(t, saifScript), newAdUpstream(t, saifScript)
	other := newFake(t, "general")
	targets := `["saif-a", "saif-b"]`
	if tail {
		targets = `["saif-a", "saif-b", "general"]`
	}
	g := newGateway(t, fmt.Sprintf(`
[targets.saif-a]
adapter     = "saif"
url         = %q
specialists = ["malware", "crypto"]

[targets.saif-b]
adapter     = "saif"
url         = %q
specialists = ["webapp", "malware"]

%s
[routes.saif]
targets = %s
`, a.srv.URL, b.srv.URL, target("general", other.url(), "private"), targets), nil)
	return g, a, b
}

// TestHintOnlyTheSecondSAIFTargetLists: a SAIF target whose specialists do not include the hint
// is not eligible (filter "specialist", shown by explain), and the target that lists it serves;
// the 400 unknown_specialist comes only when no SAIF target of the route lists the hint, and
// explain predicts it.
func TestHintOnlyTheSecondSAIFTargetLists(t *testing.T) {
	for _, tail := range []bool{false, true} {
		g, a, b := hintGateway(t, tail)
		r := g.chat(t, "saif", "x-route-hint", "WebApp")
		if r.status != http.StatusOK {
			t.Fatalf("tail %v: status %d: %s", tail, r.status, r.body)
		}
		if got := r.header.Get("X-Hayula-Chain"); got != "saif-b" {
			t.Errorf("tail %v: chain %q, want saif-b", tail, got)
		}
		if a.count() != 0 {
			t.Errorf("tail %v: saif-a, which lists no webapp, was asked", tail)
		}
		if got := b.last()["specialist"]; got != "webapp" {
			t.Errorf("tail %v: saif-b got specialist %v", tail, got)
		}
		x := g.post(t, "/v1/route/explain", `{"model":"saif","messages":[{"role":"user","content":"hi"}]}`, "x-route-hint", "webapp").json(t)
		drops, _ := x["drops"].([]any)
		if len(drops) != 1 || drops[0].(map[string]any)["target"] != "saif-a" || drops[0].(map[string]any)["filter"] != "specialist" {
			t.Errorf("tail %v: explain drops %v, want saif-a by specialist", tail, x["drops"])
		}
		if x["error"] != nil {
			t.Errorf("tail %v: explain predicts an error: %v", tail, x["error"])
		}

		// Listed by neither: 400 before any target, the general one included, and explain says so.
		r = g.chat(t, "saif", "x-route-hint", "webap")
		if r.status != http.StatusBadRequest || r.errorField(t, "code") != "unknown_specialist" {
			t.Fatalf("tail %v: typo: status %d: %s", tail, r.status, r.body)
		}
		if msg := r.errorField(t, "message").(string); !strings.Contains(msg, "crypto, malware, webapp") {
			t.Errorf("tail %v: message lists not every valid specialist: %s", tail, msg)
		}
		x = g.post(t, "/v1/route/explain", `{"model":"saif","messages":[{"role":"user","content":"hi"}]}`, "x-route-hint", "webap").json(t)
		e, _ := x["error"].(map[string]any)
		if e == nil || e["code"] != "unknown_specialist" || e["status"] != float64(400) {
			t.Errorf("tail %v: explain error %v, want 400 unknown_specialist", tail, x["error"])
		}
		if a.count()+b.count() != 1 {
			t.Errorf("tail %v: SAIF asked %d times, want 1", tail, a.count()+b.count())
		}
	}
}

// TestHintEchoClipped: the unknown_specialist message and explain's route_hint repeat at most
// maxEcho bytes of the client's hint.
func TestHintEchoClipped(t *testing.T) {
	g, _, _ := hintGateway(t, false)
	long := strings.Repeat("h", 5000)
	r := g.post(t, "/v1/chat/completions", fmt.Sprintf(`{"model":"saif","x-route-hint":%q,"messages":[{"role":"user","content":"hi"}]}`, long))
	if r.status != http.StatusBadRequest {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if msg := r.errorField(t, "message").(string); len(msg) > 1000 {
		t.Errorf("message is %d bytes: the hint is repeated whole", len(msg))
	}
	x := g.post(t, "/v1/route/explain", fmt.Sprintf(`{"model":"saif","x-route-hint":%q,"messages":[{"role":"user","content":"hi"}]}`, long)).json(t)
	if h, _ := x["request"].(map[string]any)["route_hint"].(string); len(h) > 300 {
		t.Errorf("explain's route_hint is %d bytes", len(h))
	}
	if e, _ := x["error"].(map[string]any); e == nil || len(e["message"].(string)) > 1000 {
		t.Errorf("explain error %v", x["error"])
	}
}

// TestHintSentTwiceMustAgree: x-route-hint on several header lines, or as a header and a body
// field, that name different hints is refused 400 invalid_value (a proxy that reads another line
// would route elsewhere); the same hint repeated, in any case, is one hint.
func TestHintSentTwiceMustAgree(t *testing.T) {
	g, _, b := hintGateway(t, false)
	send := func(body string, hints ...string) reply {
		req, _ := http.NewRequest(http.MethodPost, g.ts.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for _, h := range hints {
			req.Header.Add("X-Route-Hint", h)
		}
		return g.send(t, req)
	}
	plain := `{"model":"saif","messages":[{"role":"user","content":"hi"}]}`
	withBody := `{"model":"saif","x-route-hint":"crypto","messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		name, body string
		hints      []string
		want       int
	}{
		{"two lines", plain, []string{"webapp", "crypto"}, 400},
		{"header and body", withBody, []string{"webapp"}, 400},
		{"same twice", plain, []string{"webapp", " WEBAPP "}, 200},
		{"header and body agree", withBody, []string{"Crypto"}, 200},
	} {
		r := send(c.body, c.hints...)
		if r.status != c.want {
			t.Errorf("%s: status %d, want %d: %s", c.name, r.status, c.want, r.body)
			continue
		}
		if c.want == 400 && (r.errorField(t, "code") != "invalid_value" || r.errorField(t, "param") != "x-route-hint") {
			t.Errorf("%s: %s", c.name, r.body)
		}
	}
	_ = b
}

func (u *adUpstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.bodies)
}

// TestHintIgnoredWhereSAIFDoesNotServe: a request no saif target of the route could take for
// what it is (/v1/embeddings, filter endpoint; tools, filter tools; a JSON response_format,
// filter format) does not have its hint judged against them: the openai target serves it, as it
// did before the hint was judged per route.
func TestHintIgnoredWhereSAIFDoesNotServe(t *testing.T) {
	g, _, _ := hintGateway(t, true)
	for path, body := range map[string]string{
		"/v1/embeddings": `{"model":"saif","input":"hi"}`,
		"/v1/chat/completions": `{"model":"saif","messages":[{"role":"user","content":"hi"}],` +
			`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`,
		"/v1/chat/completions#json": `{"model":"saif","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`,
	} {
		p, _, _ := strings.Cut(path, "#")
		r := g.post(t, p, body, "x-route-hint", "gardening")
		if r.status != http.StatusOK {
			t.Errorf("%s: status %d: %s", path, r.status, r.body)
		}
	}
}
