package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/health"
)

// TestHealthGaugesInEveryState: hayula_target_available and hayula_target_degraded, and /healthz,
// in each health state, as CONFIG.md's Metrics section says them.
func TestHealthGaugesInEveryState(t *testing.T) {
	g, _, _ := twoTargets(t)
	tr, tg := g.srv.Health(), mustTarget(t, g, "a")
	slow := health.CheckResult{Latency: tg.DegradedAfter + time.Second}
	failed := health.CheckResult{Err: errors.New("down")}
	steps := []struct {
		name            string
		do              func()
		status          string
		avail, degraded string
	}{
		{"healthy", func() {}, "healthy", "1", "0"},
		{"cooling", func() {
			for range 3 {
				tr.Report(tg, core.ClassServerError, 0)
			}
		}, "cooling", "0", "0"},
		{"unconfirmed", func() { g.clock.Advance(30 * time.Second) }, "healthy", "1", "0"},
		{"probing", func() { tr.Start(tg) }, "probing", "0", "0"},
		{"confirmed", func() { tr.Report(tg, core.ClassNone, 0) }, "healthy", "1", "0"},
		{"degraded", func() { tr.ReportCheck(tg, slow) }, "degraded", "1", "1"},
		{"unavailable", func() {
			for range 3 {
				tr.ReportCheck(tg, failed)
			}
		}, "unavailable", "0", "1"},
		{"loading", func() { tr.ReportCheck(tg, health.CheckResult{Loading: true}) }, "loading", "1", "1"},
		{"fast again", func() { tr.ReportCheck(tg, health.CheckResult{}) }, "healthy", "1", "0"},
	}
	for _, st := range steps {
		st.do()
		if got := tr.Snapshot(tg).Status; got != st.status {
			t.Errorf("%s: status %q, want %q", st.name, got, st.status)
		}
		_, lines := scrape(t, g)
		for series, want := range map[string]string{"hayula_target_available": st.avail, "hayula_target_degraded": st.degraded} {
			if l := series + `{target="a"} ` + want; !lines[l] {
				t.Errorf("%s: no %s", st.name, l)
			}
		}
		if rep := g.do(t, "GET", "/healthz", ""); rep.status != 200 || string(rep.body) != "{\"status\":\"ok\",\"fail_open_total\":0}\n" {
			t.Errorf("%s: /healthz %d %s", st.name, rep.status, rep.body)
		}
	}
}
