package server_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// TestExplainLatencyAsThePolicyReadsIt: under policy latency, a target whose estimate is older
// than core.LatencyStale counts as unmeasured and is tried first. Explain showed that order
// with the stale estimate beside it (t0 first at 100 ms before t1 at 50 ms), so its answer
// contradicted itself; latency_ms is now the estimate the policy reads: 0 for none or a stale one.
func TestExplainLatencyAsThePolicyReadsIt(t *testing.T) {
	ups := []*omni{newOmni(t), newOmni(t)}
	cfg := ""
	for i, u := range ups {
		cfg += fmt.Sprintf("[targets.t%d]\nadapter = \"openai\"\nurl = %q\nclass = \"private\"\nhealth_interval = \"0s\"\n\n", i, u.srv.URL+"/v1")
		cfg += fmt.Sprintf("[routes.only-t%d]\ntargets = [\"t%d\"]\n\n", i, i)
	}
	cfg += "[routes.r]\ntargets = [\"t0\", \"t1\"]\npolicy = \"latency\"\n"
	g := newGateway(t, cfg, nil)
	warm := func(i int, d time.Duration) {
		ups[i].mu.Lock()
		ups[i].onOK = func() { g.clock.Advance(d) }
		ups[i].mu.Unlock()
		if rep := g.chat(t, fmt.Sprintf("only-t%d", i)); rep.status != 200 {
			t.Fatalf("warming t%d: %d", i, rep.status)
		}
		ups[i].mu.Lock()
		ups[i].onOK = nil
		ups[i].mu.Unlock()
	}
	warm(0, 100*time.Millisecond)
	g.clock.Advance(31 * time.Second) // t0's estimate is stale now
	warm(1, 50*time.Millisecond)
	rep := g.post(t, "/v1/route/explain", `{"model":"r","messages":[{"role":"user","content":"hi"}]}`)
	var x struct {
		Order      []string `json:"order"`
		Candidates []struct {
			Name      string  `json:"name"`
			LatencyMS float64 `json:"latency_ms"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(rep.body, &x); err != nil {
		t.Fatal(err)
	}
	if len(x.Order) != 2 || x.Order[0] != "t0" {
		t.Fatalf("order %v, want the stale t0 first", x.Order)
	}
	if x.Candidates[0].LatencyMS != 0 || x.Candidates[1].LatencyMS != 50 {
		t.Errorf("latency_ms: t0 %v (stale: want 0), t1 %v (want 50)", x.Candidates[0].LatencyMS, x.Candidates[1].LatencyMS)
	}
	if got := g.chat(t, "r").header.Get("x-hayula-chain"); got != "t0" {
		t.Errorf("chain %q, want t0 as explain says", got)
	}
}
