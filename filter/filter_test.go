package filter_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/health"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// avail is a fake Availability: targets named in it are benched until the given time (zero: a
// probe is in flight).
type avail map[string]time.Time

func (a avail) Available(t *core.Target) (bool, time.Time) {
	until, benched := a[t.Name]
	return !benched, until
}

// loader is a fake Loader: targets named in it are loading until the given time.
type loader map[string]time.Time

func (l loader) Loading(t *core.Target) (bool, time.Time) {
	until, ok := l[t.Name]
	return ok, until
}

// reasoned is a fake Availability that also says why.
type reasoned struct {
	avail
	why string
}

func (r reasoned) Why(*core.Target) string { return r.why }

// availLoader is an Availability that is also a Loader, as health.Tracker is.
type availLoader struct {
	avail
	loader
}

func target(name string, mod ...func(*core.Target)) *core.Target {
	t := &core.Target{Name: name, Weight: 1, Stats: &core.Stats{}}
	for _, m := range mod {
		m(t)
	}
	return t
}

func public(t *core.Target) { t.Privacy = core.Public }
func vision(t *core.Target) { t.Vision = true }
func tools(t *core.Target)  { t.Tools = true }
func window(n int) func(*core.Target) {
	return func(t *core.Target) { t.ContextWindow, t.WindowCountsMaxTokens = n, true }
}

// shifts is a target whose upstream makes room for the answer itself (Ollama): max_tokens does
// not count against its window.
func shifts(t *core.Target) { t.WindowCountsMaxTokens = false }

func TestFilters(t *testing.T) {
	type keep struct {
		OK     bool
		Reason string
	}
	cases := []struct {
		name string
		f    filter.Filter
		req  core.Request
		t    *core.Target
		want keep
	}{
		{"privacy: strict, public", filter.Privacy{}, core.Request{Strict: true}, target("p", public), keep{false, "strict request: public target"}},
		{"privacy: strict, private", filter.Privacy{}, core.Request{Strict: true}, target("p"), keep{true, ""}},
		{"privacy: not strict, public", filter.Privacy{}, core.Request{}, target("p", public), keep{true, ""}},
		{"vision: images, no vision", filter.Vision{}, core.Request{Images: true}, target("v"), keep{false, "request has images: target has no vision"}},
		{"vision: images, vision", filter.Vision{}, core.Request{Images: true}, target("v", vision), keep{true, ""}},
		{"vision: no images", filter.Vision{}, core.Request{}, target("v"), keep{true, ""}},
		{"tools: tools, no tools", filter.Tools{}, core.Request{Tools: true}, target("t"), keep{false, "request declares tools: target has no tools"}},
		{"tools: tools, tools", filter.Tools{}, core.Request{Tools: true}, target("t", tools), keep{true, ""}},
		{"tools: no tools", filter.Tools{}, core.Request{}, target("t"), keep{true, ""}},
		{"context: too big", filter.Context{}, core.Request{PromptTokensMin: 3000, MaxTokens: 1200}, target("c", window(4096)),
			keep{false, "needs at least 4200 tokens (prompt >= 3000, max_tokens 1200) > context window 4096"}},
		{"context: exactly fits", filter.Context{}, core.Request{PromptTokensMin: 3000, MaxTokens: 1096}, target("c", window(4096)), keep{true, ""}},
		{"context: window unknown", filter.Context{}, core.Request{PromptTokensMin: 1 << 20}, target("c"), keep{true, ""}},
		{"context: prompt alone too big", filter.Context{}, core.Request{PromptTokensMin: 9000}, target("c", window(8192)),
			keep{false, "needs at least 9000 tokens (prompt >= 9000, max_tokens 0) > context window 8192"}},
		{"context: max_tokens not counted", filter.Context{}, core.Request{PromptTokensMin: 3000, MaxTokens: 8192},
			target("c", window(4096), shifts), keep{true, ""}},
		{"context: max_tokens not counted, prompt too big", filter.Context{}, core.Request{PromptTokensMin: 4097, MaxTokens: 8192},
			target("c", window(4096), shifts), keep{false, "needs at least 4097 tokens (prompt >= 4097) > context window 4096"}},
		// A max_tokens near the largest int wrapped prompt + max_tokens below the window: the
		// target that certainly cannot fit was kept (TestContextHugeMaxTokens).
		{"context: max_tokens near the largest int", filter.Context{}, core.Request{PromptTokensMin: 10, MaxTokens: math.MaxInt - 5},
			target("c", window(4096)), keep{false, "needs at least 9223372036854775807 tokens (prompt >= 10, max_tokens 9223372036854775802) > context window 4096"}},
		{"context: max_tokens the largest int", filter.Context{}, core.Request{PromptTokensMin: math.MaxInt, MaxTokens: math.MaxInt},
			target("c", window(4096)), keep{false, "needs at least 9223372036854775807 tokens (prompt >= 9223372036854775807, max_tokens 9223372036854775807) > context window 4096"}},
		{"cooldown: cooling", filter.Cooldown{Avail: avail{"h": t0}}, core.Request{}, target("h"), keep{false, "cooling down until 2025-03-01T12:00:00Z"}},
		{"cooldown: until shown in UTC", filter.Cooldown{Avail: avail{"h": t0.In(time.FixedZone("X", 3600))}}, core.Request{}, target("h"),
			keep{false, "cooling down until 2025-03-01T12:00:00Z"}},
		{"cooldown: probe in flight", filter.Cooldown{Avail: avail{"h": {}}}, core.Request{}, target("h"), keep{false, "cooling down: probe in flight"}},
		{"cooldown: available", filter.Cooldown{Avail: avail{}}, core.Request{}, target("h"), keep{true, ""}},
		{"cooldown: no tracker", filter.Cooldown{}, core.Request{}, target("h"), keep{true, ""}},
		{"cooldown: the tracker says why", filter.Cooldown{Avail: reasoned{avail{"h": t0}, "unavailable: 3 failed health checks"}},
			core.Request{}, target("h"), keep{false, "unavailable: 3 failed health checks"}},
		{"cooldown: an empty why keeps the filter's words", filter.Cooldown{Avail: reasoned{avail{"h": t0}, ""}},
			core.Request{}, target("h"), keep{false, "cooling down until 2025-03-01T12:00:00Z"}},
		{"loading: loading", filter.Loading{Loader: loader{"l": t0.In(time.FixedZone("X", 3600))}}, core.Request{}, target("l"),
			keep{false, "loading a model until 2025-03-01T12:00:00Z"}},
		{"loading: not loading", filter.Loading{Loader: loader{}}, core.Request{}, target("l"), keep{true, ""}},
		{"loading: no loader", filter.Loading{}, core.Request{}, target("l"), keep{true, ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason := tc.f.Keep(&tc.req, tc.t)
			if diff := cmp.Diff(tc.want, keep{ok, reason}); diff != "" {
				t.Errorf("Keep (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNames(t *testing.T) {
	var got []string
	for _, st := range filter.Standard(avail{}) {
		got = append(got, st.Filter.Name())
	}
	if diff := cmp.Diff([]string{"privacy", "vision", "tools", "context", "cooldown"}, got); diff != "" {
		t.Errorf("stage names (-want +got):\n%s", diff)
	}
}

func TestStandard(t *testing.T) {
	failOpen := func(stages []filter.Stage) []bool {
		var out []bool
		for _, st := range stages {
			out = append(out, st.FailOpen)
		}
		return out
	}
	if diff := cmp.Diff([]bool{false, false, false, false, true}, failOpen(filter.Standard(avail{}))); diff != "" {
		t.Errorf("only cooldown fails open (-want +got):\n%s", diff)
	}
	if n := len(filter.Standard(nil)); n != 4 {
		t.Errorf("Standard(nil) has %d stages, want 4 (no cooldown)", n)
	}
	withLoader := filter.Standard(availLoader{avail{}, loader{}})
	var got []string
	for _, st := range withLoader {
		got = append(got, st.Filter.Name())
	}
	if diff := cmp.Diff([]string{"privacy", "vision", "tools", "context", "loading", "cooldown"}, got); diff != "" {
		t.Errorf("with a Loader, stage names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, false, false, false, false, true}, failOpen(withLoader)); diff != "" {
		t.Errorf("with a Loader, only cooldown fails open (-want +got):\n%s", diff)
	}
}

// TestLoadingFailsClosed: when every target is loading, nothing is kept (the server answers 503
// with Retry-After); when one is not, it alone is kept.
func TestLoadingFailsClosed(t *testing.T) {
	a, b := target("a"), target("b")
	stages := filter.Standard(availLoader{avail{}, loader{"a": t0, "b": t0}})
	res := filter.Run(&core.Request{}, []*core.Target{a, b}, stages)
	if res.Kept != nil || len(res.Drops) != 2 || res.FailedOpen != nil {
		t.Errorf("all loading: Kept %v, Drops %+v, FailedOpen %v; want nothing kept, two drops", names(res.Kept), res.Drops, res.FailedOpen)
	}
	stages = filter.Standard(availLoader{avail{"b": t0}, loader{"a": t0}})
	res = filter.Run(&core.Request{}, []*core.Target{a, b}, stages)
	if diff := cmp.Diff([]string{"b"}, names(res.Kept)); diff != "" || len(res.FailedOpen) != 1 {
		t.Errorf("a loading, b cooling: Kept (-want +got):\n%s FailedOpen %v (cooldown should fail open on b)", diff, res.FailedOpen)
	}
}

// fixed is a test filter that drops the named targets with reason "no".
type fixed struct {
	name string
	drop map[string]bool
}

func (f fixed) Name() string { return f.name }
func (f fixed) Keep(_ *core.Request, t *core.Target) (bool, string) {
	if f.drop[t.Name] {
		return false, "no"
	}
	return true, ""
}

func drops(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

func names(ts []*core.Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// result is a filter.Result with the kept targets by name, for diffs.
type result struct {
	Kept       []string
	Drops      []filter.Drop
	FailedOpen []string
}

func TestRun(t *testing.T) {
	a, b, c, d := target("a"), target("b", public), target("c"), target("d", public)
	all := []*core.Target{a, b, c, d}
	cases := []struct {
		name    string
		req     core.Request
		targets []*core.Target
		stages  []filter.Stage
		want    result
	}{
		{
			name:    "no stages keep everything in order",
			targets: all,
			want:    result{Kept: []string{"a", "b", "c", "d"}},
		},
		{
			name:    "drops are recorded in stage order and the rest keeps its order",
			targets: all,
			stages: []filter.Stage{
				{Filter: fixed{"one", drops("c")}},
				{Filter: fixed{"two", drops("a", "d")}},
			},
			want: result{
				Kept: []string{"b"},
				Drops: []filter.Drop{
					{Target: "c", Filter: "one", Reason: "no"},
					{Target: "a", Filter: "two", Reason: "no"},
					{Target: "d", Filter: "two", Reason: "no"},
				},
			},
		},
		{
			name:    "a fail-closed stage that drops everything leaves nothing",
			targets: all,
			stages:  []filter.Stage{{Filter: fixed{"closed", drops("a", "b", "c", "d")}}},
			want: result{Drops: []filter.Drop{
				{Target: "a", Filter: "closed", Reason: "no"},
				{Target: "b", Filter: "closed", Reason: "no"},
				{Target: "c", Filter: "closed", Reason: "no"},
				{Target: "d", Filter: "closed", Reason: "no"},
			}},
		},
		{
			name:    "a fail-open stage that would drop everything left keeps it all and says so",
			targets: all,
			stages: []filter.Stage{
				{Filter: fixed{"closed", drops("a")}},
				{Filter: fixed{"open", drops("b", "c", "d")}, FailOpen: true},
			},
			want: result{
				Kept:       []string{"b", "c", "d"},
				Drops:      []filter.Drop{{Target: "a", Filter: "closed", Reason: "no"}},
				FailedOpen: []string{"open"},
			},
		},
		{
			name:    "a fail-open stage that leaves something drops as usual",
			targets: all,
			stages:  []filter.Stage{{Filter: fixed{"open", drops("b", "c")}, FailOpen: true}},
			want: result{
				Kept:  []string{"a", "d"},
				Drops: []filter.Drop{{Target: "b", Filter: "open", Reason: "no"}, {Target: "c", Filter: "open", Reason: "no"}},
			},
		},
		{
			name:    "a fail-open stage after everything is gone does not fail open",
			targets: all,
			stages: []filter.Stage{
				{Filter: fixed{"closed", drops("a", "b", "c", "d")}},
				{Filter: fixed{"open", drops("a", "b", "c", "d")}, FailOpen: true},
			},
			want: result{Drops: []filter.Drop{
				{Target: "a", Filter: "closed", Reason: "no"},
				{Target: "b", Filter: "closed", Reason: "no"},
				{Target: "c", Filter: "closed", Reason: "no"},
				{Target: "d", Filter: "closed", Reason: "no"},
			}},
		},
		{
			name:    "stages after a fail-open still drop",
			targets: all,
			stages: []filter.Stage{
				{Filter: fixed{"open", drops("a", "b", "c", "d")}, FailOpen: true},
				{Filter: fixed{"closed", drops("b")}},
			},
			want: result{
				Kept:       []string{"a", "c", "d"},
				Drops:      []filter.Drop{{Target: "b", Filter: "closed", Reason: "no"}},
				FailedOpen: []string{"open"},
			},
		},
		{
			name:    "failing open on cooldown orders by recovery, soonest first, probes first, ties stable",
			targets: all,
			stages: []filter.Stage{{Filter: filter.Cooldown{Avail: avail{
				"a": t0.Add(time.Minute), "b": t0.Add(time.Second), "c": t0.Add(time.Minute), "d": {},
			}}, FailOpen: true}},
			want: result{Kept: []string{"d", "b", "a", "c"}, FailedOpen: []string{"cooldown"}},
		},
		{
			name:    "privacy never relaxes, even when it leaves nothing and cooldown would fail open",
			req:     core.Request{Strict: true},
			targets: []*core.Target{b, d},
			stages:  filter.Standard(avail{"b": t0, "d": t0}),
			want: result{Drops: []filter.Drop{
				{Target: "b", Filter: "privacy", Reason: "strict request: public target"},
				{Target: "d", Filter: "privacy", Reason: "strict request: public target"},
			}},
		},
		{
			name:    "standard chain: strict request, every private target cooling: fail open on private ones only",
			req:     core.Request{Strict: true},
			targets: all,
			stages:  filter.Standard(avail{"a": t0.Add(time.Minute), "c": t0.Add(time.Second)}),
			want: result{
				Kept: []string{"c", "a"},
				Drops: []filter.Drop{
					{Target: "b", Filter: "privacy", Reason: "strict request: public target"},
					{Target: "d", Filter: "privacy", Reason: "strict request: public target"},
				},
				FailedOpen: []string{"cooldown"},
			},
		},
		{
			name:    "no targets",
			targets: nil,
			stages:  filter.Standard(avail{}),
			want:    result{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]*core.Target(nil), tc.targets...)
			res := filter.Run(&tc.req, tc.targets, tc.stages)
			got := result{Kept: names(res.Kept), Drops: res.Drops, FailedOpen: res.FailedOpen}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(names(in), names(tc.targets)); diff != "" {
				t.Errorf("Run changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

// RunInto builds Kept in the array it is given when that can hold every target, and leaves the
// input alone either way.
func TestRunIntoUsesItsArray(t *testing.T) {
	ts := []*core.Target{target("a"), target("b"), target("c")}
	for _, tc := range []struct {
		name   string
		buf    []*core.Target
		shared bool
	}{
		{"nil", nil, false},
		{"too small", make([]*core.Target, 0, 2), false},
		{"exact", make([]*core.Target, 0, 3), true},
		{"larger and dirty", []*core.Target{target("x"), target("y"), target("z"), target("w")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := filter.RunInto(tc.buf, &core.Request{}, ts, nil)
			if diff := cmp.Diff([]string{"a", "b", "c"}, names(res.Kept)); diff != "" {
				t.Errorf("Kept (-want +got):\n%s", diff)
			}
			if shared := cap(tc.buf) > 0 && &res.Kept[0] == &tc.buf[:1][0]; shared != tc.shared {
				t.Errorf("Kept in the given array: %v, want %v", shared, tc.shared)
			}
			res.Kept[0] = nil
			if ts[0] == nil {
				t.Fatal("Kept shares its array with the input")
			}
		})
	}
}

func TestRunKeptIsACopy(t *testing.T) {
	ts := []*core.Target{target("a"), target("b")}
	res := filter.Run(&core.Request{}, ts, nil)
	res.Kept[0] = nil
	if ts[0] == nil {
		t.Fatal("Kept shares its array with the input")
	}
}

// TestOversizePromptIsDropped goes from messages to a drop: a prompt that certainly cannot fit a
// small window is removed, while a large-window target and an unknown-window target are kept.
func TestOversizePromptIsDropped(t *testing.T) {
	text := strings.Repeat("lorem ipsum dolor sit amet, ", 2000) // 10,000 words, more tokens
	msgs := []core.Message{{Role: "user", Content: jsonString(text)}}
	req := core.Request{Messages: msgs, PromptTokensMin: filter.PromptTokensMin(msgs), MaxTokens: 512}
	if req.PromptTokensMin < 10000 {
		t.Fatalf("PromptTokensMin = %d, want at least the 10000 words", req.PromptTokensMin)
	}
	small, big, unknown := target("small", window(8192)), target("big", window(128000)), target("unknown")
	res := filter.Run(&req, []*core.Target{small, big, unknown}, filter.Standard(avail{}))
	if diff := cmp.Diff([]string{"big", "unknown"}, names(res.Kept)); diff != "" {
		t.Errorf("Kept (-want +got):\n%s", diff)
	}
	if len(res.Drops) != 1 || res.Drops[0].Target != "small" || res.Drops[0].Filter != "context" {
		t.Errorf("Drops = %+v, want small dropped by context", res.Drops)
	}
}

// TestStandardWithTracker runs the chain against the real health tracker.
func TestStandardWithTracker(t *testing.T) {
	clk := health.NewManualClock(t0)
	a, b := target("a"), target("b")
	a.Index, b.Index = 0, 1
	tr := health.NewTracker(2, clk, health.Policy{Failures: 1, Base: 10 * time.Second})
	stages := filter.Standard(tr)
	ts := []*core.Target{a, b}

	tr.Report(a, core.ClassConnection, 0)
	res := filter.Run(&core.Request{}, ts, stages)
	want := []filter.Drop{{Target: "a", Filter: "cooldown", Reason: "cooling down until 2025-03-01T12:00:10Z"}}
	if diff := cmp.Diff(want, res.Drops); diff != "" || len(res.FailedOpen) != 0 {
		t.Errorf("one benched: Drops (-want +got):\n%s FailedOpen %v", diff, res.FailedOpen)
	}

	clk.Advance(5 * time.Second)
	tr.Report(b, core.ClassConnection, 0) // b benched until t0+15s, a until t0+10s
	res = filter.Run(&core.Request{}, []*core.Target{b, a}, stages)
	if diff := cmp.Diff([]string{"a", "b"}, names(res.Kept)); diff != "" || len(res.FailedOpen) != 1 {
		t.Errorf("both benched: Kept (-want +got):\n%s FailedOpen %v", diff, res.FailedOpen)
	}
}

// TestPrivacyNeverLeaks is the invariant "a strict request never reaches a public target": over
// random targets, requests and cooldown states, including when every private target is cooling
// down and when there is none, Run(Standard) keeps no public target for a strict request. It also
// checks that Run only subtracts and accounts for every target.
func TestPrivacyNeverLeaks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var buf []*core.Target
	for i := range 20000 {
		n := r.IntN(7)
		ts := make([]*core.Target, n)
		av := avail{}
		mode := r.IntN(4) // 0: random, 1: every private target cooling, 2: no private target, 3: all cooling
		for j := range ts {
			tg := &core.Target{
				Name:          string(rune('a' + j)),
				Index:         j,
				Privacy:       core.Privacy(r.IntN(2)),
				Tools:         r.IntN(2) == 0,
				Vision:        r.IntN(2) == 0,
				ContextWindow: []int{0, 1000, 8000}[r.IntN(3)],
			}
			if mode == 2 {
				tg.Privacy = core.Public
			}
			cooling := r.IntN(3) == 0
			if mode == 3 || mode == 1 && tg.Privacy == core.Private {
				cooling = true
			}
			if cooling {
				av[tg.Name] = t0.Add(time.Duration(r.IntN(5)) * time.Second)
			}
			ts[j] = tg
		}
		req := &core.Request{
			Strict:          r.IntN(2) == 0,
			Images:          r.IntN(3) == 0,
			Tools:           r.IntN(3) == 0,
			PromptTokensMin: r.IntN(2000),
			MaxTokens:       r.IntN(4000),
		}
		res := filter.Run(req, ts, filter.Standard(av))
		// RunInto over an array the earlier cases left their targets in decides the same.
		into := filter.RunInto(buf, req, ts, filter.Standard(av))
		if diff := cmp.Diff(result{names(res.Kept), res.Drops, res.FailedOpen},
			result{names(into.Kept), into.Drops, into.FailedOpen}); diff != "" {
			t.Fatalf("case %d: RunInto (-Run +RunInto):\n%s", i, diff)
		}
		if cap(into.Kept) > cap(buf) {
			buf = into.Kept[:0]
		}

		inInput := map[*core.Target]bool{}
		for _, tg := range ts {
			inInput[tg] = true
		}
		dropped := map[string]bool{}
		for _, d := range res.Drops {
			dropped[d.Target] = true
		}
		for _, k := range res.Kept {
			if req.Strict && k.Privacy == core.Public {
				t.Fatalf("case %d (mode %d): strict request kept public target %s; kept %v drops %+v failed open %v",
					i, mode, k.Name, names(res.Kept), res.Drops, res.FailedOpen)
			}
			if !inInput[k] {
				t.Fatalf("case %d: kept %s, which was not in the input", i, k.Name)
			}
			if dropped[k.Name] {
				t.Fatalf("case %d: %s both kept and dropped", i, k.Name)
			}
			delete(inInput, k)
		}
		for tg := range inInput {
			if !dropped[tg.Name] {
				t.Fatalf("case %d: %s neither kept nor dropped", i, tg.Name)
			}
		}
		if len(res.FailedOpen) == 0 && !isSubsequence(res.Kept, ts) {
			t.Fatalf("case %d: Kept %v reordered without failing open (input %v)", i, names(res.Kept), names(ts))
		}
	}
}

func isSubsequence(sub, of []*core.Target) bool {
	i := 0
	for _, t := range of {
		if i < len(sub) && sub[i] == t {
			i++
		}
	}
	return i == len(sub)
}

func BenchmarkRun(b *testing.B) {
	ts := make([]*core.Target, 5)
	for i := range ts {
		ts[i] = &core.Target{Name: string(rune('a' + i)), Index: i, Tools: true, Vision: i%2 == 0,
			ContextWindow: 32768, Privacy: core.Privacy(i % 2), Weight: 1, Stats: &core.Stats{}}
	}
	req := &core.Request{Tools: true, PromptTokensMin: 1200, MaxTokens: 1024}
	run := func(name string, tr *health.Tracker) {
		stages := filter.Standard(tr)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				filter.Run(req, ts, stages)
			}
		})
	}
	run("all eligible", health.NewTracker(5, health.NewManualClock(t0), health.Policy{}))
	b.Run("all eligible into", func(b *testing.B) {
		stages := filter.Standard(health.NewTracker(5, health.NewManualClock(t0), health.Policy{}))
		kept := make([]*core.Target, 0, len(ts))
		b.ReportAllocs()
		for b.Loop() {
			filter.RunInto(kept, req, ts, stages)
		}
	})
	tr := health.NewTracker(5, health.NewManualClock(t0), health.Policy{})
	for range 3 {
		tr.Report(ts[4], core.ClassTimeout, 0)
	}
	run("one cooling", tr)
	for _, tg := range ts {
		for range 3 {
			tr.Report(tg, core.ClassTimeout, 0)
		}
	}
	run("all cooling", tr)
}
