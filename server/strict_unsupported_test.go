package server_test

import (
	"net/http"
	"testing"
)

// TestStrictRequestUnsupportedByItsPrivateTargets: a strict request that the route's private
// targets cannot take as asked (tools, or too long for their windows) is the client's to change,
// a 400 as for any request, not a 503 no_private_target that says to try again later: the public
// targets the privacy filter set aside were never its to use. A route with no private target at
// all, or whose private targets were set aside for another reason, is still no_private_target;
// with none at all, one that says x-should-retry: false.
func TestStrictRequestUnsupportedByItsPrivateTargets(t *testing.T) {
	priv, pub := newFake(t, "priv"), newFake(t, "pub")
	g := newGateway(t, target("priv", priv.url(), "private", "tools = false", "context_window = 64")+
		target("pub", pub.url(), "public")+
		"[routes.r]\ntargets = [\"priv\", \"pub\"]\nstrict = true\n"+
		"[routes.p]\ntargets = [\"pub\"]\n", nil)
	long := `"` + repeatWords("word ", 200) + `"`
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
		retry      string // x-should-retry
	}{
		{"tools", `{"model":"r","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
			http.StatusBadRequest, "unsupported_request", ""},
		{"too long", `{"model":"r","messages":[{"role":"user","content":` + long + `}]}`,
			http.StatusBadRequest, "context_length_exceeded", ""},
		{"no private target", `{"model":"p","x-hayula-privacy":"strict","messages":[{"role":"user","content":"x"}]}`,
			http.StatusServiceUnavailable, "no_private_target", "false"},
	} {
		rep := g.post(t, "/v1/chat/completions", tc.body)
		if rep.status != tc.status || rep.errorField(t, "code") != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, rep.status, rep.body, tc.status, tc.code)
		}
		// A route with no private target answers a strict request the same until its
		// configuration changes: an SDK's own retries of the 503 would only repeat it.
		if got := rep.header.Get("X-Should-Retry"); got != tc.retry {
			t.Errorf("%s: x-should-retry %q, want %q", tc.name, got, tc.retry)
		}
	}
	if priv.hits.Load() != 0 || pub.hits.Load() != 0 {
		t.Errorf("targets asked: priv %d, pub %d", priv.hits.Load(), pub.hits.Load())
	}
}

func repeatWords(w string, n int) string {
	b := make([]byte, 0, len(w)*n)
	for range n {
		b = append(b, w...)
	}
	return string(b)
}
