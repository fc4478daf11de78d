package config

import (
	"strings"
	"testing"
	"time"
)

// TestDegradedReachable: a check slower than health_timeout has failed, so a degraded_after at
// or past it could never mark a target degraded. Left out, degraded_after is half of
// health_timeout; set at or past it (other than "0s"), the config warns.
func TestDegradedReachable(t *testing.T) {
	for _, tc := range []struct {
		name, keys string
		want       time.Duration
		warn       bool
	}{
		{"defaults", "", 2500 * time.Millisecond, false},
		{"health_timeout alone", "health_timeout = \"1s\"\n", 500 * time.Millisecond, false},
		{"below health_timeout", "degraded_after = \"4s\"\n", 4 * time.Second, false},
		{"never degraded", "degraded_after = \"0s\"\n", 0, false},
		{"at health_timeout", "degraded_after = \"5s\"\n", 5 * time.Second, true},
		{"past health_timeout", "health_timeout = \"2s\"\ndegraded_after = \"10s\"\n", 10 * time.Second, true},
		{"no checks", "health_interval = \"0s\"\ndegraded_after = \"10s\"\n", 10 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n" + tc.keys +
				"[routes.r]\ntargets = [\"a\"]\n"
			cfg, err := Parse([]byte(src), "d.toml", nil)
			if err != nil {
				t.Fatal(err)
			}
			tg := cfg.Targets[0]
			if tg.DegradedAfter != tc.want {
				t.Errorf("degraded_after = %v, want %v", tg.DegradedAfter, tc.want)
			}
			if tc.keys == "" && !(tg.DegradedAfter > 0 && tg.DegradedAfter < tg.HealthTimeout) {
				t.Errorf("by default degraded_after %v and health_timeout %v: never degraded", tg.DegradedAfter, tg.HealthTimeout)
			}
			warned := false
			for _, w := range cfg.Warnings() {
				warned = warned || strings.Contains(w, "target a:") && strings.Contains(w, "degraded_after")
			}
			if warned != tc.warn {
				t.Errorf("warnings %q; want one on degraded_after: %v", cfg.Warnings(), tc.warn)
			}
		})
	}
}
