package logfmt

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // America/New_York for the DST cases, whatever the machine has

	"github.com/google/go-cmp/cmp"
)

// lineTester writes lines through one Text, so that its time stamp carries over from line to
// line as it does in the gateway, and the same records through slog's TextHandler.
type lineTester struct {
	t       *testing.T
	fast    bytes.Buffer
	std     bytes.Buffer
	h       *Text
	textStd slog.Handler
}

func newLineTester(t *testing.T) *lineTester {
	lt := &lineTester{t: t}
	lt.h = NewText(&lt.fast, slog.LevelDebug)
	lt.textStd = slog.NewTextHandler(&lt.std, &slog.HandlerOptions{Level: slog.LevelDebug})
	return lt
}

// check writes attrs (of the kinds Line has methods for) as a Line and as a record, and returns
// both outputs.
func (lt *lineTester) check(at time.Time, level slog.Level, msg string, attrs ...slog.Attr) (fast, std string) {
	lt.t.Helper()
	lt.fast.Reset()
	lt.std.Reset()
	l := lt.h.Line(at, level, msg)
	for _, a := range attrs {
		if !lineKind(a.Value.Kind()) {
			lt.t.Fatalf("no Line method for %v", a.Value.Kind())
		}
		l = l.attr(a)
	}
	if err := l.Write(); err != nil {
		lt.t.Fatal(err)
	}
	if err := lt.textStd.Handle(context.Background(), record(at, level, msg, attrs...)); err != nil {
		lt.t.Fatal(err)
	}
	return lt.fast.String(), lt.std.String()
}

func TestLineSameAsTextHandler(t *testing.T) {
	at := time.Date(2026, 11, 30, 3, 4, 5, 120_000_000, time.FixedZone("X", 3600))
	tests := []struct {
		name  string
		at    time.Time
		level slog.Level
		msg   string
		attrs []slog.Attr
	}{
		{"request line", at, slog.LevelInfo, "request", []slog.Attr{slog.String("method", "POST"),
			slog.String("path", "/v1/chat/completions"), slog.String("route", "saif"),
			slog.String("chain", "saif→deepseek-r1"), slog.Int("status", 200), slog.Duration("duration", 1234567)}},
		{"no attrs", at, slog.LevelWarn, "plain", nil},
		{"zero time, empty message and values", time.Time{}, slog.LevelError, "",
			[]slog.Attr{slog.String("k", ""), slog.String("", "empty key"), slog.Int("", 0)}},
		{"odd level", at, slog.LevelDebug + 1, "a=b", []slog.Attr{slog.Bool("t", true), slog.Bool("f", false)}},
		{"quoting", at, slog.LevelInfo, "say \"hi\"", []slog.Attr{slog.String("tab", "a\tb"), slog.String("nl", "a\nb"),
			slog.String("bad", "\xff"), slog.String("nbsp", "a\u00a0b"), slog.String("zw", "a\u200bb"),
			slog.String("nul", "\x00"), slog.String("del", "\x7f"), slog.String("eq", "a=b"), slog.String("q", `"`),
			slog.String("bs", `a\b`), slog.String("é→µ", "日本"), slog.String("k y", "v"), slog.String("k=", "v")}},
		{"numbers", at, slog.LevelInfo, "n", []slog.Attr{slog.Int64("min", math.MinInt64), slog.Int64("max", math.MaxInt64),
			slog.Uint64("umax", math.MaxUint64), slog.Float64("f", 0.25), slog.Float64("big", 1e300),
			slog.Float64("tiny", -5e-324), slog.Float64("nan", math.NaN()), slog.Float64("inf", math.Inf(-1)),
			slog.Float64("negzero", math.Copysign(0, -1))}},
		{"durations", at, slog.LevelInfo, "d", []slog.Attr{slog.Duration("zero", 0), slog.Duration("ns", 1),
			slog.Duration("us", 1500), slog.Duration("ms", -2*time.Millisecond), slog.Duration("s", 61*time.Second+1),
			slog.Duration("h", 100*time.Hour), slog.Duration("min", math.MinInt64), slog.Duration("max", math.MaxInt64)}},
	}
	lt := newLineTester(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if fast, std := lt.check(tt.at, tt.level, tt.msg, tt.attrs...); fast != std {
				t.Errorf("\nline %q\nslog %q", fast, std)
			}
		})
	}

	// Generated lines: keys and values from an alphabet of plain, quoted, control and non-ASCII
	// runes, every kind, times spread over a century in three zones and out of order.
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune("ab=\" \t\n\\é→\u00a0\u200b\x00\x7fZ9.-_µ\U0001F600")
	word := func() string {
		var sb strings.Builder
		for range rng.IntN(6) {
			sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		if rng.IntN(20) == 0 {
			sb.WriteByte(0xff) // invalid UTF-8
		}
		return sb.String()
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	zones := []*time.Location{time.UTC, ny, time.FixedZone("", -(5*3600 + 30*60))}
	base := time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3000 {
		var when time.Time
		if rng.IntN(50) > 0 {
			when = base.Add(time.Duration(rng.Int64N(int64(100 * 365 * 24 * time.Hour)))).In(zones[rng.IntN(len(zones))])
		}
		attrs := []slog.Attr{
			slog.String(word()+"k", word()),
			slog.Int64(word(), rng.Int64()-rng.Int64()),
			slog.Uint64("u", rng.Uint64()),
			slog.Float64("f", rng.NormFloat64()*math.Pow(10, float64(rng.IntN(40)-20))),
			slog.Bool("b", rng.IntN(2) == 0),
			slog.Duration("d", time.Duration(rng.Int64()>>rng.IntN(64))*time.Duration(1-2*rng.IntN(2))),
		}
		if fast, std := lt.check(when, slog.Level(rng.IntN(20)-10), word(), attrs...); fast != std {
			t.Fatalf("generated line %d:\nline %q\nslog %q", i, fast, std)
		}
	}
}

// The time stamp a Text keeps (one second in one location) never shows through: across second,
// day, year and DST boundaries, for times out of order, for the same second in several zones and
// for years slog writes in another layout, lines keep slog's time.
func TestLineTimeAcrossBoundaries(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	odd := time.FixedZone("odd", 3600+61)        // seconds in the offset: RFC 3339 writes +01:01
	half := time.FixedZone("half", -(30*60 + 1)) // behind UTC by less than an hour: -00:30
	zeroNamed := time.FixedZone("GMT", 0)        // offset 0 under another name: still "Z"
	day := time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
	springForward := time.Date(2026, 3, 8, 6, 59, 59, 999_000_000, time.UTC) // 01:59:59.999 EST
	fallBack := time.Date(2026, 11, 1, 5, 59, 59, 500_000_000, time.UTC)     // 01:59:59.5 EDT
	tests := []struct {
		name  string
		times []time.Time
	}{
		{"second", []time.Time{day.Add(-time.Second), day.Add(-time.Second + 1), day.Add(-999_999_999), day}},
		{"year", []time.Time{day, day.Add(1), day.Add(1).In(ny), day.Add(2)}},
		{"out of order", []time.Time{day.Add(time.Second), day, day.Add(time.Second), day.Add(-time.Hour), day.Add(time.Second)}},
		{"same second, other zones", []time.Time{day, day.In(ny), day.In(odd), day.In(half), day.In(zeroNamed),
			day.In(time.Local), day, day.In(ny)}},
		{"spring forward", []time.Time{springForward.In(ny), springForward.Add(time.Millisecond).In(ny),
			springForward.In(ny), springForward.Add(time.Hour).In(ny)}},
		{"fall back", []time.Time{fallBack.In(ny), fallBack.Add(time.Second).In(ny), // 01:59:59 EDT, then 01:00:00 EST
			fallBack.Add(time.Hour).In(ny), fallBack.Add(time.Hour + time.Second).In(ny), fallBack.In(ny)}},
		{"monotonic reading", []time.Time{time.Now(), time.Now().Add(time.Second)}},
		{"before 1970", []time.Time{time.Unix(-1, 1), time.Unix(-1, 999_999_999), time.Unix(0, 0), time.Unix(-86400*365*70-1, 5e8)}},
		{"years out of four digits", []time.Time{time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC),
			time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 1e6, time.UTC),
			time.Date(-1, 12, 31, 23, 59, 59, 0, odd), time.Date(0, 1, 1, 0, 0, 0, 1e6, time.UTC)}},
		{"zero time", []time.Time{{}, day, time.Time{}.In(ny), day}},
	}
	lt := newLineTester(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, at := range tt.times {
				if fast, std := lt.check(at, slog.LevelInfo, "m"); fast != std {
					t.Errorf("time %d (%v):\nline %q\nslog %q", i, at, fast, std)
				}
			}
		})
	}
}

func TestLineJoin(t *testing.T) {
	tests := []struct {
		sep  string
		vals []string
	}{
		{"→", nil},
		{"→", []string{"saif"}},
		{"→", []string{"saif", "deepseek-r1", "qwen"}},
		{"→", []string{""}},
		{"→", []string{"a", ""}},
		{"→", []string{"a b", "c"}},
		{" ", []string{"a", "b"}},
		{"", []string{"a", "b"}},
		{"", []string{"", ""}},
		{"", []string{"\xe2\x86", "\x92"}}, // a rune split across parts: the whole needs no quoting
		{"\xe2", []string{"a", "b"}},
		{"=", []string{"a", "b"}},
	}
	var out, std bytes.Buffer
	h := NewText(&out, nil)
	textStd := slog.NewTextHandler(&std, nil)
	for _, tt := range tests {
		t.Run(strings.Join(tt.vals, tt.sep), func(t *testing.T) {
			out.Reset()
			std.Reset()
			at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
			if err := h.Line(at, slog.LevelInfo, "j").Join("chain", tt.sep, tt.vals).Write(); err != nil {
				t.Fatal(err)
			}
			_ = textStd.Handle(context.Background(), record(at, slog.LevelInfo, "j", slog.String("chain", strings.Join(tt.vals, tt.sep))))
			if out.String() != std.String() {
				t.Errorf("\nline %q\nslog %q", out.String(), std.String())
			}
		})
	}
}

// The request line's shape, once the pool has a buffer and the second is stamped, allocates
// nothing.
func TestLineAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	h := NewText(discard{}, nil)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.Local)
	chain := []string{"saif", "deepseek-r1"}
	allocs := testing.AllocsPerRun(100, func() {
		_ = h.Line(at, slog.LevelInfo, "request").String("method", "POST").String("path", "/v1/chat/completions").
			String("route", "saif").Join("chain", "→", chain).Int("status", 200).Duration("duration", 1234567).Write()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per line, want 0", allocs)
	}
}

func FuzzLine(f *testing.F) {
	f.Add("method", "POST", int64(200), int64(1234567), int64(1798000000), int64(120e6), 3600)
	f.Add("", "", int64(math.MinInt64), int64(math.MinInt64), int64(-62135596800), int64(0), 0)
	f.Add("k y", "a\"b\x00\xff→", int64(-1), int64(999), int64(253402300799), int64(999999999), -(5*3600 + 61))
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key, value string, n, d, sec, nsec int64, offset int) {
		lt := newLineTester(t)
		at := time.Unix(sec, nsec).In(time.FixedZone("z", offset%(24*3600)))
		for _, when := range []time.Time{at, at.In(ny), at.UTC(), at} {
			if fast, std := lt.check(when, slog.LevelInfo, value, slog.String(key, value), slog.Int64(key, n),
				slog.Duration(key, time.Duration(d))); fast != std {
				t.Fatalf("\nline %q\nslog %q", fast, std)
			}
		}
	})
}

// Goroutines writing lines of different seconds and zones at once replace the stamp under each
// other: every line still has its own time, and lines stay whole.
func TestLineConcurrentStamps(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	var out syncWriter
	h := NewText(&out, nil)
	var want bytes.Buffer
	textStd := slog.NewTextHandler(&want, nil)
	base := time.Date(2026, 3, 8, 6, 59, 58, 0, time.UTC) // across New York's spring forward
	when := func(g, i int) time.Time {
		at := base.Add(time.Duration((i/2+g)%11) * 317 * time.Millisecond)
		if i%2 == 0 { // each second twice, in two zones
			return at.In(ny)
		}
		return at
	}
	const goroutines, lines = 4, 300
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range lines {
				_ = h.Line(when(g, i), slog.LevelInfo, "m").Int("g", int64(g)).Int("i", int64(i)).Write()
			}
		})
	}
	wg.Wait()
	for g := range goroutines {
		for i := range lines {
			_ = textStd.Handle(context.Background(), record(when(g, i), slog.LevelInfo, "m", slog.Int("g", g), slog.Int("i", i)))
		}
	}
	got := strings.Split(strings.TrimSpace(out.buf.String()), "\n")
	exp := strings.Split(strings.TrimSpace(want.String()), "\n")
	slices.Sort(got)
	slices.Sort(exp)
	if diff := cmp.Diff(exp, got); diff != "" {
		t.Errorf("lines (-slog +line):\n%s", diff)
	}
}

// syncWriter is a bytes.Buffer that the race detector can watch: Text writes under its lock.
type syncWriter struct{ buf bytes.Buffer }

func (w *syncWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

// TestAppendIntAgrees holds the three-digit path of appendInt, and the numbers around it, to
// strconv.AppendInt.
func TestAppendIntAgrees(t *testing.T) {
	check := func(v int64) {
		if got, want := string(appendInt([]byte("x="), v)), string(strconv.AppendInt([]byte("x="), v, 10)); got != want {
			t.Fatalf("appendInt(%d) = %q, want %q", v, got, want)
		}
	}
	for v := int64(-1100); v <= 1100; v++ {
		check(v)
	}
	for _, v := range []int64{math.MinInt64, math.MaxInt64, 9999, 10000, -99, 99} {
		check(v)
	}
}

// TestAppendDurationAgrees holds appendDuration to time.Duration.String: every duration below
// 2,000 ns and around each unit's edges, a million random ones under a second, and the signs and
// extremes String writes itself.
func TestAppendDurationAgrees(t *testing.T) {
	check := func(d time.Duration) {
		if got, want := string(appendDuration([]byte("d="), d)), "d="+d.String(); got != want {
			t.Fatalf("appendDuration(%d) = %q, want %q", int64(d), got, want)
		}
	}
	for d := time.Duration(-10); d < 2000; d++ {
		check(d)
	}
	for _, edge := range []time.Duration{time.Microsecond, 10 * time.Microsecond, 100 * time.Microsecond,
		time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		for d := edge - 1000; d <= edge+1000; d++ {
			check(d)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1_000_000 {
		check(time.Duration(rng.Int64N(int64(time.Second)) >> rng.IntN(30)))
	}
	for _, d := range []time.Duration{math.MinInt64, math.MaxInt64, -time.Second, time.Hour + 1, 61*time.Second + 1} {
		check(d)
	}
}
