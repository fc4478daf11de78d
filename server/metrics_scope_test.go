package server_test

import (
	"strings"
	"testing"
)

// TestMetricsNeedAnUnrestrictedKey: a key limited to some routes gets 403 from /metrics, whose
// series name every route and target and count every key's requests, while /v1/models hides
// the routes it may not use; a key without a routes list scrapes.
func TestMetricsNeedAnUnrestrictedKey(t *testing.T) {
	up := newFake(t, "up")
	g := newGateway(t, keyBlock("ops", "hk-ops")+keyBlock("fam", "hk-fam", `routes = ["a"]`)+
		target("up", up.url(), "private")+target("paid", up.url(), "public")+
		"[routes.a]\ntargets = [\"up\"]\n[routes.secret]\ntargets = [\"paid\"]\n", nil)
	if rep := g.chat(t, "secret", "Authorization", "Bearer hk-ops"); rep.status != 200 {
		t.Fatalf("chat: %d %s", rep.status, rep.body)
	}
	rep, _ := scrape(t, g, "Authorization", "Bearer hk-fam")
	if rep.status != 403 || rep.errorField(t, "code") != "permission_denied" {
		t.Errorf("scrape with a key limited to routes a: %d, want 403 permission_denied", rep.status)
	}
	if strings.Contains(string(rep.body), "secret") || strings.Contains(string(rep.body), "paid") {
		t.Errorf("the refusal names a route or target the key may not see: %s", rep.body)
	}
	if rep, _ := scrape(t, g, "Authorization", "Bearer hk-ops"); rep.status != 200 {
		t.Errorf("scrape with an unrestricted key: %d %s", rep.status, rep.body)
	}
}
