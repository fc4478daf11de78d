package server_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/metrics"
	"github.com/hayula/gateway/server"
)

// documentedLabels reads CONFIG.md's Metrics table: each series it names, with the label names its
// labels cell gives (the back-quoted words outside parentheses, which hold values and remarks).
func documentedLabels(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile("../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "## Metrics: `GET /metrics`")
	if !ok {
		t.Fatal("CONFIG.md has no Metrics section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	word := regexp.MustCompile("`([a-z_]+)`")
	out := map[string][]string{}
	for _, l := range strings.Split(section, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cells := strings.Split(strings.TrimPrefix(l, "|"), "|")
		if len(cells) < 4 {
			t.Fatalf("a Metrics row of %d cells: %s", len(cells), l)
		}
		var bare strings.Builder
		depth := 0
		for _, r := range cells[2] {
			switch {
			case r == '(':
				depth++
			case r == ')':
				depth--
			case depth == 0:
				bare.WriteRune(r)
			}
		}
		labels := []string{}
		for _, m := range word.FindAllStringSubmatch(bare.String(), -1) {
			labels = append(labels, m[1])
		}
		slices.Sort(labels)
		for _, m := range word.FindAllStringSubmatch(cells[0], -1) {
			out[m[1]] = labels
		}
	}
	if len(out) == 0 {
		t.Fatal("CONFIG.md's Metrics table has no rows")
	}
	return out
}

// TestMetricsLabelsAcrossReloads: a gateway whose target, route and key names use every character
// a name may have besides letters and digits (. _ - : / @ +) serves traffic, then is reloaded
// into a configuration without one route, one target and one key, then into one that brings them
// back. Every scrape parses with Prometheus's parser (buckets cumulative, +Inf equal to _count,
// _sum not negative: scrapeOfficial), every series has exactly the labels CONFIG.md's Metrics
// table gives it, the names read back as written, and no counter is ever below a value it had in
// an earlier scrape across a reload, unless a reload removed the series in between: one brought
// back starts from zero (CONFIG.md, TestReloadForgetsRemovedSeries).
func TestMetricsLabelsAcrossReloads(t *testing.T) {
	const (
		good  = "org/llama-3.1:8b@q4+x_y"
		bad   = "t.bad-2:x/y@z+w"
		route = "meta/llama_3.1:70b@fp8+y"
		other = "r.2-x:y/z@w+v"
		key   = "k.a_b-c:d/e@f+g"
	)
	ok, fail := newFake(t, "ok"), newFake(t, "fail")
	fail.set(errHandler(500, "boom", "internal"))
	cfgText := func(all bool) string {
		var b strings.Builder
		fmt.Fprintf(&b, "[targets.%q]\nadapter = \"openai\"\nurl = %q\nclass = \"private\"\n\n", good, ok.url())
		if all {
			fmt.Fprintf(&b, "[targets.%q]\nadapter = \"openai\"\nurl = %q\nclass = \"private\"\n\n", bad, fail.url())
			fmt.Fprintf(&b, "[routes.%q]\ntargets = [%q, %q]\n\n", other, bad, good)
		}
		fmt.Fprintf(&b, "[routes.%q]\ntargets = [%q]\n\n", route, good)
		fmt.Fprintf(&b, "[[keys]]\nname = \"scraper\"\nsha256 = %q\nroutes = []\n\n", sha256hex("hk-scrape"))
		fmt.Fprintf(&b, "[[keys]]\nname = \"user\"\nsha256 = %q\n\n", sha256hex("hk-user"))
		if all {
			fmt.Fprintf(&b, "[[keys]]\nname = %q\nsha256 = %q\nrpm = 1\n\n", key, sha256hex("hk-odd"))
		}
		return b.String()
	}
	reloads := &metrics.Reloads{}
	build := func(text string, prev *server.Server) *server.Server {
		cfg, err := config.Parse([]byte(text), "test.toml", func(string) string { return "" })
		if err != nil {
			t.Fatalf("config: %v\n%s", err, text)
		}
		s, err := server.New(server.Options{Config: cfg, Previous: prev, Reloads: reloads,
			RetryBase: time.Millisecond, RetryMax: time.Millisecond,
			Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
		if err != nil {
			t.Fatalf("server: %v", err)
		}
		t.Cleanup(s.Close)
		return s
	}
	cur := build(cfgText(true), nil)
	l := server.NewLive(cur)
	ts := serveLive(t, l)
	hc := ts.Client()
	send := func(token, path, body string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	traffic := func(all bool) {
		for _, m := range []string{route, other, "nope"} {
			for _, stream := range []bool{false, true} {
				body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, m, stream)
				send("hk-user", "/v1/chat/completions", body)
				send("hk-odd", "/v1/chat/completions", body) // a second one is over its rpm
			}
		}
		send("hk-user", "/v1/embeddings", fmt.Sprintf(`{"model":%q,"input":"x"}`, route))
		send("hk-user", "/v1/responses", fmt.Sprintf(`{"model":%q,"input":"hi"}`, route))
	}

	doc := documentedLabels(t)
	// The table's reader reads what it should, or the label check holds of nothing.
	for name, want := range map[string][]string{"hayula_requests_total": {"code", "endpoint", "route"},
		"hayula_stream_ends_total": {"end", "endpoint", "route", "target"}, "hayula_failed_open_total": {},
		"hayula_process_restarts_total": {"target"}} {
		if !slices.Equal(doc[name], want) {
			t.Fatalf("CONFIG.md's labels of %s read as %v, want %v", name, doc[name], want)
		}
	}
	// removable names a series of the route, target or key that reloads remove and bring back.
	removable := func(series string) bool {
		return strings.Contains(series, bad) || strings.Contains(series, key) || strings.Contains(series, other)
	}
	most := map[string]float64{} // the highest value each counter series has had since it was last removed
	fresh := false               // a reload has just brought the removed names back, with no traffic since
	counted := false             // traffic went out: the counters left out while zero are written
	check := func(when string, all bool) {
		t.Helper()
		s := scrapeOfficial(t, hc, ts.URL, "hk-scrape")
		for name, f := range s.fams {
			want, ok := doc[name]
			if !ok {
				t.Errorf("%s: /metrics writes %s, which CONFIG.md's Metrics table does not name", when, name)
				continue
			}
			for _, m := range f.GetMetric() {
				var got []string
				for _, lp := range m.GetLabel() {
					got = append(got, lp.GetName())
				}
				slices.Sort(got)
				if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Errorf("%s: a %s series has labels %v; CONFIG.md gives %v", when, name, got, want)
				}
			}
		}
		for _, series := range []string{
			fmt.Sprintf(`hayula_served_total{route=%q,target=%q}`, route, good),
			fmt.Sprintf(`hayula_upstream_in_flight{target=%q}`, good),
			fmt.Sprintf(`hayula_key_requests_total{key=%q}`, key),
			fmt.Sprintf(`hayula_key_limited_total{key=%q,cap="rpm"}`, key),
			fmt.Sprintf(`hayula_upstream_attempts_total{target=%q,result="server_error"}`, bad),
			fmt.Sprintf(`hayula_requests_total{endpoint="chat",route=%q,code="200"}`, other),
		} {
			if !counted {
				break
			}
			present := strings.Contains(s.text, series+" ")
			// A series brought back starts from zero: before its traffic, only those written at
			// zero are there.
			want := all || !removable(series)
			if fresh && removable(series) && !strings.HasPrefix(series, "hayula_key_requests_total") {
				want = false
			}
			if present != want {
				t.Errorf("%s: series %s written %v", when, series, present)
			}
		}
		for k, v := range counterValues(s.fams) {
			if v < most[k] {
				t.Errorf("%s: %s is %v, below the %v an earlier scrape read", when, k, v, most[k])
			}
			most[k] = max(most[k], v)
		}
		if !all {
			maps.DeleteFunc(most, func(k string, _ float64) bool { return removable(k) })
		}
	}

	// A scraper beside it all, reloads included: no counter it reads is ever below one it read,
	// but for those of the names reloads remove, which it may not see gone before they come back.
	stop, done := make(chan struct{}), make(chan []string)
	go func() {
		var problems []string
		seen := map[string]float64{}
		for {
			select {
			case <-stop:
				done <- problems
				return
			default:
			}
			req, _ := http.NewRequest(http.MethodGet, ts.URL+"/metrics", nil)
			req.Header.Set("Authorization", "Bearer hk-scrape")
			resp, err := hc.Do(req)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			parser := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := parser.TextToMetricFamilies(resp.Body)
			resp.Body.Close()
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			for k, v := range counterValues(fams) {
				if removable(k) {
					continue
				}
				if v < seen[k] && len(problems) < 10 {
					problems = append(problems, fmt.Sprintf("%s read %v after %v", k, v, seen[k]))
				}
				seen[k] = max(seen[k], v)
			}
		}
	}()
	defer func() {
		close(stop)
		for _, p := range <-done {
			t.Errorf("the scraper beside: %s", p)
		}
	}()

	check("at start", true)
	traffic(true)
	counted = true
	check("first configuration", true)
	for i, all := range []bool{false, true, false, true} {
		next := build(cfgText(all), cur)
		l.Replace(next)
		reloads.Done(true, time.Now())
		cur = next
		fresh = all
		check(fmt.Sprintf("after reload %d", i+1), all)
		fresh = false
		traffic(all)
		check(fmt.Sprintf("after reload %d's traffic", i+1), all)
	}
}
