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
