package filter_test

import (
	"testing"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
)

// TestSpecialistFilter: a route hint drops only a saif target that lists no such specialist (in
// any case); without a hint, and on other adapters, it keeps every target.
func TestSpecialistFilter(t *testing.T) {
	saif := &core.Target{Name: "s", Adapter: core.AdapterSAIF, Specialists: []string{"webapp", "Malware"}}
	oai := &core.Target{Name: "o", Adapter: core.AdapterOpenAI}
	for _, tc := range []struct {
		hint string
		t    *core.Target
		keep bool
	}{
		{"", saif, true},
		{"webapp", saif, true},
		{"MALWARE", saif, true},
		{"crypto", saif, false},
		{"crypto", oai, true},
	} {
		ok, reason := filter.Specialist{}.Keep(&core.Request{RouteHint: tc.hint}, tc.t)
		if ok != tc.keep || (!ok && reason == "") {
			t.Errorf("hint %q on %s: keep %v (%q), want %v", tc.hint, tc.t.Name, ok, reason, tc.keep)
		}
	}
}
