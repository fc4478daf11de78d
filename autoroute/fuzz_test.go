package autoroute

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

func FuzzClassify(f *testing.F) {
	if fh, err := os.Open("testdata/labelled.jsonl"); err == nil {
		sc := bufio.NewScanner(fh)
		for i := 0; sc.Scan() && i < 60; i++ {
			var ex Example
			if json.Unmarshal(sc.Bytes(), &ex) == nil {
				f.Add(ex.System, ex.Prompt, ex.Hint)
			}
		}
		fh.Close()
	}
	f.Add("", "", "")
	f.Add("\xff\xfe", "ث\u064e\u0640\xd8", "rev_eng")
	f.Add("not asking about", "not asking about not asking about", "SAIF")
	c, err := New(Rules{})
	if err != nil {
		f.Fatal(err)
	}
	routes := c.Routes()
	f.Fuzz(func(t *testing.T, system, user, hint string) {
		d := c.Classify(system, user, hint)
		if !slices.Contains(routes, d.Route) {
			t.Fatalf("route %q not in %v", d.Route, routes)
		}
		if d.Language > Mixed {
			t.Fatalf("language %d", d.Language)
		}
		e := c.Explain(system, user, hint)
		if e.Route != d.Route || e.Intent != d.Intent {
			t.Fatalf("Explain %s/%s disagrees with Classify %s/%s", e.Route, e.Intent, d.Route, d.Intent)
		}
		if r, i := c.Route(system, user, hint); r != d.Route || i != d.Intent {
			t.Fatalf("Route %s/%s disagrees with Classify %s/%s", r, i, d.Route, d.Intent)
		}
	})
}
