package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/server"
)

// TestReloadKeepsTargetsInFlight: an attempt still under way on the replaced configuration counts
// in flight on its target in the new one, when the reload left the target's name and url alone:
// least-busy passes over a target busy with the old configuration's streams, and
// hayula_upstream_in_flight shows them. A target whose url the reload changed is another upstream
// and starts at zero.
func TestReloadKeepsTargetsInFlight(t *testing.T) {
	a, b := newFake(t, "a"), newFake(t, "b")
	release := make(chan struct{})
	a.set(func(w http.ResponseWriter, r *http.Request) {
		if body, _ := io.ReadAll(r.Body); !strings.Contains(string(body), `"stream":true`) {
			okHandler("a")(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n"))
		w.(http.Flusher).Flush()
		<-release
		w.Write([]byte("data: [DONE]\n\n"))
	})
	text := func(aURL string) string {
		return target("a", aURL, "private") + target("b", b.url(), "private") +
			"[routes.r]\npolicy = \"least-busy\"\ntargets = [\"a\", \"b\"]\n"
	}
	old := newServerWith(t, server.Options{Config: parseText(t, text(a.url()))})
	l := server.NewLive(old)
	h := serveLive(t, l)
	g := &gateway{ts: h}
	hangUp := g.openStream(t, `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	defer hangUp()
	defer close(release)

	next := newServerWith(t, server.Options{Config: parseText(t, text(a.url())), Previous: old})
	l.Replace(next)
	if rep := g.chat(t, "r"); rep.status != 200 || rep.header.Get("X-Hayula-Target") != "b" {
		t.Errorf("least-busy after the reload: %d from %q, want 200 from b, a being busy with the old configuration's stream",
			rep.status, rep.header.Get("X-Hayula-Target"))
	}
	m := g.do(t, http.MethodGet, "/metrics", "")
	if want := `hayula_upstream_in_flight{target="a"} 1`; !strings.Contains(string(m.body), want+"\n") {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(m.body), "in_flight"))
	}

	moved := newServerWith(t, server.Options{Config: parseText(t, text(strings.Replace(a.url(), "127.0.0.1", "localhost", 1))), Previous: next})
	l.Replace(moved)
	m = g.do(t, http.MethodGet, "/metrics", "")
	if want := `hayula_upstream_in_flight{target="a"} 0`; !strings.Contains(string(m.body), want+"\n") {
		t.Errorf("a target whose url changed: /metrics lacks %s:\n%s", want, grepLines(string(m.body), "in_flight"))
	}
}
