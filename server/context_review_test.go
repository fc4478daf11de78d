package server_test

import "testing"

// On a route of an Ollama and an OpenAI target, a completions prompt too long for the OpenAI
// target's window is refused as too long: Ollama does not serve /v1/completions, so the window
// is the only reason no target can serve it, and the client must be told so.
func TestCompletionsContextExceededBesideEndpointDrop(t *testing.T) {
	oll, oai := newFake(t, "oll"), newFake(t, "oai")
	g := newGateway(t, "[targets.oll]\nadapter = \"ollama\"\nurl = \""+oll.srv.URL+"\"\nclass = \"private\"\nmodel = \"o\"\n\n"+
		target("oai", oai.url(), "private", `model = "m"`, "context_window = 50")+
		"[routes.co]\ntargets = [\"oll\", \"oai\"]\n", nil)
	rep := g.post(t, "/v1/completions", `{"model":"co","prompt":"x","max_tokens":100}`)
	if rep.status != 400 || rep.errorField(t, "code") != "context_length_exceeded" {
		t.Errorf("%d %s", rep.status, rep.body)
	}
	if n := oll.hits.Load() + oai.hits.Load(); n != 0 {
		t.Errorf("upstreams asked %d times", n)
	}
}
