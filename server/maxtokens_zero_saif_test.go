package server_test

import "testing"

// TestCompletionsZeroMaxTokensSkipsSAIF: a completions max_tokens of 0 passes (with echo it scores
// a prompt without generating), but SAIF's protocol cannot say 0: the saif adapter leaves a 0 out,
// and SAIF answered with no limit at all, the failure chat's 0 is refused for. A route with an
// openai target serves it there, sent as 0; a route of SAIF alone refuses it, naming why, and SAIF
// is never asked. A max_tokens of 1 still goes to SAIF.
func TestCompletionsZeroMaxTokensSkipsSAIF(t *testing.T) {
	g, saif, _, oai := translatorsBeforeOpenAI(t)
	rep := g.post(t, "/v1/completions", `{"model":"all","prompt":"x","max_tokens":0}`)
	if rep.status != 200 || rep.header.Get("x-hayula-target") != "oai" {
		t.Fatalf("all: %d target %q: %s", rep.status, rep.header.Get("x-hayula-target"), rep.body)
	}
	if got := oai.lastBody(t)["max_tokens"]; got != 0.0 {
		t.Errorf("oai was sent max_tokens %v", got)
	}
	rep = g.post(t, "/v1/completions", `{"model":"saif","prompt":"x","max_tokens":0}`)
	if rep.status != 400 || rep.errorField(t, "code") != "unsupported_request" {
		t.Errorf("saif alone: %d %s", rep.status, rep.body)
	}
	if n := saif.hits.Load(); n != 0 {
		t.Fatalf("saif was asked %d times for max_tokens 0", n)
	}
	if rep := g.post(t, "/v1/completions", `{"model":"saif","prompt":"x","max_tokens":1}`); rep.status != 200 {
		t.Fatalf("max_tokens 1: %d %s", rep.status, rep.body)
	}
	if got := saif.lastBody(t)["max_tokens"]; got != 1.0 {
		t.Errorf("saif was sent max_tokens %v", got)
	}
}
