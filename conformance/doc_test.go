package conformance

import (
	"os"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConformanceDocListsEveryCheck keeps CONFORMANCE.md honest: its check
// tables name every check of the catalogue, with the same grade, and no other.
func TestConformanceDocListsEveryCheck(t *testing.T) {
	doc, err := os.ReadFile("../CONFORMANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_.]+)` \\| (MUST|SHOULD|STRICT) \\|")
	got := map[string]Grade{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		got[m[1]] = Grade(m[2])
	}
	want := map[string]Grade{}
	for _, c := range catalogue() {
		want[c.id] = c.grade
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CONFORMANCE.md check tables vs catalogue (-catalogue +doc):\n%s", diff)
	}
}

// TestCatalogueIsWellFormed: ids are unique, every check names known probes,
// and every probe's gate is a check that judges that probe.
func TestCatalogueIsWellFormed(t *testing.T) {
	r := &runner{o: Options{Model: "m"}}
	probes := map[probeID]*probe{}
	for _, p := range r.probes() {
		probes[p.id] = p
	}
	judges := map[string]map[probeID]bool{}
	for _, c := range catalogue() {
		if judges[c.id] != nil {
			t.Errorf("duplicate check id %s", c.id)
		}
		judges[c.id] = map[probeID]bool{}
		for _, id := range c.allProbes() {
			if probes[id] == nil {
				t.Errorf("%s names unknown probe %s", c.id, id)
			}
			judges[c.id][id] = true
		}
	}
	for id, p := range probes {
		if !judges[p.gate][id] {
			t.Errorf("probe %s: gate %q does not judge it", id, p.gate)
		}
	}
}
