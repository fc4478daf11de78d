//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/upstream"
)

// TestFakeUpstreamFirstEventCommits: the gateway holds a stream's leading chunks that carry only
// the role (upstream.Contentless) until one with something in it comes. The fake upstream's first
// event carries the first token with the role, so the gateway relays it as it comes, and the
// first byte and the held-back counts measure the gateway, not a wait for the second event (a
// slow stream's interval).
func TestFakeUpstreamFirstEventCommits(t *testing.T) {
	for _, chunks := range []int{1, 32} {
		f := newFakeUpstream(chunks, 100*time.Millisecond)
		ev := bytes.TrimSuffix(bytes.TrimPrefix(f.events[0], []byte("data: ")), []byte("\n\n"))
		if upstream.Contentless(ev) {
			t.Errorf("%d chunks: the first event %s carries nothing: the gateway would hold it", chunks, ev)
		}
	}
}

func TestQuantileAndMedian(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"p50 of none", quantile(nil, 0.5), 0},
		{"p50 of one", quantile(ms(7), 0.5), 7 * time.Millisecond},
		{"p50 of 1..100", quantile(hundred, 0.5), 50 * time.Millisecond},
		{"p99 of 1..100", quantile(hundred, 0.99), 99 * time.Millisecond},
		{"p100 of 1..100", quantile(hundred, 1), 100 * time.Millisecond},
		{"median odd, unsorted", median(ms(5, 1, 3)), 3 * time.Millisecond},
		{"median even", median(ms(4, 1, 3, 2)), 2500 * time.Microsecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestWantsStream(t *testing.T) {
	for body, want := range map[string]bool{
		`{"model":"m","stream":true}`:                     true,
		`{"model":"m", "stream" : true}`:                  true,
		`{"model":"m","stream":false}`:                    false,
		`{"model":"m"}`:                                   false,
		`{"model":"m","messages":[{"content":"stream"}]}`: false,
	} {
		if got := wantsStream([]byte(body)); got != want {
			t.Errorf("wantsStream(%s) = %v, want %v", body, got, want)
		}
	}
}

// The generated config must load with the gateway's own parser, [auto] table included.
func TestGatewayConfigLoads(t *testing.T) {
	for _, auto := range []bool{true, false} {
		cfg, err := config.Parse([]byte(gatewayConfig("127.0.0.1:8000", "127.0.0.1:9001", "127.0.0.1:9002", auto)),
			"bench.toml", func(string) string { return "" })
		if err != nil {
			t.Fatalf("auto=%v: %v", auto, err)
		}
		var routes []string
		for _, r := range cfg.Routes {
			routes = append(routes, r.Name)
		}
		want := []string{"averroes-q", "bench", "bench-ollama", "bench-saif", "deepseek-r1", "saif", "slow"}
		if diff := cmp.Diff(want, routes); diff != "" {
			t.Errorf("auto=%v: routes (-want +got):\n%s", auto, diff)
		}
	}
}

func TestChatBody(t *testing.T) {
	for _, stream := range []bool{false, true} {
		b := chatBody("bench", stream, 1024)
		if len(b) < 900 || len(b) > 1024 {
			t.Errorf("stream=%v: %d bytes, want about 1024", stream, len(b))
		}
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		if err := json.Unmarshal(b, &req); err != nil || req.Model != "bench" || req.Stream != stream {
			t.Errorf("stream=%v: %s decodes to %+v, %v", stream, b, req, err)
		}
		if wantsStream(b) != stream {
			t.Errorf("stream=%v: the fake upstream would not see it", stream)
		}
	}
}

// A short closed-loop round against the fake upstream: every answer has the expected length,
// streams included, and nothing fails.
func TestRoundAgainstFakeUpstream(t *testing.T) {
	f, srvURL, c := fakeChat(t, 8, 8)
	for _, tc := range []struct {
		stream bool
		want   []byte
	}{{false, f.chat}, {true, f.streamBody()}} {
		ep := &endpoint{name: "direct", url: srvURL + "/v1/chat/completions", body: chatBody("m", tc.stream, 512), client: c}
		r := runRound(context.Background(), ep, tc.want, 4, 50*time.Millisecond)
		if r.errors != 0 || len(r.total) == 0 {
			t.Fatalf("stream=%v: %d answers, %d errors, first %v", tc.stream, len(r.total), r.errors, r.firstErr)
		}
		if r.ttfb[0] > r.total[len(r.total)-1] || quantile(r.total, 0.5) > quantile(r.total, 0.99) {
			t.Errorf("stream=%v: quantiles out of order", tc.stream)
		}
	}
	// An answer of the wrong length is an error, not a sample.
	ep := &endpoint{name: "direct", url: srvURL + "/v1/chat/completions", body: chatBody("m", false, 512), client: c}
	if _, err := do(context.Background(), ep, append(bytes.Clone(f.chat), 'x'), make([]byte, 1024)); err == nil ||
		!strings.Contains(err.Error(), "want") {
		t.Errorf("a short answer gave %v", err)
	}
}

// The report marks each target met or not from the medians, and lists skipped rows.
func TestReportTargets(t *testing.T) {
	us := micros
	chat := &result{sc: &scenario{name: "chat c=1", conc: 1}, cols: []*column{
		{name: "direct", p50: us(100, 110, 90), p99: us(200, 210, 190), thr: []float64{1000, 1000, 1000}, rounds: []int{0, 1, 2}},
		{name: "gateway", p50: us(150, 160, 140), p99: us(300, 310, 290), thr: []float64{700, 700, 700},
			cpu: []float64{70, 90, 80}, user: 300, sys: 100, rounds: []int{0, 1, 2},
			client: []float64{60, 61, 62}, upstream: []float64{50, 50, 50}},
		{name: "goblind", p50: us(130, 120, 125), p99: us(250, 260, 240), thr: []float64{900, 900, 900},
			cpu: []float64{50, 50, 50}},
		{name: "nginx", p50: us(180, 190, 170), p99: us(300, 310, 290), thr: []float64{800, 800, 800},
			cpu: []float64{40, 35, 30}},
	}}
	r := &report{opts: options{Rounds: 3, Chunks: 8, LogLevel: "info"}, results: []*result{chat},
		skipped: []string{"auto c=1: skipped: the gateway answers 404 for model \"auto\""},
		memory:  memoryResult{Idle: memory{RSS: 12 << 20}}}
	md := r.markdown()
	reportHas(t, md,
		"| row | direct p50 | gateway p50 | goproxy p50 | goblind p50 | nginx p50 | direct p99 |",
		"| chat c=1 | 100 µs | +50 µs (1.50×) | — | +25 µs (1.25×) | +80 µs (1.80×) |",
		"gateway − goblind (a Go relay that only frames and copies): +25 µs, the gateway's own work and the head parsing, pooling and timeouts goblind skips; goblind − nginx: −55 µs",
		"added p50 at c=1 no more than nginx's: gateway +50.0 µs, nginx +80.0 µs — met",
		"throughput at c=1 ≥ 0.60× direct: 0.700× — met",
		"idle RSS under 30 MB: 12.0 MB — met",
		"auto c=1: skipped: the gateway answers 404",
		"| chat c=1 | 80 µs (25% kernel) | — | 50 µs | 35 µs |",
		"| requests per second | 1000 req/s | 700 req/s (0.70× direct) | — | 900 req/s (0.90× direct) | 800 req/s (0.80× direct) |",
		" +50 µs … +50 µs |\n", // the by-round spread of gateway − direct
		"| chat c=1 | gateway | 61 µs | 50 µs | 80 µs | 191 µs |",
	)

	// A value that rounds to the limit but is over it reads as over it.
	auto := &result{sc: &scenario{name: "auto c=1", conc: 1, auto: true}, cols: []*column{
		{name: "direct", p50: us(100, 100, 100)},
		{name: "explicit", p50: []time.Duration{200 * time.Microsecond}},
		{name: "auto", p50: []time.Duration{220*time.Microsecond + 400*time.Nanosecond}},
	}}
	r = &report{opts: options{Rounds: 1, Chunks: 8, LogLevel: "info"}, results: []*result{auto},
		memory: memoryResult{Idle: memory{RSS: 12 << 20}}}
	reportHas(t, r.markdown(), "auto − explicit at p50 ≤ 20 µs: +20.4 µs — **not met**")

	// The slow streams' table has an nginx row when nginx ran them, with each row's median first
	// event, and the target names nginx's count; without nginx, neither.
	streams := func(held int, first time.Duration) streamsResult {
		return streamsResult{MaxOpen: 10, Events: 320, HeldBack: held, HeldFirst: held / 2, MaxLag: time.Millisecond, FirstEvent: first, Took: time.Second}
	}
	mem := memoryResult{Idle: memory{RSS: 12 << 20}, Streams: 10,
		Direct:  []streamsResult{streams(2, 50*time.Millisecond)},
		Gateway: []streamsResult{streams(1, 90*time.Millisecond)}}
	r = &report{opts: options{Rounds: 1, Chunks: 8, LogLevel: "info", SlowChunks: 30, SlowInterval: 100 * time.Millisecond},
		memory: mem}
	md = r.markdown()
	for _, absent := range []string{"| nginx | 10 |", "through nginx"} {
		if strings.Contains(md, absent) {
			t.Errorf("report without nginx has %q:\n%s", absent, md)
		}
	}
	r.memory.Nginx = []streamsResult{streams(0, 40*time.Millisecond)}
	md = r.markdown()
	reportHas(t, md,
		"| gateway | 10 | 320 | 1 (0) | 1000 µs | 90.0 ms | — | 0 | 1s | 1 |",
		"| nginx | 10 | 320 | 0 (0) | 1000 µs | 40.0 ms | — | 0 | 1s | 0 |",
		"1 held back through the gateway, 2 straight to the upstream, 0 through nginx",
	)

	// With several bursts a row is the median burst, whole (its own first event beside its
	// count), every burst's count listed in the order run, but for the proxy's CPU a stream,
	// each figure's median over the bursts; the target reads the medians, and a failed stream in
	// any burst fails it.
	r.memory.Gateway = []streamsResult{streams(183, 500*time.Millisecond), streams(0, 90*time.Millisecond), streams(12, 70*time.Millisecond)}
	for i, c := range [][2]time.Duration{{300, 900}, {100, 1200}, {200, 1000}} {
		r.memory.Gateway[i].OpenCPU, r.memory.Gateway[i].CPU = c[0]*time.Microsecond, c[1]*time.Microsecond
	}
	r.memory.Direct = []streamsResult{streams(8, 50*time.Millisecond), streams(30, 60*time.Millisecond), streams(1, 55*time.Millisecond)}
	r.memory.Nginx = []streamsResult{streams(22, 40*time.Millisecond), streams(2, 41*time.Millisecond), streams(0, 42*time.Millisecond)}
	md = r.markdown()
	reportHas(t, md,
		"ran 3 such bursts in turn (direct, gateway, nginx, direct …)",
		"| gateway | 10 | 320 | 12 (6) | 1000 µs | 70.0 ms | 200 µs, 1000 µs | 0 | 1s | 183, 0, 12 |",
		"| direct | 10 | 320 | 8 (4) | 1000 µs | 50.0 ms | — | 0 | 1s | 8, 30, 1 |",
		"| nginx | 10 | 320 | 2 (1) | 1000 µs | 41.0 ms | — | 0 | 1s | 22, 2, 0 |",
		"(median of 3 bursts): 12 held back through the gateway, 8 straight to the upstream, 2 through nginx — **not met**",
	)
	// A goblind column's bursts come between the gateway's and nginx's, in the table and in the
	// target's line.
	r.memory.GoBlind = []streamsResult{streams(40, 60*time.Millisecond), streams(7, 61*time.Millisecond), streams(9, 62*time.Millisecond)}
	r.memory.GoBlind[1].OpenCPU, r.memory.GoBlind[1].CPU = 150*time.Microsecond, 800*time.Microsecond
	md = r.markdown()
	reportHas(t, md,
		"ran 3 such bursts in turn (direct, gateway, goblind, nginx, direct …)",
		"| gateway | 10 | 320 | 12 (6) | 1000 µs | 70.0 ms | 200 µs, 1000 µs | 0 | 1s | 183, 0, 12 |\n"+
			"| goblind | 10 | 320 | 9 (4) | 1000 µs | 62.0 ms | 150 µs, 800 µs | 0 | 1s | 40, 7, 9 |\n"+
			"| nginx | 10 | 320 | 2 (1) | 1000 µs | 41.0 ms | — | 0 | 1s | 22, 2, 0 |",
		"12 held back through the gateway, 8 straight to the upstream, 9 through goblind, 2 through nginx — **not met**",
	)
	r.memory.GoBlind = nil
	r.memory.Gateway[2].HeldBack = 5
	r.memory.Gateway[0].Errors, r.memory.Gateway[0].FirstErr = 1, "EOF"
	md = r.markdown()
	for _, want := range []string{"5 held back through the gateway, 8 straight to the upstream, 2 through nginx — **not met**",
		"First gateway stream failure (burst 1): `EOF`"} {
		if !strings.Contains(md, want) {
			t.Errorf("a failed stream in one burst: report lacks %q:\n%s", want, md)
		}
	}
	r.memory.Gateway[0].Errors = 0
	if md = r.markdown(); !strings.Contains(md, "5 held back through the gateway, 8 straight to the upstream, 2 through nginx — met") {
		t.Errorf("report:\n%s", md)
	}
	// Each burst's peak RSS, in the order run.
	r.memory.PeakRSS, r.memory.HWM = []int64{76 << 20, 140 << 20, 139 << 20}, 140<<20
	if md = r.markdown(); !strings.Contains(md, "| 12.0 MB | 76.0 MB, 140.0 MB, 139.0 MB | 140.0 MB |") ||
		!strings.Contains(md, "the first is a single burst's") {
		t.Errorf("peaks by burst:\n%s", md)
	}
}

// micros returns the durations of v microseconds.
func micros(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Microsecond
	}
	return out
}

// cpuTime reads a process's CPU time from /proc, and it grows with work done.
func TestCPUTime(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc here")
	}
	pid := os.Getpid()
	before := cpuTime(false, pid)
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += i % 7
	}
	after := cpuTime(false, pid)
	if before.run <= 0 || after.run-before.run <= 0 || x == 0 {
		t.Errorf("cpuTime before %v, after %v: want positive and growing", before.run, after.run)
	}
	// The loop is tens of milliseconds in user mode: a few clock ticks at least.
	if d := after.minus(before); d.user+d.sys <= 0 || d.user < 0 || d.sys < 0 {
		t.Errorf("user and sys ticks over the loop: %d and %d", d.user, d.sys)
	}
	// A process with no children counts the same with children asked for.
	if with := cpuTime(true, pid); with.run < after.run || with.user < after.user {
		t.Errorf("with children %+v < without %+v", with, after)
	}
}

// TestUserSys reads utime and stime from a /proc/PID/stat line whose command name holds spaces
// and parentheses, as a process may name itself.
func TestUserSys(t *testing.T) {
	line := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 731 289 0 0 20 0 9 0 123 456 789\n"
	user, sys, ok := userSys(line)
	if !ok || user != 731 || sys != 289 {
		t.Errorf("userSys = %d, %d, %v; want 731, 289, true", user, sys, ok)
	}
	for _, bad := range []string{"", "4242 (gw S 1 2", "4242 (gw) S 1 2 3"} {
		if _, _, ok := userSys(bad); ok {
			t.Errorf("userSys(%q) ok", bad)
		}
	}
}

// TestAnswerBodyIsCompared: an answer as long as the fake upstream's but with other bytes (an
// error event in place of a content event, a rewritten field) is an error, not a sample.
func TestAnswerBodyIsCompared(t *testing.T) {
	f := newFakeUpstream(4, 0)
	for _, tc := range []struct {
		name   string
		stream bool
		want   []byte
	}{{"chat", false, f.chat}, {"stream", true, f.streamBody()}} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Clone(tc.want)
			bad[len(bad)/2] ^= 0x20
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				_, _ = w.Write(bad)
			}))
			defer srv.Close()
			c := newClient(1)
			defer c.CloseIdleConnections()
			ep := &endpoint{name: "gateway", url: srv.URL, body: chatBody("m", tc.stream, 512), client: c}
			_, err := do(context.Background(), ep, tc.want, make([]byte, 64))
			var bad2 *BadAnswerError
			if !errors.As(err, &bad2) {
				t.Fatalf("an answer of other bytes gave %v, want a BadAnswerError", err)
			}
			if _, err := do(context.Background(), &endpoint{name: "direct", url: srv.URL, body: ep.body, client: c},
				bad, make([]byte, 64)); err != nil {
				t.Errorf("the expected bytes gave %v", err)
			}
		})
	}
}

func TestMismatch(t *testing.T) {
	want := []byte("abcdef")
	for _, tc := range []struct {
		got  string
		off  int
		want int
	}{
		{"abc", 0, -1},
		{"def", 3, -1},
		{"", 6, -1},
		{"abd", 0, 2},
		{"dxf", 3, 4},
		{"efg", 4, 6}, // one byte past the end
		{"z", 6, 6},
		{"", 0, -1},
	} {
		if got := mismatch([]byte(tc.got), want, tc.off); got != tc.want {
			t.Errorf("mismatch(%q at %d) = %d, want %d", tc.got, tc.off, got, tc.want)
		}
	}
}

// TestRoundsAlternateOrder: the columns' rounds run forward, then backward, then forward …, so
// that a drift of the machine (load rising, a clock settling) that is steady over a cycle falls
// on every column alike on average; in one fixed order the second column always ran a round
// after the first and carried that round's share of the drift, every round.
func TestRoundsAlternateOrder(t *testing.T) {
	f := newFakeUpstream(1, 0)
	var (
		mu  sync.Mutex
		seq []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if len(seq) == 0 || seq[len(seq)-1] != r.URL.Path {
			seq = append(seq, r.URL.Path)
		}
		mu.Unlock()
		r.URL.Path = "/v1/chat/completions"
		f.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := newClient(1)
	defer c.CloseIdleConnections()
	sc := &scenario{name: "chat c=1", conc: 1, want: f.chat}
	for _, name := range []string{"a", "b", "c"} {
		sc.cols = append(sc.cols, &endpoint{name: name, url: srv.URL + "/" + name, body: chatBody("m", false, 512), client: c})
	}
	res := runScenario(context.Background(), sc, options{Rounds: 4, RoundTime: 10 * time.Millisecond}, func() int64 { return -1 })
	want := []string{"/a", "/b", "/c", "/b", "/a", "/b", "/c", "/b", "/a"}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, seq); diff != "" {
		t.Errorf("columns in the order run (-want +got):\n%s", diff)
	}
	for _, col := range res.cols {
		if len(col.p50) != 4 || col.errors != 0 {
			t.Errorf("%s: %d rounds, %d errors (%v)", col.name, len(col.p50), col.errors, col.firstErr)
		}
	}
}

// TestFewAnswersSaidInTheReport: a round's p99 over fewer than 100 answers is its slowest
// answer (nearest rank), and the report says so for the row and column, with the fewest answers
// any round had.
func TestFewAnswersSaidInTheReport(t *testing.T) {
	f := newFakeUpstream(1, 0)
	// A millisecond an answer: a round of 10 ms has a dozen answers at most.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond)
		f.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := newClient(1)
	defer c.CloseIdleConnections()
	sc := &scenario{name: "chat c=1", conc: 1, want: f.chat}
	for _, name := range []string{"direct", "gateway"} {
		sc.cols = append(sc.cols, &endpoint{name: name, url: srv.URL + "/v1/chat/completions", body: chatBody("m", false, 512), client: c})
	}
	res := runScenario(context.Background(), sc, options{Rounds: 3, RoundTime: 10 * time.Millisecond}, func() int64 { return -1 })
	md := (&report{opts: options{Rounds: 3, LogLevel: "info"}, results: []*result{res}}).markdown()
	for _, col := range []string{"direct", "gateway"} {
		reportHas(t, md, "- chat c=1, "+col+": p99 of a round of fewer than 100 answers is its slowest answer")
	}
}

// TestSlowStreamBodyIsCompared: a slow stream with as many events as the fake upstream's but
// other bytes in one (an error event in place of a content event) is a failed stream.
func TestSlowStreamBodyIsCompared(t *testing.T) {
	o := options{Streams: 3, SlowChunks: 2, SlowInterval: time.Millisecond}
	f := newFakeUpstream(o.SlowChunks, o.SlowInterval)
	for _, tc := range []struct {
		name   string
		body   []byte
		failed int
	}{
		{"as sent", f.streamBody(), 0},
		{"an event changed", bytes.Replace(f.streamBody(), []byte(`" token1"`), []byte(`" tokenX"`), 1), 3},
		{"an error event", append(append(bytes.Clone(f.events[0]), `data: {"error":{"message":"x"}}`+"\n\n"...), f.tail...), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := streamServer(t, tc.body)
			e := &environment{opts: o}
			c := newClient(o.Streams)
			defer c.CloseIdleConnections()
			res := e.openStreams(context.Background(), &endpoint{name: "gateway", url: srv.URL, body: chatBody("slow", true, 512), client: c}, func() {})
			if res.Errors != tc.failed {
				t.Errorf("%d failed streams, want %d (first: %s)", res.Errors, tc.failed, res.FirstErr)
			}
		})
	}
}

// TestStreamTiming: a burst's figures from its streams' arrivals, by hand. A stream of 3 events
// 100 ms apart has 5 arrivals: the finishing event and [DONE] come with the last content event.
func TestStreamTiming(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name    string
		streams [][]time.Duration
		want    streamsResult
	}{
		{"on schedule", [][]time.Duration{ms(10, 110, 210, 210, 210), ms(30, 130, 230, 230, 230), ms(20, 121, 222, 222, 222)},
			streamsResult{Events: 15, HeldBack: 0, MaxLag: 2 * time.Millisecond, FirstEvent: 20 * time.Millisecond}},
		// Half an interval behind is held back; the last event late holds its two companions too.
		{"late events", [][]time.Duration{ms(10, 160, 210, 210, 210), ms(10, 110, 260, 260, 260), ms(10, 110, 210, 210, 210)},
			streamsResult{Events: 15, HeldBack: 4, MaxLag: 50 * time.Millisecond, FirstEvent: 10 * time.Millisecond}},
		// The median of an even count is the mean of the middle two.
		{"even count", [][]time.Duration{ms(10, 110, 210, 210, 210), ms(20, 120, 220, 220, 220)},
			streamsResult{Events: 10, FirstEvent: 15 * time.Millisecond}},
		// A proxy that holds each event until the next comes (and the last until the stream ends):
		// every event but the last is an interval behind the schedule that the last, on time,
		// places; measured from the first event, as it was, none was.
		{"one behind", [][]time.Duration{ms(110, 210, 210, 210, 210)},
			streamsResult{Events: 5, HeldBack: 2, HeldFirst: 1, MaxLag: 100 * time.Millisecond, FirstEvent: 110 * time.Millisecond}},
		// The first event held back: the later ones, on time, show it.
		{"first held", [][]time.Duration{ms(80, 110, 210, 210, 210)},
			streamsResult{Events: 5, HeldBack: 1, HeldFirst: 1, MaxLag: 70 * time.Millisecond, FirstEvent: 80 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st streamTiming
			for _, a := range tc.streams {
				st.add(a, 3, 100*time.Millisecond)
			}
			var got streamsResult
			st.into(&got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestUpstreamCountsChatConnections: the fast upstream's connection count, which the report reads
// as churn behind a proxy, counts the connections that carried a chat request; the harness's own
// /stats requests are none of them (a /stats connection closed after 90 s idle read as one
// connection a proxy had reopened).
func TestUpstreamCountsChatConnections(t *testing.T) {
	f := newFakeUpstream(1, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := f.server()
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	once := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	stats := func() int64 {
		t.Helper()
		resp, err := once.Get(base + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s struct {
			Connections int64 `json:"connections"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		return s.Connections
	}
	for i := range 3 {
		if n := stats(); n != 0 {
			t.Fatalf("/stats number %d: %d connections, want 0", i+1, n)
		}
	}
	c := newClient(1)
	defer c.CloseIdleConnections()
	ep := &endpoint{name: "direct", url: base + "/v1/chat/completions", body: chatBody("m", false, 512), client: c}
	for range 3 {
		if _, err := do(context.Background(), ep, f.chat, make([]byte, 1024)); err != nil {
			t.Fatal(err)
		}
	}
	if n := stats(); n != 1 {
		t.Errorf("three chat requests on one connection: %d connections, want 1", n)
	}
}

// The by-round spread pairs each round of one column with the same round of the other: a round
// in which a column had no answer (and so no entry) must not shift the pairing of the rounds after it.
func TestSpreadPairsByRound(t *testing.T) {
	us := micros
	direct := &column{name: "direct", p50: us(100, 200, 300), rounds: []int{0, 1, 2}}
	gateway := &column{name: "gateway", p50: us(110, 320), rounds: []int{0, 2}} // round 1 had no answer
	p50 := func(c *column) []time.Duration { return c.p50 }
	if got, want := spread(gateway, direct, p50), "+10 µs … +20 µs"; got != want {
		t.Errorf("spread = %q, want %q (round 2 of gateway paired with round 2 of direct)", got, want)
	}
	if got := spread(gateway, &column{name: "direct", p50: us(100), rounds: []int{1}}, p50); got != "—" {
		t.Errorf("spread with no round in common = %q, want —", got)
	}
	if got := spread(nil, direct, p50); got != "—" {
		t.Errorf("spread without the column = %q, want —", got)
	}
}

// The machine's CPU per answer, by process: each column's load generator, fake upstream and
// proxy, the medians of their rounds and their sum; no table when nothing was read.
func TestPeersTable(t *testing.T) {
	chat := &result{sc: &scenario{name: "chat c=64", conc: 64}, cols: []*column{
		{name: "direct", client: []float64{40, 44, 42}, upstream: []float64{30, 31, 35}},
		{name: "gateway", client: []float64{50, 46, 48}, upstream: []float64{33, 36, 34}, cpu: []float64{40, 41, 39}},
		{name: "nginx"}, // no reading: no row
	}}
	var b strings.Builder
	(&report{results: []*result{chat}}).peersTable(&b)
	md := b.String()
	reportHas(t, md,
		"| row | column | load generator | fake upstream | proxy | the three |",
		"| chat c=64 | direct | 42 µs | 31 µs | — | 73 µs |",
		"| chat c=64 | gateway | 48 µs | 34 µs | 40 µs | 122 µs |",
	)
	if strings.Contains(md, "| chat c=64 | nginx |") {
		t.Errorf("a column without readings has a row:\n%s", md)
	}
	chat.cols = chat.cols[2:]
	b.Reset()
	if (&report{results: []*result{chat}}).peersTable(&b); b.Len() != 0 {
		t.Errorf("a table with no readings:\n%s", b.String())
	}
}

// A round reads its peers' CPU before and after, and keeps the difference.
func TestRoundReadsPeersCPU(t *testing.T) {
	f, srvURL, c := fakeChat(t, 8, 2)
	reads := 0
	ep := &endpoint{name: "direct", url: srvURL + "/v1/chat/completions", body: chatBody("m", false, 512), client: c,
		peers: func() (client, upstream cpuUse) {
			reads++
			return cpuUse{run: time.Duration(reads) * 7 * time.Millisecond}, cpuUse{run: time.Duration(reads) * 3 * time.Millisecond}
		}}
	r := runRound(context.Background(), ep, f.chat, 2, 20*time.Millisecond)
	if reads != 2 || r.client.run != 7*time.Millisecond || r.upstream.run != 3*time.Millisecond {
		t.Errorf("%d reads; client %v, upstream %v; want 2, 7ms, 3ms", reads, r.client.run, r.upstream.run)
	}
	// A scenario keeps each round's, per answer: 7 ms and 3 ms over the same answers.
	res := runScenario(context.Background(), &scenario{name: "chat c=2", conc: 2, want: f.chat, cols: []*endpoint{ep}},
		options{Rounds: 3, RoundTime: 10 * time.Millisecond}, func() int64 { return -1 })
	col := res.cols[0]
	if len(col.client) != 3 || len(col.upstream) != 3 {
		t.Fatalf("%d and %d rounds of readings, want 3", len(col.client), len(col.upstream))
	}
	for i := range col.client {
		if per := 7000 / col.client[i]; col.client[i] <= 0 || math.Abs(col.upstream[i]*per-3000) > 1e-6 {
			t.Errorf("round %d: client %.3f µs, upstream %.3f µs an answer: not 7 ms and 3 ms over the same answers", i, col.client[i], col.upstream[i])
		}
	}
}

// reportHas fails t for each of wants that md does not contain.
func reportHas(t *testing.T, md string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// fakeChat is a fake upstream (its streams of the given number of events) behind a test
// server, the server's URL and a client of conns connections to it, all closed when t ends.
func fakeChat(t *testing.T, events, conns int) (*fakeUpstream, string, *http.Client) {
	t.Helper()
	f := newFakeUpstream(events, 0)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := newClient(conns)
	t.Cleanup(c.CloseIdleConnections)
	return f, srv.URL, c
}

// streamServer answers every request with body, as an SSE stream, until the test ends.
func streamServer(t *testing.T, body []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestBurstCPU: a burst reads its proxy's CPU three times, at its start, when the last stream
// has had its first event and at its end, and gives both a stream's share; a burst with a
// failed stream, or a column without a proxy, gives none, and the report says "—" for it.
func TestBurstCPU(t *testing.T) {
	o := options{Streams: 3, SlowChunks: 2, SlowInterval: time.Millisecond}
	f := newFakeUpstream(o.SlowChunks, o.SlowInterval)
	for _, tc := range []struct {
		name         string
		body         []byte
		proxy        bool
		reads        int
		open, perCPU time.Duration
	}{
		{"through a proxy", f.streamBody(), true, 3, time.Second / 3, 2 * time.Second / 3},
		{"a stream failed", bytes.Replace(f.streamBody(), []byte(`" token1"`), []byte(`" tokenX"`), 1), true, 2, 0, 0},
		{"no proxy", f.streamBody(), false, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := streamServer(t, tc.body)
			c := newClient(o.Streams)
			defer c.CloseIdleConnections()
			ep := &endpoint{name: "gateway", url: srv.URL, body: chatBody("slow", true, 512), client: c}
			reads := 0
			if tc.proxy {
				ep.cpu = func() cpuUse {
					reads++
					return cpuUse{run: time.Duration(reads-1) * time.Second}
				}
			}
			res := (&environment{opts: o}).openStreams(context.Background(), ep, func() {})
			if reads != tc.reads {
				t.Errorf("the proxy's CPU was read %d times, want %d", reads, tc.reads)
			}
			if res.OpenCPU != tc.open || res.CPU != tc.perCPU {
				t.Errorf("CPU a stream: to the last first event %v, whole %v; want %v, %v", res.OpenCPU, res.CPU, tc.open, tc.perCPU)
			}
		})
	}
	if got, want := burstCPU([]streamsResult{{OpenCPU: 300 * time.Microsecond, CPU: time.Millisecond},
		{}, {OpenCPU: 100 * time.Microsecond, CPU: 3 * time.Millisecond}, {OpenCPU: 200 * time.Microsecond, CPU: 2 * time.Millisecond}}),
		"200 µs, 2000 µs"; got != want {
		t.Errorf("burstCPU = %q, want %q (the median of the bursts that have one)", got, want)
	}
	if got := burstCPU([]streamsResult{{}, {}}); got != "—" {
		t.Errorf("burstCPU without a proxy = %q, want —", got)
	}
}
