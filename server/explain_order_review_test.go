package server_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExplainOrderWithGuardMidChain: a guarded target that is not the route's last is a candidate
// like the others once a failure opened it (CONFIG.md, Guards), so a real request tries it at
// the place the policy gives it. Explain moved every guarded target after the unguarded ones and
// so predicted t0→t2→t1 for a chain that went t0→t1→t2. So too when health set the unguarded head
// aside: the reserve's first target is tried, and the guarded targets it opened come before the
// rest of the reserve; and when every target is cooling (fail open), the guarded one is tried in
// its place in the recovery order.
func TestExplainOrderWithGuardMidChain(t *testing.T) {
	cases := []struct {
		name, policy, guard string
		bench               []string // made to fail once before explain, to cool down
		targets             string
	}{
		{name: "ordered", policy: "ordered", guard: `t1 = ["server_error"]`, targets: `["t0", "t1", "t2"]`},
		{name: "least-busy", policy: "least-busy", guard: `t1 = ["server_error"]`, targets: `["t0", "t1", "t2"]`},
		{name: "latency", policy: "latency", guard: `t1 = ["server_error"]`, targets: `["t0", "t1", "t2"]`},
		{name: "two guards", policy: "ordered", guard: `t1 = ["server_error"], t2 = ["server_error"]`, targets: `["t0", "t1", "t2", "t3"]`},
		{name: "reserve", policy: "ordered", guard: `t2 = ["server_error"]`, bench: []string{"t0", "t1"}, targets: `["t0", "t1", "t2"]`},
		{name: "reserve least-busy", policy: "least-busy", guard: `t2 = ["server_error"], t3 = ["server_error"]`, bench: []string{"t0", "t1"}, targets: `["t0", "t1", "t3", "t2"]`},
		{name: "fail open", policy: "ordered", guard: `t1 = ["server_error"]`, bench: []string{"t0", "t1", "t2"}, targets: `["t0", "t1", "t2"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ups := make([]*omni, 4)
			cfg := "[cooldown]\nfailures = 1\nbase = \"30s\"\n\n"
			for i := range ups {
				ups[i] = newOmni(t)
				cfg += fmt.Sprintf("[targets.t%d]\nadapter = \"openai\"\nurl = %q\nclass = \"private\"\nhealth_interval = \"0s\"\n\n", i, ups[i].srv.URL+"/v1")
				cfg += fmt.Sprintf("[routes.only-t%d]\ntargets = [\"t%d\"]\n\n", i, i)
			}
			cfg += fmt.Sprintf("[routes.r]\ntargets = %s\npolicy = %q\nguard = { %s }\n", c.targets, c.policy, c.guard)
			g := newGateway(t, cfg, nil)
			for _, u := range ups {
				u.set(outServerError)
			}
			for _, n := range c.bench {
				if rep := g.chat(t, "only-"+n); rep.status == 200 {
					t.Fatalf("benching %s: %d", n, rep.status)
				}
			}
			body := `{"model":"r","messages":[{"role":"user","content":"hi"}]}`
			xr := g.post(t, "/v1/route/explain", body)
			var x explainAnswer
			if err := json.Unmarshal(xr.body, &x); err != nil {
				t.Fatal(err)
			}
			outs := map[string]outcome{"t0": outServerError, "t1": outServerError, "t2": outServerError, "t3": outServerError}
			want, _ := x.predict(outs)
			rep := g.post(t, "/v1/chat/completions", body)
			if got := chainOf(rep.header.Get("x-hayula-chain")); !cmp.Equal(want, got) {
				t.Errorf("explain (order %v, reserve %v) predicts the chain %v; the request walked %v\nexplain: %s",
					x.Order, x.Reserve, want, got, xr.body)
			}
		})
	}
}
