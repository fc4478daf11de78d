package server_test

import (
	"strings"
	"testing"
)

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

// A negative token limit is refused naming the field the client sent: a client that sent only
// max_completion_tokens was told to fix max_tokens, a field it never set.
func TestNegativeTokenLimitNamesItsField(t *testing.T) {
	up := newFake(t, "a")
	g := newGateway(t, target("a", up.url(), "private")+"[routes.a]\ntargets = [\"a\"]\n", nil)
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, tc := range []struct{ body, param string }{
		{`{"model":"a","max_tokens":-1,` + msgs + `}`, "max_tokens"},
		{`{"model":"a","max_completion_tokens":-1,` + msgs + `}`, "max_completion_tokens"},
		{`{"model":"a","max_tokens":5,"max_completion_tokens":-1,` + msgs + `}`, "max_completion_tokens"},
	} {
		rep := g.post(t, "/v1/chat/completions", tc.body)
		if rep.status != 400 || rep.errorField(t, "param") != tc.param ||
			!strings.Contains(rep.errorField(t, "message").(string), tc.param) {
			t.Errorf("%s: %d %s", tc.body, rep.status, rep.body)
		}
	}
}
