package server_test

import (
	"testing"
)

// TestAutoMoveKeepsTheClassifiedRoutesStrictness: a route marked strict says that what auto sends
// there for its text stays on private targets. A security question with tools, classified to a
// strict saif route that has no tools, was moved to deepseek-r1 and answered by its public target:
// the text the operator kept private by route reached a public one. Moved, it stays strict: it
// goes to a route with a private target that takes it, or nowhere.
func TestAutoMoveKeepsTheClassifiedRoutesStrictness(t *testing.T) {
	body := `{"model":"auto","tools":` + aTool + `,"messages":[{"role":"user","content":` + jsonString(securityText) + `}]}`
	layout := func(t *testing.T, r1Class string) (*gateway, map[string]*fake) {
		fakes := map[string]*fake{}
		for _, n := range []string{"saif", "r1", "sky"} {
			fakes[n] = newFake(t, n)
		}
		return newGateway(t, target("saif", fakes["saif"].url(), "private", "tools = false")+
			target("r1", fakes["r1"].url(), r1Class)+
			target("sky", fakes["sky"].url(), "public")+`
[routes.saif]
targets = ["saif"]
strict = true

[routes.deepseek-r1]
targets = ["r1"]

[routes.general]
targets = ["sky"]

[auto]
default = "general"
`, nil), fakes
	}
	t.Run("no private route can", func(t *testing.T) {
		g, fakes := layout(t, "public")
		rep := g.post(t, "/v1/chat/completions", body)
		if rep.status == 200 || rep.header.Get("x-hayula-route") != "saif" || rep.header.Get("x-hayula-moved-from") != "" {
			t.Errorf("%d route %q moved-from %q: %s", rep.status, rep.header.Get("x-hayula-route"),
				rep.header.Get("x-hayula-moved-from"), rep.body)
		}
		if got := hits(fakes); len(got) != 0 {
			t.Errorf("asked %v: a request classified to a strict route reached a public target", got)
		}
		// Explain tells the same.
		x := g.post(t, "/v1/route/explain", body)
		if m := x.json(t); m["route"] != "saif" || m["moved"] != nil || m["strict"] != true {
			t.Errorf("explain %s", x.body)
		}
	})
	t.Run("a private route can", func(t *testing.T) {
		g, fakes := layout(t, "private")
		rep := g.post(t, "/v1/chat/completions", body)
		if rep.status != 200 || rep.header.Get("x-hayula-route") != "deepseek-r1" || rep.header.Get("x-hayula-moved-from") != "saif" {
			t.Errorf("%d route %q moved-from %q: %s", rep.status, rep.header.Get("x-hayula-route"),
				rep.header.Get("x-hayula-moved-from"), rep.body)
		}
		if got := hits(fakes); len(got) != 1 || got["r1"] != 1 {
			t.Errorf("asked %v, want r1 once", got)
		}
		x := g.post(t, "/v1/route/explain", body)
		if m := x.json(t); m["route"] != "deepseek-r1" || m["strict"] != true {
			t.Errorf("explain %s", x.body)
		}
	})
}
