package server_test

import (
	"testing"
)

// An n beyond int64 is still an integer above 1 (the kinds check lets it through): the request
// asks for more choices than an ollama or saif target answers, and must skip them as n = 2 does.
func TestChoicesHugeNSkipsOneChoice(t *testing.T) {
	oll := newFake(t, "oll")
	g := newGateway(t, "[targets.oll]\nadapter = \"ollama\"\nurl = \""+oll.srv.URL+"\"\nclass = \"private\"\nmodel = \"o\"\n\n"+
		"[routes.olla]\ntargets = [\"oll\"]\n", nil)
	for _, n := range []string{"99999999999999999999", "9223372036854775808", "1000000000000000000000000000000"} {
		t.Run(n, func(t *testing.T) {
			rep := g.post(t, "/v1/chat/completions", `{"model":"olla","n":`+n+`,"messages":[{"role":"user","content":"x"}]}`)
			if rep.status != 400 || rep.errorField(t, "code") != "unsupported_request" {
				t.Errorf("%d %s", rep.status, rep.body)
			}
		})
	}
	if oll.hits.Load() != 0 {
		t.Errorf("ollama asked %d times for a huge n", oll.hits.Load())
	}
}
