package server_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestExplainEdges: explain asks the same key as a chat request (none: 401; a key limited to one
// route: 404 for another), is not held back by a key's max_concurrent while its slot is taken,
// refuses a body over max_body_bytes, invalid JSON and an embeddings body with an array input,
// and, for each of these and the ones it answers, reaches no upstream.
func TestExplainEdges(t *testing.T) {
	up, other := newFake(t, "up"), newFake(t, "other")
	release := make(chan struct{})
	var held atomic.Int64
	up.set(func(w http.ResponseWriter, r *http.Request) {
		held.Add(1)
		if waitRelease(r, release) {
			okHandler("up")(w, r)
		}
	})
	g := newGateway(t, "max_body_bytes = 2048\n"+keyBlock("one", "hk-one", "max_concurrent = 1", `routes = ["a"]`)+
		target("up", up.url(), "private")+target("other", other.url(), "public")+
		"[routes.a]\ntargets = [\"up\"]\n[routes.b]\ntargets = [\"other\"]\n", nil)
	one := []string{"Authorization", "Bearer hk-one"}
	done := make(chan reply, 1)
	go func() { done <- g.chat(t, "a", one...) }()
	settles(func() bool { return held.Load() == 1 })
	upHits := up.hits.Load()

	chat := `{"model":"a","messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name, body string
		hdr        []string
		want       int
	}{
		{"no key", chat, nil, 401},
		{"wrong key", chat, []string{"Authorization", "Bearer nope"}, 401},
		{"route not allowed", `{"model":"b","messages":[{"role":"user","content":"hi"}]}`, one, 404},
		{"slot taken", chat, one, 200},
		{"too large", `{"model":"a","messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`, one, 413},
		{"invalid json", `{"model":"a","messages":[`, one, 400},
		{"embeddings array", `{"model":"a","input":["x","y"]}`, one, 400},
		{"embeddings string", `{"model":"a","input":"x"}`, one, 200},
	}
	for _, tc := range cases {
		rep := g.post(t, "/v1/route/explain", tc.body, tc.hdr...)
		if rep.status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, rep.status, rep.body, tc.want)
		}
	}
	close(release)
	if rep := <-done; rep.status != 200 {
		t.Errorf("held request: %d %s", rep.status, rep.body)
	}
	if n := up.hits.Load() - upHits; n != 0 {
		t.Errorf("explain reached the upstream %d times", n)
	}
	if n := other.hits.Load(); n != 0 {
		t.Errorf("explain reached route b's upstream %d times", n)
	}
}
