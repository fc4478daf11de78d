package metrics

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

// sampleLine is one sample line of the text format: a metric name, optional labels with quoted
// values (escapes \\, \" and \n only), a space and a value.
var sampleLine = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\[\\"n]|[^\\"\n])*",?)*\})? (\+Inf|-Inf|NaN|-?[0-9.e+-]+)$`)

// parse checks every line of out against the format and returns the samples, line → value
// ("name{labels}" → "value"). Every sample's family must have been declared with HELP and TYPE.
func parse(t *testing.T, out string) map[string]string {
	t.Helper()
	samples := map[string]string{}
	declared := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "# HELP "):
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if len(f) != 4 {
				t.Fatalf("bad TYPE line %q", line)
			}
			if _, dup := declared[f[2]]; dup {
				t.Fatalf("family %s declared twice", f[2])
			}
			declared[f[2]] = f[3]
		default:
			if !sampleLine.MatchString(line) {
				t.Fatalf("not a sample line: %q", line)
			}
			i := strings.LastIndexByte(line, ' ')
			series := line[:i]
			name := series
			if j := strings.IndexByte(series, '{'); j >= 0 {
				name = series[:j]
			}
			base := name
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suf); ok && declared[b] == "histogram" {
					base = b
				}
			}
			if _, ok := declared[base]; !ok {
				t.Fatalf("sample %q of undeclared family", line)
			}
			if _, dup := samples[series]; dup {
				t.Fatalf("series %s twice", series)
			}
			samples[series] = line[i+1:]
		}
	}
	return samples
}

func TestSetCounts(t *testing.T) {
	s := New([]string{"chat", "saif"}, []string{"a", "b"}, time.Unix(1700000000, 500000000))
	s.Request(core.OpChat, 1, 200, 3*time.Millisecond)
	s.Request(core.OpChat, 1, 200, 2*time.Second)
	s.Request(core.OpChat, NoRoute, 404, time.Millisecond)
	s.Request(core.OpEmbeddings, 0, 418, time.Millisecond) // no slot: counted apart
	s.Request(core.OpEmbeddings, 0, 418, time.Millisecond)
	s.Attempt(0, core.ClassServerError, 0)
	s.Attempt(1, core.ClassNone, 40*time.Millisecond)
	s.Attempt(1, core.ClassNone, 10*time.Minute) // past every bucket: +Inf only
	s.Served(1, 1)
	s.Attempt(7, core.ClassNone, 0) // out of range: ignored
	s.Served(5, 0)
	s.StreamEnd(core.OpChat, 1, 0, StreamDone)
	s.StreamEnd(core.OpChat, 1, 0, StreamDone)
	s.StreamEnd(core.OpChat, 1, 1, StreamBrokeOff)
	s.StreamEnd(OpResponses, 0, 1, StreamClientLeft)
	s.StreamEnd(core.OpChat, 2, 0, StreamDone)    // out of range: ignored
	s.StreamEnd(core.OpChat, 0, 0, numStreamEnds) // no such end: ignored

	var w Writer
	s.Write(&w, func(w *Writer) {
		w.Family("extra_gauge", "gauge", "A caller's gauge.")
		w.Sample("extra_gauge", 3, "target", `a"b\c`+"\n")
	})
	got := parse(t, string(w.Bytes()))
	want := map[string]string{
		`hayula_requests_total{endpoint="chat",route="saif",code="200"}`:                           "2",
		`hayula_requests_total{endpoint="chat",route="",code="404"}`:                               "1",
		`hayula_requests_total{endpoint="embeddings",route="chat",code="418"}`:                     "2",
		`hayula_request_duration_seconds_bucket{endpoint="chat",route="saif",le="0.005"}`:          "1",
		`hayula_request_duration_seconds_bucket{endpoint="chat",route="saif",le="1"}`:              "1",
		`hayula_request_duration_seconds_bucket{endpoint="chat",route="saif",le="2.5"}`:            "2",
		`hayula_request_duration_seconds_bucket{endpoint="chat",route="saif",le="+Inf"}`:           "2",
		`hayula_request_duration_seconds_sum{endpoint="chat",route="saif"}`:                        "2.003",
		`hayula_request_duration_seconds_count{endpoint="chat",route="saif"}`:                      "2",
		`hayula_upstream_attempts_total{target="a",result="server_error"}`:                         "1",
		`hayula_upstream_attempts_total{target="b",result="ok"}`:                                   "2",
		`hayula_upstream_first_response_seconds_bucket{target="b",le="0.05"}`:                      "1",
		`hayula_upstream_first_response_seconds_bucket{target="b",le="300"}`:                       "1",
		`hayula_upstream_first_response_seconds_bucket{target="b",le="+Inf"}`:                      "2",
		`hayula_upstream_first_response_seconds_count{target="a"}`:                                 "0",
		`hayula_served_total{route="saif",target="b"}`:                                             "1",
		`hayula_stream_ends_total{endpoint="chat",route="saif",target="a",end="done"}`:             "2",
		`hayula_stream_ends_total{endpoint="chat",route="saif",target="b",end="broke_off"}`:        "1",
		`hayula_stream_ends_total{endpoint="responses",route="chat",target="b",end="client_left"}`: "1",
		`process_start_time_seconds`:                                                               "1.7000000005e+09",
		`extra_gauge{target="a\"b\\c\n"}`:                                                          "3",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, absent := range []string{
		`hayula_requests_total{endpoint="chat",route="chat",code="200"}`, // zero counters are left out
		`hayula_served_total{route="chat",target="a"}`,
		`hayula_stream_ends_total{endpoint="chat",route="saif",target="a",end="broke_off"}`,
	} {
		if v, ok := got[absent]; ok {
			t.Errorf("%s = %s, want no such series", absent, v)
		}
	}
	// Every histogram has its 15 bounds and +Inf, cumulative.
	if n := strings.Count(string(w.Bytes()), `hayula_upstream_first_response_seconds_bucket{target="a",`); n != len(buckets)+1 {
		t.Errorf("%d buckets for target a, want %d", n, len(buckets)+1)
	}
}

func TestNilSetCountsNothing(t *testing.T) {
	var s *Set
	s.Request(core.OpChat, 0, 200, time.Second)
	s.Attempt(0, core.ClassNone, time.Second)
	s.Served(0, 0)
	s.StreamEnd(core.OpChat, 0, 0, StreamBrokeOff)
	var w Writer
	s.Write(&w, func(*Writer) { t.Error("a nil Set called more") })
	if len(w.Bytes()) != 0 {
		t.Errorf("a nil Set wrote %q", w.Bytes())
	}
}

func TestObserveBuckets(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{0, 5 * time.Millisecond, 5*time.Millisecond + 1, 300 * time.Second, 301 * time.Second} {
		h.Observe(d)
	}
	var got []uint64
	for i := range h.counts {
		got = append(got, h.counts[i].Load())
	}
	// A bound is inclusive (le): 5 ms falls in the first bucket, 5 ms + 1 ns in the second.
	want := []uint64{2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("bucket counts (-want +got):\n%s", d)
	}
}

// TestStreamEndAllocatesNothing: counting a stream's end is an atomic add in a cell found by
// index, as the other counts on the request path are.
func TestStreamEndAllocatesNothing(t *testing.T) {
	s := New([]string{"r", "q"}, []string{"a", "b"}, time.Unix(0, 0))
	if n := testing.AllocsPerRun(100, func() { s.StreamEnd(OpResponses, 1, 1, StreamBrokeOff) }); n != 0 {
		t.Errorf("StreamEnd allocates %v times", n)
	}
}

// BenchmarkRequest is what a request pays for its metrics: a request count, its duration, an
// attempt and who served it.
func BenchmarkRequest(b *testing.B) {
	s := New([]string{"bench", "saif"}, []string{"a", "b", "c"}, time.Now())
	b.ReportAllocs()
	for b.Loop() {
		s.Attempt(1, core.ClassNone, 30*time.Millisecond)
		s.Served(0, 1)
		s.Request(core.OpChat, 0, 200, 35*time.Millisecond)
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		body string
		p, c uint64
		ok   bool
	}{
		{`{"id":"x","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`, 12, 5, true},
		{`{"usage":{"prompt_tokens":12,"prompt_tokens_details":{"cached_tokens":3}}}`, 12, 0, true},
		{`{"id":"x","usage":null}`, 0, 0, false},
		{`{"id":"x","choices":[{"delta":{"content":"\"usage\":{\"prompt_tokens\":9}"}}]}`, 0, 0, false},
		{`{"choices":[{"usage":{"prompt_tokens":9}}]}`, 0, 0, false}, // not at the top level
		{`{"usage":{"prompt_tokens":-1,"completion_tokens":"7"}}`, 0, 0, false},
		{`not json "usage":`, 0, 0, false},
		{`{"usage":{"prompt_tokens": 5 ,"completion_tokens":1.5}}`, 5, 0, true},
		{`{"usage":{"prompt_tokens":99999999999999999999}}`, 0, 0, false},
		{`{"usage":"12"}`, 0, 0, false},
		{`{"id":"x","usage":{"prompt_tokens":7,"completion_tokens":1},"service_tier":"default","system_fingerprint":"fp"}`, 7, 1, true},
	} {
		p, c, ok := Usage([]byte(tc.body))
		if p != tc.p || c != tc.c || ok != tc.ok {
			t.Errorf("Usage(%s) = %d, %d, %v; want %d, %d, %v", tc.body, p, c, ok, tc.p, tc.c, tc.ok)
		}
	}
}

func TestKeyCounts(t *testing.T) {
	s := New([]string{"r"}, []string{"a"}, time.Unix(0, 0)).WithKeys([]string{"laptop", "kids"})
	s.Key(1)
	s.Key(1)
	s.Limited(1, CapRPM)
	s.Limited(0, CapTPM)
	s.Limited(0, CapTPM)
	s.KeyTokens(0, 10, 2)
	s.Key(-1) // a gateway without keys: nothing
	s.Key(2)
	s.Limited(0, 7)
	var w Writer
	s.Write(&w, nil)
	got := parse(t, string(w.Bytes()))
	for k, v := range map[string]string{
		`hayula_key_requests_total{key="kids"}`:                   "2",
		`hayula_key_requests_total{key="laptop"}`:                 "0",
		`hayula_key_limited_total{key="kids",cap="rpm"}`:          "1",
		`hayula_key_limited_total{key="laptop",cap="tpm"}`:        "2",
		`hayula_key_tokens_total{key="laptop",kind="prompt"}`:     "10",
		`hayula_key_tokens_total{key="laptop",kind="completion"}`: "2",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if n := len(got); n == 0 {
		t.Fatal("nothing written")
	}
	var open Writer
	New(nil, nil, time.Unix(0, 0)).Write(&open, nil)
	if strings.Contains(string(open.Bytes()), "hayula_key_") {
		t.Error("a Set without keys wrote key series")
	}
}

// TestNextGoesOn: the Set of a reloaded configuration goes on from the counts of the series both
// configurations name, whatever their order in each, counts what the replaced Set still counts
// (its requests under way), and leaves out what the new configuration no longer has; once it is in
// service (Prune) the process keeps no cells of those names, and a later configuration that
// brings them back starts them from zero, a late count of the replaced Set's counting in none.
func TestNextGoesOn(t *testing.T) {
	old := New([]string{"a", "gone"}, []string{"x", "y"}, time.Unix(0, 0)).WithKeys([]string{"laptop", "kids"})
	old.Request(core.OpChat, 0, 200, time.Millisecond)
	old.Request(core.OpChat, NoRoute, 404, time.Millisecond)
	old.Request(core.OpChat, 0, 418, time.Millisecond)
	old.Attempt(1, core.ClassTimeout, 0)
	old.Served(0, 0)
	old.Tokens(0, 1, 5, 7)
	old.StreamEnd(core.OpChat, 0, 1, StreamBrokeOff) // a by y
	old.StreamEnd(core.OpChat, 1, 0, StreamDone)     // gone by x
	old.Key(1)
	old.KeyTokens(1, 2, 3)
	old.Request(core.OpChat, 1, 200, time.Millisecond)
	old.BrowserRefused(RefusedOrigin)

	// The targets change order (y before x), route "gone" goes, "new" comes, key "kids" stays.
	next := old.Next([]string{"a", "new"}, []string{"y", "x"}, time.Unix(0, 0)).WithKeys([]string{"kids"})
	old.Request(core.OpChat, 0, 200, time.Millisecond) // a request of the old configuration ends
	next.Request(core.OpChat, 0, 200, time.Millisecond)
	next.Attempt(0, core.ClassTimeout, 0) // y
	next.Served(0, 1)                     // a by x

	old.StreamEnd(core.OpChat, 0, 1, StreamBrokeOff)  // a stream of the old configuration ends
	next.StreamEnd(core.OpChat, 0, 0, StreamBrokeOff) // a by y

	var w Writer
	next.Write(&w, nil)
	got := parse(t, string(w.Bytes()))
	for k, v := range map[string]string{
		`hayula_requests_total{endpoint="chat",route="a",code="200"}`:                    "3",
		`hayula_requests_total{endpoint="chat",route="",code="404"}`:                     "1",
		`hayula_requests_total{endpoint="chat",route="a",code="418"}`:                    "1",
		`hayula_request_duration_seconds_count{endpoint="chat",route="a"}`:               "4",
		`hayula_upstream_attempts_total{target="y",result="timeout"}`:                    "2",
		`hayula_served_total{route="a",target="x"}`:                                      "2",
		`hayula_tokens_total{route="a",target="y",kind="completion"}`:                    "7",
		`hayula_stream_ends_total{endpoint="chat",route="a",target="y",end="broke_off"}`: "3",
		`hayula_key_requests_total{key="kids"}`:                                          "1",
		`hayula_key_tokens_total{key="kids",kind="prompt"}`:                              "2",
		`hayula_browser_refused_total{reason="origin_not_allowed"}`:                      "1",
		`hayula_request_duration_seconds_count{endpoint="chat",route="new"}`:             "0",
		`hayula_request_duration_seconds_bucket{endpoint="chat",route="a",le="+Inf"}`:    "4",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if strings.Contains(k, `"gone"`) || strings.Contains(k, `"laptop"`) {
			t.Errorf("%s: a series of what the configuration no longer has", k)
		}
	}

	// A reload that builds a Set and is then refused forgets nothing: the configuration that goes
	// on serving keeps its counts (Prune only once a Set serves).
	_ = next.Next([]string{"other"}, []string{"z"}, time.Unix(0, 0))
	next.Prune()
	for name, n := range map[string]int{"requests": len(next.cells.requests), "attempts": len(next.cells.attempts),
		"served": len(next.cells.served), "tokens": len(next.cells.tokens), "ends": len(next.cells.ends), "keys": len(next.cells.keys)} {
		// routes a and new, and none; targets y and x; one key.
		want := map[string]int{"requests": len(opNames) * 3, "attempts": 2, "served": 4, "tokens": 4, "ends": len(opNames) * 4, "keys": 1}[name]
		if n != want {
			t.Errorf("after Prune the process keeps %d %s cells, want %d: those of the names the configuration has", n, name, want)
		}
	}
	var w1 Writer
	next.Write(&w1, nil)
	if got := parse(t, string(w1.Bytes())); got[`hayula_requests_total{endpoint="chat",route="a",code="200"}`] != "3" {
		t.Errorf("Prune of the Set in service lost a count of its own:\n%s", w1.Bytes())
	}

	// A route, target and key brought back by a later configuration start from zero, and a
	// request of the configuration that had them, ending after, counts in none of them.
	back := next.Next([]string{"gone"}, []string{"x"}, time.Unix(0, 0)).WithKeys([]string{"laptop"})
	back.Prune()
	old.Request(core.OpChat, 1, 200, time.Millisecond)
	old.StreamEnd(core.OpChat, 1, 0, StreamDone)
	old.Key(0)
	var w2 Writer
	back.Write(&w2, nil)
	got = parse(t, string(w2.Bytes()))
	if _, ok := got[`hayula_requests_total{endpoint="chat",route="gone",code="200"}`]; ok {
		t.Errorf("a route brought back goes on from its old count:\n%s", w2.Bytes())
	}
	if _, ok := got[`hayula_stream_ends_total{endpoint="chat",route="gone",target="x",end="done"}`]; ok {
		t.Errorf("a route brought back goes on from its old count:\n%s", w2.Bytes())
	}
	if got[`hayula_key_requests_total{key="laptop"}`] != "0" || got[`hayula_request_duration_seconds_count{endpoint="chat",route="gone"}`] != "0" {
		t.Errorf("a key or route brought back does not start from zero:\n%s", w2.Bytes())
	}
}

// BenchmarkUsage reads the usage of the bench's fake upstream's whole answer (bench/upstream.go),
// as every answered chat request does.
func BenchmarkUsage(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1764460800,"model":"fake-model",` +
		`"system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant","content":` +
		`"This is a fixed answer from the benchmark's fake upstream. It is about as long as a short reply ` +
		`from a chat model, so that copying it costs what copying a real answer costs."},"logprobs":null,` +
		`"finish_reason":"stop"}],"usage":{"prompt_tokens":212,"completion_tokens":38,"total_tokens":250}}`)
	for b.Loop() {
		if p, c, ok := Usage(body); !ok || p != 212 || c != 38 {
			b.Fatalf("Usage = %d, %d, %v", p, c, ok)
		}
	}
}
