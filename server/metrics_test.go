package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// scrape reads GET /metrics and returns its sample lines, "series value", as a set.
func scrape(t *testing.T, g *gateway, hdr ...string) (reply, map[string]bool) {
	t.Helper()
	rep := g.do(t, http.MethodGet, "/metrics", "", hdr...)
	lines := map[string]bool{}
	for _, l := range strings.Split(string(rep.body), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines[l] = true
		}
	}
	return rep, lines
}

// TestMetricsCountWhatHappened: a request that falls through from a failing target to the
// next, one for an unknown model and one that both targets fail, then a scrape: each is
// counted by route and status, each attempt by target and result, and the served one by who
// served it.
func TestMetricsCountWhatHappened(t *testing.T) {
	bad, good := newFake(t, "bad"), newFake(t, "good")
	bad.set(errHandler(503, "overloaded", "busy"))
	cfg := target("bad", bad.url(), "private") + target("good", good.url(), "private") +
		"[routes.r]\ntargets = [\"bad\", \"good\"]\n"
	g := newGateway(t, cfg, nil)

	if rep := g.chat(t, "r"); rep.status != 200 {
		t.Fatalf("chat: %d %s", rep.status, rep.body)
	}
	if rep := g.chat(t, "nope"); rep.status != 404 {
		t.Fatalf("unknown model: %d %s", rep.status, rep.body)
	}
	good.set(errHandler(400, "bad_thing", "no"))
	// A request error ends the chain and is answered as it is (TestChainStopAnswersAsIs).
	if rep := g.chat(t, "r"); rep.status != 400 {
		t.Fatalf("refused: %d %s", rep.status, rep.body)
	}

	want := []string{
		`hayula_requests_total{endpoint="chat",route="r",code="200"} 1`,
		`hayula_requests_total{endpoint="chat",route="r",code="400"} 1`,
		`hayula_requests_total{endpoint="chat",route="",code="404"} 1`,
		`hayula_request_duration_seconds_count{endpoint="chat",route="r"} 2`,
		`hayula_upstream_attempts_total{target="bad",result="server_error"} 2`,
		`hayula_upstream_attempts_total{target="good",result="ok"} 1`,
		`hayula_upstream_attempts_total{target="good",result="request"} 1`,
		`hayula_upstream_first_response_seconds_count{target="good"} 1`,
		`hayula_served_total{route="r",target="good"} 1`,
		`hayula_tokens_total{route="r",target="good",kind="prompt"} 3`,
		`hayula_tokens_total{route="r",target="good",kind="completion"} 3`,
		`hayula_upstream_in_flight{target="good"} 0`,
		`hayula_target_available{target="good"} 1`,
		`hayula_failed_open_total 0`,
	}
	var lines map[string]bool
	var rep reply
	// The counts are taken after the answer is written: a scrape right after may come first.
	settles(func() bool {
		rep, lines = scrape(t, g)
		return lines[want[1]] && lines[want[2]]
	})
	if rep.status != 200 || rep.header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("scrape: %d %q", rep.status, rep.header.Get("Content-Type"))
	}
	for _, w := range want {
		if !lines[w] {
			t.Errorf("no line %q in:\n%s", w, rep.body)
		}
	}
	if strings.Contains(string(rep.body), `route="nope"`) {
		t.Error("an unknown model's name became a label value (a client could grow the series without bound)")
	}
}

// TestMetricsNeedAKeyAndCanBeOff: with keys, a scrape needs one like any other request; with
// metrics = false there is no /metrics at all.
func TestMetricsNeedAKeyAndCanBeOff(t *testing.T) {
	up := newFake(t, "up")
	base := target("up", up.url(), "private") + "[routes.r]\ntargets = [\"up\"]\n"
	keyed := newGateway(t, "[[keys]]\nname = \"ops\"\nsha256 = \""+sha256hex("hk-ops")+"\"\n\n"+base, nil)
	if rep, _ := scrape(t, keyed); rep.status != 401 {
		t.Errorf("scrape without a key: %d %s, want 401", rep.status, rep.body)
	}
	if rep, _ := scrape(t, keyed, "Authorization", "Bearer hk-ops"); rep.status != 200 {
		t.Errorf("scrape with a key: %d %s, want 200", rep.status, rep.body)
	}

	off := newGateway(t, "metrics = false\n"+base, nil)
	if rep := off.chat(t, "r"); rep.status != 200 {
		t.Fatalf("chat: %d %s", rep.status, rep.body)
	}
	if rep, _ := scrape(t, off); rep.status != 404 || rep.errorField(t, "code") != "unknown_url" {
		t.Errorf("metrics = false: /metrics answered %d %s, want 404 unknown_url", rep.status, rep.body)
	}
}

// TestMetricsCountStreamedTokens: a stream's usage chunk (the client asked for it) is counted; the
// first chunk's "usage": null counts nothing.
func TestMetricsCountStreamedTokens(t *testing.T) {
	up := newFake(t, "up")
	up.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":2,\"total_tokens\":42}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	g := newGateway(t, target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n", nil)
	body := `{"model":"r","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	for i := 0; i < 2; i++ {
		if rep := g.post(t, "/v1/chat/completions", body); rep.status != 200 || !strings.Contains(string(rep.body), `"prompt_tokens":40`) {
			t.Fatalf("stream: %d %s", rep.status, rep.body)
		}
	}
	want := []string{
		`hayula_tokens_total{route="r",target="up",kind="prompt"} 80`,
		`hayula_tokens_total{route="r",target="up",kind="completion"} 4`,
	}
	var lines map[string]bool
	var rep reply
	settles(func() bool {
		rep, lines = scrape(t, g)
		return lines[want[0]]
	})
	for _, w := range want {
		if !lines[w] {
			t.Errorf("no line %q in:\n%s", w, rep.body)
		}
	}
}

// TestMetricsRefuseARestrictedKey: the series name every route and target, and a key limited to
// some routes is told nothing of the others (an unknown model and a forbidden one get the same
// 404). Such a key once read them all at /metrics; it is refused there, and a key without a
// routes list still scrapes.
func TestMetricsRefuseARestrictedKey(t *testing.T) {
	up, hidden := newFake(t, "up"), newFake(t, "hidden")
	g := newGateway(t, target("up", up.url(), "private")+target("hidden", hidden.url(), "private")+
		"[routes.r]\ntargets = [\"up\"]\n\n[routes.secret]\ntargets = [\"hidden\"]\n\n"+
		"[[keys]]\nname = \"app\"\nsha256 = \""+sha256hex("hk-app")+"\"\nroutes = [\"r\"]\n\n"+
		"[[keys]]\nname = \"ops\"\nsha256 = \""+sha256hex("hk-ops")+"\"\n", nil)
	if rep := g.chat(t, "secret", "Authorization", "Bearer hk-app"); rep.status != 404 {
		t.Fatalf("the restricted key reached the other route: %d %s", rep.status, rep.body)
	}
	rep, _ := scrape(t, g, "Authorization", "Bearer hk-app")
	if rep.status != 403 || rep.errorField(t, "code") != "permission_denied" {
		t.Errorf("scrape with a restricted key: %d, want 403 permission_denied", rep.status)
	}
	if strings.Contains(string(rep.body), "secret") || strings.Contains(string(rep.body), "hidden") {
		t.Errorf("the restricted key's answer names the route or target it may not use: %s", rep.body)
	}
	if rep, _ := scrape(t, g, "Authorization", "Bearer hk-ops"); rep.status != 200 || !strings.Contains(string(rep.body), `route="secret"`) {
		t.Errorf("scrape with an unrestricted key: %d, want 200 naming every route", rep.status)
	}
}

// TestMetricsScrapeOnlyKey: a key with routes = [] may use no route, and is the key to give
// Prometheus: it scrapes, and chats nowhere (the paid tail included).
func TestMetricsScrapeOnlyKey(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\"]\n\n"+
		"[[keys]]\nname = \"prometheus\"\nsha256 = \""+sha256hex("hk-prom")+"\"\nroutes = []\n", nil)
	prom := []string{"Authorization", "Bearer hk-prom"}
	if rep, _ := scrape(t, g, prom...); rep.status != 200 {
		t.Errorf("scrape: %d %s, want 200", rep.status, rep.body)
	}
	if rep := g.chat(t, "r", prom...); rep.status != 404 || up.hits.Load() != 0 {
		t.Errorf("chat with the scrape-only key: %d %s (upstream asked %d times), want 404 and no request", rep.status, rep.body, up.hits.Load())
	}
	rep := g.do(t, http.MethodGet, "/v1/models", "", prom...)
	if rep.status != 200 || strings.Contains(string(rep.body), `"id":"r"`) {
		t.Errorf("/v1/models for the scrape-only key: %d %s, want an empty list", rep.status, rep.body)
	}
}
