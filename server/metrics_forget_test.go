package server_test

import (
	"strings"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// TestReloadForgetsRemovedSeries: a reload that removes a target, the route over it and a key
// drops their series from /metrics at once, gauges and counters, while a name it keeps goes on
// from its counts; a later reload that brings them back starts them from zero, and a request of
// the first configuration that was still under way on the removed target, ending after both
// reloads, counts in none of the series a scrape reads.
func TestReloadForgetsRemovedSeries(t *testing.T) {
	up := newHeldUpstream(t)
	conf := func(all bool) *config.Config {
		text := keyBlock("scrape", "hk-scrape", "routes = []") + keyBlock("kept", "hk-kept") +
			target("keep", up.url(), "private") + "[routes.r]\ntargets = [\"keep\"]\n"
		if all {
			text += keyBlock("old", "hk-old") + target("gone", up.url(), "private") +
				"[routes.rg]\ntargets = [\"gone\"]\n"
		}
		return parseText(t, text)
	}
	cur := newServerWith(t, server.Options{Config: conf(true)})
	l := server.NewLive(cur)
	g := &gateway{ts: serveLive(t, l)}
	reload := func(all bool) *server.Retired {
		next := newServerWith(t, server.Options{Config: conf(all), Previous: cur})
		old := l.Replace(next)
		cur = next
		return old
	}
	scraped := func() map[string]bool {
		t.Helper()
		rep, lines := scrape(t, g, "Authorization", "Bearer hk-scrape")
		if rep.status != 200 {
			t.Fatalf("scrape: %d %s", rep.status, rep.body)
		}
		return lines
	}
	removed := func(lines map[string]bool) []string {
		var out []string
		for l := range lines {
			if strings.Contains(l, `"gone"`) || strings.Contains(l, `"rg"`) || strings.Contains(l, `"old"`) {
				out = append(out, l)
			}
		}
		return out
	}
	for _, k := range []string{"hk-kept", "hk-old"} {
		for _, r := range []string{"r", "rg"} {
			if rep := g.chat(t, r, "Authorization", "Bearer "+k); rep.status != 200 {
				t.Fatalf("%s on %s: %d %s", k, r, rep.status, rep.body)
			}
		}
	}
	// One of the old key's requests on the removed target is under way across both reloads.
	held := make(chan reply, 1)
	go func() {
		held <- g.post(t, "/v1/chat/completions", `{"model":"rg","messages":[{"role":"user","content":"hold me"}]}`,
			"Authorization", "Bearer hk-old")
	}()
	<-up.entered

	kept := []string{
		`hayula_served_total{route="r",target="keep"} 2`,
		`hayula_key_requests_total{key="kept"} 2`,
		`hayula_upstream_attempts_total{target="keep",result="ok"} 2`,
		`hayula_requests_total{endpoint="chat",route="r",code="200"} 2`,
	}
	before := scraped()
	for _, s := range append(kept, `hayula_key_requests_total{key="old"} 3`, `hayula_upstream_in_flight{target="gone"} 1`,
		`hayula_served_total{route="rg",target="gone"} 2`, `hayula_target_available{target="gone"} 1`) {
		if !before[s] {
			t.Errorf("before the reload: no %s", s)
		}
	}

	first := reload(false)
	after := scraped()
	if r := removed(after); len(r) > 0 {
		t.Errorf("after the reload that removed them, /metrics still writes:\n%s", strings.Join(r, "\n"))
	}
	for _, s := range kept {
		if !after[s] {
			t.Errorf("after the reload: a kept name lost %s", s)
		}
	}

	reload(true)
	up.release <- struct{}{}
	if rep := <-held; rep.status != 200 {
		t.Fatalf("the request under way across the reloads: %d %s", rep.status, rep.body)
	}
	<-first.Drained() // its counts are made
	back := scraped()
	for _, s := range []string{
		`hayula_key_requests_total{key="old"} 0`,
		`hayula_upstream_in_flight{target="gone"} 0`,
		`hayula_request_duration_seconds_count{endpoint="chat",route="rg"} 0`,
	} {
		if !back[s] {
			t.Errorf("brought back: no %s", s)
		}
	}
	for l := range back {
		if strings.HasPrefix(l, `hayula_served_total{route="rg"`) || strings.HasPrefix(l, `hayula_upstream_attempts_total{target="gone"`) ||
			strings.HasPrefix(l, `hayula_requests_total{endpoint="chat",route="rg"`) || strings.HasPrefix(l, `hayula_key_tokens_total{key="old"`) {
			t.Errorf("brought back, a series starts from an old count: %s", l)
		}
	}
	for _, s := range kept {
		if !back[s] {
			t.Errorf("after both reloads: a kept name lost %s", s)
		}
	}
}
