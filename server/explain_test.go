package server_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExplain(t *testing.T) {
	g, saif, r1, or := threeChain(t)
	// A strict request with tools; nothing may be sent upstream.
	rep := g.post(t, "/v1/route/explain",
		`{"model":"open","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"hi"}]}`,
		"x-hayula-privacy", "strict")
	if rep.status != 200 {
		t.Fatalf("status %d: %s", rep.status, rep.body)
	}
	var x struct {
		Route  string   `json:"route"`
		Strict bool     `json:"strict"`
		Order  []string `json:"order"`
		Drops  []struct {
			Target, Filter, Reason string
		} `json:"drops"`
		Candidates []struct {
			Name   string `json:"name"`
			Class  string `json:"class"`
			Health string `json:"health"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(rep.body, &x); err != nil {
		t.Fatal(err)
	}
	if x.Route != "open" || !x.Strict {
		t.Fatalf("explain %s", rep.body)
	}
	if diff := cmp.Diff([]string{"saif", "deepseek-r1"}, x.Order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if len(x.Drops) != 1 || x.Drops[0].Target != "openrouter" || x.Drops[0].Filter != "privacy" || x.Drops[0].Reason == "" {
		t.Errorf("drops %+v", x.Drops)
	}
	if len(x.Candidates) != 3 || x.Candidates[2].Class != "public" || x.Candidates[0].Health == "" {
		t.Errorf("candidates %+v", x.Candidates)
	}
	if saif.hits.Load()+r1.hits.Load()+or.hits.Load() != 0 {
		t.Fatal("explain sent a request upstream")
	}
}

// TestExplainGuardedShut: a strict request drops the route's public head, which leaves only a
// guarded target; nothing can fail before it, so the request gets 503 no_target without trying
// anything. Explain said the order was that target and no error.
func TestExplainGuardedShut(t *testing.T) {
	pub, priv := newFake(t, "pub"), newFake(t, "priv")
	g := newGateway(t, target("pub", pub.url(), "public")+target("priv", priv.url(), "private")+
		"[routes.r]\ntargets = [\"pub\", \"priv\"]\nguard = { priv = [\"server_error\"] }\n", nil)
	body := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
	real := g.post(t, "/v1/chat/completions", body, "x-hayula-privacy", "strict")
	rep := g.post(t, "/v1/route/explain", body, "x-hayula-privacy", "strict")
	var x struct {
		Error *struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rep.body, &x); err != nil {
		t.Fatal(err)
	}
	if real.status != 503 || x.Error == nil || x.Error.Status != real.status || x.Error.Code != real.errorField(t, "code") {
		t.Errorf("request %d %s; explain %s", real.status, real.body, rep.body)
	}
	if pub.hits.Load()+priv.hits.Load() != 0 {
		t.Error("a target was tried")
	}
}

// TestExplainGuardedShutReserve: as TestExplainGuardedShut, with a guarded target health benched
// in the reserve: run turns to the reserve and passes it by too.
func TestExplainGuardedShutReserve(t *testing.T) {
	pub, p1, p2 := newFake(t, "pub"), newFake(t, "p1"), newFake(t, "p2")
	g := newGateway(t, "[cooldown]\nfailures = 1\n\n"+target("pub", pub.url(), "public")+target("p1", p1.url(), "private")+
		target("p2", p2.url(), "private")+"[routes.only-p2]\ntargets = [\"p2\"]\n\n"+
		"[routes.r]\ntargets = [\"pub\", \"p1\", \"p2\"]\nguard = { p1 = [\"server_error\"], p2 = [\"server_error\"] }\n", nil)
	p2.set(errHandler(500, "internal", "boom"))
	if rep := g.chat(t, "only-p2"); rep.status == 200 {
		t.Fatalf("benching p2: %d", rep.status)
	}
	body := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
	rep := g.post(t, "/v1/route/explain", body, "x-hayula-privacy", "strict")
	real := g.post(t, "/v1/chat/completions", body, "x-hayula-privacy", "strict")
	var x struct {
		Reserve []string `json:"reserve"`
		Error   *struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rep.body, &x); err != nil {
		t.Fatal(err)
	}
	if len(x.Reserve) != 1 || real.status != 503 || x.Error == nil || x.Error.Status != real.status || x.Error.Code != real.errorField(t, "code") {
		t.Errorf("request %d %s; explain %s", real.status, real.body, rep.body)
	}
	if pub.hits.Load()+p1.hits.Load() != 0 || p2.hits.Load() != 1 {
		t.Errorf("tried: pub %d, p1 %d, p2 %d (1 to bench it)", pub.hits.Load(), p1.hits.Load(), p2.hits.Load())
	}
}
