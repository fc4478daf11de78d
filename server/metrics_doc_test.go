//go:build linux

package server_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hayula/gateway/lifecycle"
	"github.com/hayula/gateway/metrics"
	"github.com/hayula/gateway/server"
)

// TestMetricsDocumented keeps CONFIG.md's Metrics table true both ways: every family a scrape
// writes (on a gateway with keys and a managed target, so that every optional family is there)
// has a row, of its type and with its labels, and every series a row names is written. A series
// added without its row, or a row left behind by a removed series, fails here.
func TestMetricsDocumented(t *testing.T) {
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "## Metrics: `GET /metrics`")
	if !ok {
		t.Fatal("CONFIG.md has no Metrics section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	// The series a row names are the back-quoted names in its first cell.
	var documented []string
	for _, l := range strings.Split(section, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(l, "| "), " |")
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(first, -1) {
			documented = append(documented, m[1])
		}
	}
	if len(documented) == 0 {
		t.Fatal("CONFIG.md's Metrics section has no table rows")
	}

	up := newFake(t, "up")
	g := newGateway(t, "[[keys]]\nname = \"ops\"\nsha256 = \""+sha256hex("hk-ops")+"\"\n\n"+`[targets.m]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["/nonexistent/hayula-no-such-server", "{port}"]
health_path = "http://127.0.0.1:{port}/health"

`+target("up", up.url(), "private")+"[routes.r]\ntargets = [\"up\", \"m\"]\n", nil,
		func(o *server.Options) {
			o.Lifecycle = lifecycle.Options{PollInterval: 20 * time.Millisecond, ProbeTimeout: time.Second,
				StopGrace: time.Second}
			o.Reloads = new(metrics.Reloads)
			o.Conns = server.NewConnLimit(64)
		})
	rep, _ := scrape(t, g, "Authorization", "Bearer hk-ops")
	if rep.status != 200 {
		t.Fatalf("scrape: %d %s", rep.status, rep.body)
	}
	var written []string
	for _, l := range strings.Split(string(rep.body), "\n") {
		if rest, ok := strings.CutPrefix(l, "# TYPE "); ok {
			name, _, _ := strings.Cut(rest, " ")
			written = append(written, name)
		}
	}
	for _, name := range written {
		if !slices.Contains(documented, name) {
			t.Errorf("/metrics writes %s, which CONFIG.md's Metrics table does not name", name)
		}
	}
	for _, name := range documented {
		if !slices.Contains(written, name) {
			t.Errorf("CONFIG.md's Metrics table names %s, which /metrics does not write", name)
		}
	}
	// And each family of the type its row gives (counter, gauge, histogram).
	types := map[string]string{}
	for _, l := range strings.Split(section, "\n") {
		if cells := strings.Split(l, " | "); strings.HasPrefix(l, "| `") && len(cells) > 1 {
			for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(cells[0], -1) {
				types[m[1]] = strings.TrimSpace(cells[1])
			}
		}
	}
	for _, l := range strings.Split(string(rep.body), "\n") {
		// "# TYPE name type", written for a family with no series yet too.
		if rest, ok := strings.CutPrefix(l, "# TYPE "); ok {
			name, got, _ := strings.Cut(rest, " ")
			if types[name] != got {
				t.Errorf("/metrics writes %s as a %s; CONFIG.md's Metrics table gives it the type %q", name, got, types[name])
			}
		}
	}
	// And each series with the labels its row gives, the process series included, which only a
	// gateway with a managed target writes (TestMetricsLabelsAcrossReloads checks the rest).
	labels := documentedLabels(t)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(rep.body)))
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			got := []string{}
			for _, lp := range m.GetLabel() {
				got = append(got, lp.GetName())
			}
			slices.Sort(got)
			if want := labels[name]; !slices.Equal(got, want) {
				t.Errorf("a %s series has labels %v; CONFIG.md gives %v", name, got, want)
			}
		}
	}
}
