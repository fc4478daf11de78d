package server_test

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// family is one metric family of a parsed exposition.
type family struct {
	typ     string
	samples []sample
}

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseExposition reads text in the Prometheus text format 0.0.4 as strictly as the format
// allows: HELP and TYPE at most once per family and before its samples, a family's samples
// together, names and label names valid, label values with only the three escapes, values that
// parse, no series twice.
func parseExposition(text string) (map[string]*family, error) {
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("does not end with a line feed")
	}
	fams := map[string]*family{}
	helped := map[string]bool{}
	seen := map[string]bool{}
	closed := map[string]bool{} // families whose samples ended
	current := ""
	base := func(name string) string {
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok {
				if f := fams[b]; f != nil && (f.typ == "histogram" || f.typ == "summary") {
					return b
				}
			}
		}
		return name
	}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		errf := func(format string, a ...any) error {
			return fmt.Errorf("line %d %q: %s", n+1, line, fmt.Sprintf(format, a...))
		}
		if strings.HasPrefix(line, "#") {
			f := strings.SplitN(line, " ", 4)
			if len(f) < 3 || (f[1] != "HELP" && f[1] != "TYPE") {
				continue // a comment
			}
			name := f[2]
			if !metricName.MatchString(name) {
				return nil, errf("bad metric name")
			}
			if closed[name] || (current != "" && current != name && fams[name] != nil) {
				return nil, errf("family comes back after its samples")
			}
			switch f[1] {
			case "HELP":
				if helped[name] {
					return nil, errf("second HELP")
				}
				helped[name] = true
				if len(f) == 4 {
					for i := 0; i < len(f[3]); i++ {
						if f[3][i] == '\\' {
							if i+1 >= len(f[3]) || (f[3][i+1] != '\\' && f[3][i+1] != 'n') {
								return nil, errf("bad escape in HELP")
							}
							i++
						}
					}
				}
			case "TYPE":
				if len(f) != 4 {
					return nil, errf("TYPE without a type")
				}
				switch f[3] {
				case "counter", "gauge", "histogram", "summary", "untyped":
				default:
					return nil, errf("unknown type")
				}
				if fams[name] != nil {
					return nil, errf("second TYPE or TYPE after samples")
				}
				fams[name] = &family{typ: f[3]}
			}
			if current != "" && current != name {
				closed[current] = true
			}
			current = name
			continue
		}
		if line == "" {
			return nil, errf("empty line")
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, errf("%v", err)
		}
		b := base(s.name)
		if closed[b] {
			return nil, errf("family %s interleaved", b)
		}
		if current != "" && current != b {
			closed[current] = true
		}
		current = b
		if fams[b] == nil {
			fams[b] = &family{typ: "untyped"}
		}
		key := s.name + "{" + labelKey(s.labels, "") + "}"
		if seen[key] {
			return nil, errf("series twice")
		}
		seen[key] = true
		fams[b].samples = append(fams[b].samples, s)
	}
	return fams, nil
}

func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name = line[:i]
	if !metricName.MatchString(s.name) {
		return s, fmt.Errorf("bad metric name")
	}
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq < 0 {
				return s, fmt.Errorf("label without =")
			}
			ln := rest[:eq]
			if !labelName.MatchString(ln) || strings.HasPrefix(ln, "__") {
				return s, fmt.Errorf("bad label name %q", ln)
			}
			if _, dup := s.labels[ln]; dup {
				return s, fmt.Errorf("label %s twice", ln)
			}
			rest = rest[eq+1:]
			if !strings.HasPrefix(rest, `"`) {
				return s, fmt.Errorf("label value not quoted")
			}
			var v strings.Builder
			j := 1
			for ; j < len(rest) && rest[j] != '"'; j++ {
				switch c := rest[j]; c {
				case '\\':
					j++
					if j >= len(rest) {
						return s, fmt.Errorf("escape at end")
					}
					switch rest[j] {
					case '\\':
						v.WriteByte('\\')
					case '"':
						v.WriteByte('"')
					case 'n':
						v.WriteByte('\n')
					default:
						return s, fmt.Errorf("bad escape \\%c", rest[j])
					}
				case '\n':
					return s, fmt.Errorf("raw line feed in a label value")
				default:
					v.WriteByte(c)
				}
			}
			if j >= len(rest) {
				return s, fmt.Errorf("unterminated label value")
			}
			s.labels[ln] = v.String()
			rest = rest[j+1:]
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
			} else if !strings.HasPrefix(rest, "}") {
				return s, fmt.Errorf("want , or } after a label")
			}
		}
	}
	f := strings.Split(strings.TrimPrefix(rest, " "), " ")
	if !strings.HasPrefix(rest, " ") || len(f) < 1 || len(f) > 2 {
		return s, fmt.Errorf("want one space, a value and perhaps a timestamp")
	}
	v, err := parseValue(f[0])
	if err != nil {
		return s, err
	}
	s.value = v
	return s, nil
}

func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// labelKey is the labels but skip, sorted, as one string.
func labelKey(l map[string]string, skip string) string {
	var ks []string
	for k, v := range l {
		if k != skip {
			ks = append(ks, k+"="+strconv.Quote(v))
		}
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// checkHistograms checks every histogram of fams: for each series, buckets in rising le ending
// at +Inf, cumulative, a _sum, and a _count equal to the +Inf bucket.
func checkHistograms(fams map[string]*family) error {
	for name, f := range fams {
		if f.typ != "histogram" {
			continue
		}
		type series struct {
			les     []float64
			counts  []float64
			sum     bool
			count   float64
			counted bool
		}
		all := map[string]*series{}
		get := func(k string) *series {
			if all[k] == nil {
				all[k] = &series{}
			}
			return all[k]
		}
		for _, s := range f.samples {
			switch s.name {
			case name + "_bucket":
				le, ok := s.labels["le"]
				if !ok {
					return fmt.Errorf("%s: bucket without le", name)
				}
				v, err := parseValue(le)
				if err != nil {
					return fmt.Errorf("%s: le %q: %v", name, le, err)
				}
				sr := get(labelKey(s.labels, "le"))
				sr.les = append(sr.les, v)
				sr.counts = append(sr.counts, s.value)
			case name + "_sum":
				get(labelKey(s.labels, "")).sum = true
			case name + "_count":
				sr := get(labelKey(s.labels, ""))
				sr.count, sr.counted = s.value, true
			default:
				return fmt.Errorf("%s: sample %s in a histogram", name, s.name)
			}
		}
		for k, sr := range all {
			if len(sr.les) == 0 || !math.IsInf(sr.les[len(sr.les)-1], 1) {
				return fmt.Errorf("%s{%s}: no +Inf bucket", name, k)
			}
			for i := 1; i < len(sr.les); i++ {
				if sr.les[i] <= sr.les[i-1] || sr.counts[i] < sr.counts[i-1] {
					return fmt.Errorf("%s{%s}: buckets not rising or not cumulative", name, k)
				}
			}
			if !sr.sum || !sr.counted || sr.count != sr.counts[len(sr.counts)-1] {
				return fmt.Errorf("%s{%s}: _sum or _count missing, or _count not the +Inf bucket", name, k)
			}
		}
	}
	return nil
}

// TestMetricsParseStrictly: a scrape after requests of every kind (served, fallen through,
// refused, unknown model, streamed, a panic) is valid text format 0.0.4, its histograms are
// consistent, and each endpoint and route's requests_total adds up to its duration's _count.
func TestMetricsParseStrictly(t *testing.T) {
	bad, good := newFake(t, "bad"), newFake(t, "good")
	bad.set(errHandler(503, "overloaded", "busy"))
	cfg := target("bad", bad.url(), "private") + target("good", good.url(), "private") +
		"[routes.r]\ntargets = [\"bad\", \"good\"]\n[routes.solo]\ntargets = [\"good\"]\n"
	g := newGateway(t, cfg, nil)
	g.chat(t, "r")
	g.chat(t, "nope")
	g.post(t, "/v1/chat/completions", `{"model":"solo","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	g.post(t, "/v1/chat/completions", `{"model":"solo","messages":[]}`)
	g.post(t, "/v1/embeddings", `{"model":"solo","input":"x"}`)
	good.set(errHandler(418, "teapot", "no"))
	g.chat(t, "solo")

	var text string
	settles(func() bool {
		_, lines := scrape(t, g)
		text = string(g.do(t, "GET", "/metrics", "").body)
		n := 0
		for l := range lines {
			if strings.HasPrefix(l, "hayula_requests_total") {
				n++
			}
		}
		return n >= 5
	})
	fams, err := parseExposition(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if err := checkHistograms(fams); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	for _, e := range durationCountMismatches(fams) {
		t.Error(e)
	}
}

// durationCountMismatches lists the endpoint and route cells whose duration histogram's _count
// is not the sum of their requests_total over the codes: every request is counted once in each.
func durationCountMismatches(fams map[string]*family) []string {
	byCell := map[string]float64{}
	if f := fams["hayula_requests_total"]; f != nil {
		for _, s := range f.samples {
			byCell[labelKey(s.labels, "code")] += s.value
		}
	}
	var out []string
	if f := fams["hayula_request_duration_seconds"]; f != nil {
		for _, s := range f.samples {
			if s.name == "hayula_request_duration_seconds_count" && s.value != byCell[labelKey(s.labels, "")] {
				out = append(out, fmt.Sprintf("%v: _count %v, requests_total %v", s.labels, s.value, byCell[labelKey(s.labels, "")]))
			}
		}
	}
	return out
}
