package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStrictGuardedShutSaysNoPrivateTarget: a strict request whose route's unguarded targets are
// all public, and whose private ones are all guarded, can try nothing: the public ones are not
// its to use, and nothing fails before the guarded ones. It is answered as CONFIG.md promises a
// strict request that no private target can serve, 503 no_private_target, with a message that
// says both facts: the public targets set aside as strict, the private ones guarded shut; explain
// says the same. A request that is not strict, whose chain the public target opens, is unchanged
// (this test failed first: the strict request got no_target and a message about guards only).
func TestStrictGuardedShutSaysNoPrivateTarget(t *testing.T) {
	pub, priv := newFake(t, "pub"), newFake(t, "priv")
	g := newGateway(t, target("pub", pub.url(), "public")+target("priv", priv.url(), "private")+
		"[routes.r]\ntargets = [\"pub\", \"priv\"]\nguard = { priv = [\"server_error\"] }\n", nil)
	body := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
	real := g.post(t, "/v1/chat/completions", body, "x-hayula-privacy", "strict")
	if real.status != 503 || real.errorField(t, "code") != "no_private_target" {
		t.Errorf("strict request: %d %s, want 503 no_private_target", real.status, real.body)
	}
	msg, _ := real.errorField(t, "message").(string)
	t.Logf("message: %s", msg)
	for _, want := range []string{"no private target", "strict", "pub", "priv", "guarded"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	rep := g.post(t, "/v1/route/explain", body, "x-hayula-privacy", "strict")
	var x struct {
		Error *struct {
			Status  int    `json:"status"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rep.body, &x); err != nil {
		t.Fatal(err)
	}
	if x.Error == nil || x.Error.Status != 503 || x.Error.Code != "no_private_target" || x.Error.Message != msg {
		t.Errorf("explain: %s; the request: %s", rep.body, real.body)
	}
	if pub.hits.Load()+priv.hits.Load() != 0 {
		t.Error("a target was tried")
	}
	if rep := g.post(t, "/v1/chat/completions", body); rep.status != 200 || pub.hits.Load() != 1 {
		t.Errorf("request that is not strict: %d %s (pub tried %d times)", rep.status, rep.body, pub.hits.Load())
	}
}
