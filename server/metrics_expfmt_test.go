package server_test

// The /metrics exposition read by Prometheus's own parser (expfmt), after traffic of every kind a
// gateway sees: what a scrape that parses with a hand-written reader only might still get wrong.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/metrics"
	"github.com/hayula/gateway/server"
)

// expoScrape is one scrape, parsed.
type expoScrape struct {
	text string
	fams map[string]*dto.MetricFamily
}

// scrapeOfficial scrapes base with token and parses the answer with expfmt, as Prometheus reads
// the text format, then checks what the parser leaves to its caller: HELP and TYPE once for every
// family, each family's lines together, no series twice, histograms whose buckets rise to a +Inf
// equal to _count.
func scrapeOfficial(t *testing.T, hc *http.Client, base, token string) expoScrape {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); expfmt.NewFormat(expfmt.TypeTextPlain) != expfmt.ResponseFormat(resp.Header) {
		t.Fatalf("scrape: Content-Type %q is not what Prometheus reads as the text format", ct)
	}
	text := string(b)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("expfmt: %v\n%s", err, text)
	}
	if problems := expositionProblems(text, fams); len(problems) > 0 {
		t.Fatalf("%s\nthe scrape:\n%s", strings.Join(problems, "\n"), text)
	}
	return expoScrape{text: text, fams: fams}
}

// expositionProblems is what expfmt accepts and the format (or Prometheus's ingestion) does not.
func expositionProblems(text string, fams map[string]*dto.MetricFamily) []string {
	var out []string
	help, typ := map[string]int{}, map[string]int{}
	series := map[string]bool{}
	order := []string{} // the family of each run of lines, in order
	familyOf := func(sample string) string {
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(sample, suf); ok {
				if f := fams[b]; f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
					return b
				}
			}
		}
		return sample
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		var fam string
		switch {
		case strings.HasPrefix(line, "# HELP "):
			fam = strings.SplitN(line, " ", 4)[2]
			help[fam]++
			if f := fams[fam]; f != nil && strings.Contains(f.GetHelp(), `\`) {
				// No help is written with a backslash: one reads back as a backslash shown to a
				// person (a Go raw string's \" was, in hayula_stream_ends_total's).
				out = append(out, fmt.Sprintf("family %s: its help reads back with a backslash: %q", fam, f.GetHelp()))
			}
		case strings.HasPrefix(line, "# TYPE "):
			fam = strings.SplitN(line, " ", 4)[2]
			typ[fam]++
		case line == "" || strings.HasPrefix(line, "#"):
			out = append(out, fmt.Sprintf("line %q: a blank line or a bare comment", line))
			continue
		default:
			// The series is the line without its value: the name and the labels as written.
			// The gateway writes label pairs in a fixed order, so a series written twice is
			// the same text twice.
			i := strings.LastIndexByte(line, ' ')
			if i < 0 {
				out = append(out, fmt.Sprintf("line %q: no value", line))
				continue
			}
			s := line[:i]
			if series[s] {
				out = append(out, "series written twice: "+s)
			}
			series[s] = true
			name := s
			if j := strings.IndexByte(s, '{'); j >= 0 {
				name = s[:j]
			}
			fam = familyOf(name)
		}
		if len(order) == 0 || order[len(order)-1] != fam {
			order = append(order, fam)
		}
	}
	seen := map[string]bool{}
	for _, f := range order {
		if seen[f] {
			out = append(out, "family "+f+" comes back after another's lines")
		}
		seen[f] = true
	}
	for name, f := range fams {
		if help[name] != 1 || typ[name] != 1 {
			out = append(out, fmt.Sprintf("family %s: %d HELP and %d TYPE lines, want one each", name, help[name], typ[name]))
		}
		if f.GetHelp() == "" {
			out = append(out, "family "+name+": empty HELP")
		}
		if f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			bs := h.GetBucket()
			id := fmt.Sprintf("%s%v", name, m.GetLabel())
			if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].GetUpperBound(), 1) {
				out = append(out, id+": no +Inf bucket")
				continue
			}
			for i := 1; i < len(bs); i++ {
				if bs[i].GetUpperBound() <= bs[i-1].GetUpperBound() {
					out = append(out, fmt.Sprintf("%s: le %v after %v", id, bs[i].GetUpperBound(), bs[i-1].GetUpperBound()))
				}
				if bs[i].GetCumulativeCount() < bs[i-1].GetCumulativeCount() {
					out = append(out, fmt.Sprintf("%s: bucket le=%v holds %d, fewer than le=%v's %d", id,
						bs[i].GetUpperBound(), bs[i].GetCumulativeCount(), bs[i-1].GetUpperBound(), bs[i-1].GetCumulativeCount()))
				}
			}
			if inf := bs[len(bs)-1].GetCumulativeCount(); inf != h.GetSampleCount() {
				out = append(out, fmt.Sprintf("%s: +Inf bucket %d, _count %d", id, inf, h.GetSampleCount()))
			}
			if h.GetSampleSum() < 0 || math.IsNaN(h.GetSampleSum()) {
				out = append(out, fmt.Sprintf("%s: _sum %v", id, h.GetSampleSum()))
			}
		}
	}
	return out
}

// counterValues is every counter's value, and every histogram's buckets, _sum and _count, by
// series.
func counterValues(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			pairs := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				pairs = append(pairs, l.GetName()+"="+fmt.Sprintf("%q", l.GetValue()))
			}
			sort.Strings(pairs)
			id := name + "{" + strings.Join(pairs, ",") + "}"
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[id] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[id+"_count"] = float64(h.GetSampleCount())
				out[id+"_sum"] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					out[fmt.Sprintf("%s_bucket{le=%v}", id, b.GetUpperBound())] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

// left is how many chat requests on route hold /metrics counts, whatever their status.
func left(t *testing.T, hc *http.Client, base string) float64 {
	t.Helper()
	s := scrapeOfficial(t, hc, base, "hk-scrape")
	var n float64
	for _, m := range s.fams["hayula_requests_total"].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["route"] == "hold" && l["endpoint"] == "chat" {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// expoKeyName is a client key's name with every character a label value must escape.
const expoKeyName = "fam \"the boss\" \\ all\nof us"

// expoConfig is the gateway TestMetricsExpfmt runs: a route for every way a chain ends, and keys.
func expoConfig(u map[string]string, extra string) string {
	var b strings.Builder
	for _, n := range []string{"ok", "e500", "e429", "ovf", "e401", "e400", "down", "slow", "loading", "brk", "hold"} {
		extraT := []string{}
		if n == "slow" {
			extraT = append(extraT, `timeout = "50ms"`)
		}
		if n == "ok" {
			extraT = append(extraT, `api_key_env = "EXPO_UP_KEY"`)
		}
		b.WriteString(target(n, u[n], "private", extraT...))
	}
	b.WriteString(`[routes.fall]
targets = ["down", "e500", "e429", "slow", "loading", "ok"]
[routes.dead]
targets = ["down", "e500", "slow"]
[routes.ovf]
targets = ["ovf", "ok"]
[routes.ep]
targets = ["e401"]
[routes.req]
targets = ["e400", "ok"]
[routes.brk]
targets = ["brk"]
[routes.hold]
targets = ["hold"]
[routes.solo]
targets = ["ok"]
`)
	b.WriteString(extra)
	b.WriteString(fmt.Sprintf(`
[[keys]]
name = "scraper"
sha256 = %q
routes = []

[[keys]]
name = %q
sha256 = %q
rpm = 1000

[[keys]]
name = "capped"
sha256 = %q
max_concurrent = 1
`, sha256hex("hk-scrape"), expoKeyName, sha256hex("hk-family"), sha256hex("hk-capped")))
	return b.String()
}

// TestMetricsExpfmt drives a gateway through successes, fallbacks across a chain, every failure
// class an upstream can cause, streams (whole, broken and left by their client), the client's
// own 4xx, authentication failures, a key's cap and a configuration reload, and parses every
// scrape with Prometheus's own text parser: each is valid, its families complete and its
// histograms consistent, no counter goes back from one scrape to the next, and the key name's
// quote, backslash and line feed come back as they were.
func TestMetricsExpfmt(t *testing.T) {
	up := map[string]string{}
	fakes := map[string]*fake{}
	for _, n := range []string{"ok", "e500", "e429", "ovf", "e401", "e400", "slow", "loading", "brk", "hold"} {
		fakes[n] = newFake(t, n)
		up[n] = fakes[n].url()
	}
	fakes["e500"].set(errHandler(500, "boom", "internal"))
	fakes["e429"].set(errHandler(429, "rate_limit_exceeded", "slow down"))
	fakes["ovf"].set(errHandler(400, "context_length_exceeded", "This model's maximum context length is 4096 tokens"))
	fakes["e401"].set(errHandler(401, "invalid_api_key", "who are you"))
	fakes["e400"].set(errHandler(400, "invalid_value", "temperature is out of range"))
	fakes["slow"].set(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	fakes["loading"].set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"status":"loading model"}`)
	})
	event := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}` + "\n\n"
	fakes["brk"].set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, event)
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	fakes["hold"].set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, event)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up["down"] = "http://" + ln.Addr().String() + "/v1"
	ln.Close() // connection refused from now on

	env := map[string]string{"EXPO_UP_KEY": "sk-expo-upstream"}
	parse := func(text string) *config.Config {
		cfg, err := config.Parse([]byte(text), "test.toml", func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("config: %v", err)
		}
		return cfg
	}
	reloads := &metrics.Reloads{}
	newServer := func(cfg *config.Config, prev *server.Server) *server.Server {
		s, err := server.New(server.Options{Config: cfg, Previous: prev, Reloads: reloads,
			RetryBase: time.Millisecond, RetryMax: 50 * time.Millisecond,
			Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
		if err != nil {
			t.Fatalf("server: %v", err)
		}
		t.Cleanup(s.Close)
		return s
	}
	first := newServer(parse(expoConfig(up, "")), nil)
	l := server.NewLive(first)
	ts := serveLive(t, l)
	hc := ts.Client()

	send := func(path, token, body string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	chat := func(model string, stream bool) string {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"stream_options":%s,"messages":[{"role":"user","content":"hi"}]}`,
			model, stream, map[bool]string{true: `{"include_usage":true}`, false: "null"}[stream])
	}
	// hold opens a stream on route hold and reads its first event; calling what it returns hangs
	// up, and waits until the gateway has counted the request.
	hold := func() (hangUp func()) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(chat("hold", true)))
		req.Header.Set("Authorization", "Bearer hk-family")
		resp, err := hc.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
			cancel()
			t.Fatalf("first event of the held stream: %v", err)
		}
		return func() {
			t.Helper()
			before := left(t, hc, ts.URL)
			cancel()
			resp.Body.Close()
			settles(func() bool { return left(t, hc, ts.URL) != before })
			if left(t, hc, ts.URL) == before {
				t.Fatalf("the stream its client left is not counted (%v before it)", before)
			}
		}
	}

	last := map[string]float64{}
	check := func(when string) expoScrape {
		t.Helper()
		s := scrapeOfficial(t, hc, ts.URL, "hk-scrape")
		now := counterValues(s.fams)
		for k, v := range last {
			if n, ok := now[k]; ok && n < v {
				t.Errorf("%s: %s went back from %v to %v", when, k, v, n)
			} else if !ok && v > 0 {
				t.Errorf("%s: %s (was %v) is gone", when, k, v)
			}
		}
		last = now
		return s
	}

	traffic := func(when string) {
		t.Helper()
		for _, c := range []struct {
			path, token, body string
			want              int
		}{
			{"/v1/chat/completions", "hk-family", chat("solo", false), 200},
			{"/v1/chat/completions", "hk-family", chat("solo", true), 200},
			{"/v1/chat/completions", "hk-family", chat("fall", false), 200},
			{"/v1/chat/completions", "hk-family", chat("fall", true), 200},
			{"/v1/chat/completions", "hk-family", chat("dead", false), 503},
			{"/v1/chat/completions", "hk-family", chat("dead", false), 503}, // every target cools down: fails open
			{"/v1/chat/completions", "hk-family", chat("ovf", false), 200},
			{"/v1/chat/completions", "hk-family", chat("ep", false), 401},
			{"/v1/chat/completions", "hk-family", chat("req", false), 400},
			{"/v1/chat/completions", "hk-family", chat("brk", true), 200},
			{"/v1/chat/completions", "hk-family", chat("nope", false), 404},
			{"/v1/chat/completions", "hk-family", `{"model":"solo","messages":[]}`, 400},
			{"/v1/chat/completions", "hk-family", `{"model":"solo",`, 400},
			{"/v1/chat/completions", "hk-wrong", chat("solo", false), 401},
			{"/v1/chat/completions", "", chat("solo", false), 401},
			{"/v1/chat/completions", "hk-scrape", chat("solo", false), 404},
			{"/v1/embeddings", "hk-family", `{"model":"solo","input":"x"}`, 200},
			{"/v1/completions", "hk-family", `{"model":"solo","prompt":"x"}`, 200},
			{"/v1/responses", "hk-family", `{"model":"solo","input":"hi"}`, 200},
			{"/v1/responses", "hk-family", `{"model":"fall","input":"hi","stream":true}`, 200},
		} {
			if got := send(c.path, c.token, c.body); got != c.want {
				t.Errorf("%s: %s %s with %q: %d, want %d", when, c.path, c.body, c.token, got, c.want)
			}
			check(when + ": after " + c.path + " " + c.body)
		}
		hold()()
		check(when + ": after a client left a stream")
	}

	check("at start")
	traffic("first configuration")
	s := check("before the reload")
	if !strings.Contains(s.text, `key="fam \"the boss\" \\ all\nof us"`) {
		t.Errorf("the key name is not escaped as the format says:\n%s", s.text)
	}
	var found bool
	for _, m := range s.fams["hayula_key_requests_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			found = found || lp.GetName() == "key" && lp.GetValue() == expoKeyName
		}
	}
	if !found {
		t.Errorf("no hayula_key_requests_total series reads back as key %q", expoKeyName)
	}

	if v := last["hayula_failed_open_total{}"]; v == 0 {
		t.Errorf("no request was served by failing open: the reload would not show that count going on")
	}

	// A reload that adds a route, with a stream under way: the counters of what both
	// configurations have go on, and the stream, counted when its client leaves after the
	// reload, is counted where a scrape of the new configuration sees it.
	hangUp := hold()
	next := newServer(parse(expoConfig(up, "[routes.added]\ntargets = [\"ok\"]\n")), first)
	l.Replace(next)
	reloads.Done(true, time.Now())
	check("after the reload")
	hangUp()
	check("after the stream the reload crossed")
	traffic("second configuration")
	if got := send("/v1/chat/completions", "hk-family", chat("added", false)); got != 200 {
		t.Errorf("the route the reload added: %d", got)
	}
	check("at the end")
	// Each traffic round ended streams each way; the held stream the reload crossed is a third
	// client_left, counted in the series the first configuration's two went on in.
	for k, want := range map[string]float64{
		`hayula_stream_ends_total{end="done",endpoint="chat",route="solo",target="ok"}`:          2,
		`hayula_stream_ends_total{end="done",endpoint="chat",route="fall",target="ok"}`:          2,
		`hayula_stream_ends_total{end="done",endpoint="responses",route="fall",target="ok"}`:     2,
		`hayula_stream_ends_total{end="broke_off",endpoint="chat",route="brk",target="brk"}`:     2,
		`hayula_stream_ends_total{end="client_left",endpoint="chat",route="hold",target="hold"}`: 3,
	} {
		if last[k] != want {
			t.Errorf("%s = %v, want %v", k, last[k], want)
		}
	}
}
