package autoroute

import (
	"strings"
	"testing"
)

// TestNegationCheckLinear: score compared every term hit with every negation cue before it, so a
// prompt of repeated "not hacking exploit" (a few MB fit under max_body_bytes) took time quadratic
// in its length on every "auto" request. Each hit now looks only at the cues that can reach it; the
// test counts comparisons rather than timing them.
func TestNegationCheckLinear(t *testing.T) {
	c := newDefault(t)
	for _, pat := range []string{"not hacking exploit ", "exploit not hacking. ", "not hacking, exploit ", "not not exploit not prove "} {
		text := strings.Repeat(pat, 4000)
		s := c.run("", text)
		hits, negs, steps := len(s.hits), len(s.negs), s.negSteps
		route, _ := c.routeOf(s)
		if hits == 0 || negs == 0 {
			t.Fatalf("%q: %d hits, %d negations: the test reads nothing", pat, hits, negs)
		}
		if limit := 4 * (hits + negs); steps > limit {
			t.Errorf("%q: %d comparisons for %d hits and %d negations (more than %d)", pat, steps, hits, negs, limit)
		}
		t.Logf("%q: %s, %d steps", pat, route, steps)
	}
}
