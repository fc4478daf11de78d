package logfmt

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// record builds a record with attrs at a fixed time.
func record(t time.Time, level slog.Level, msg string, attrs ...slog.Attr) slog.Record {
	r := slog.NewRecord(t, level, msg, 0)
	r.AddAttrs(attrs...)
	return r
}

func both(t *testing.T, r slog.Record) (fast, std string) {
	t.Helper()
	var a, b bytes.Buffer
	if err := NewText(&a, slog.LevelDebug).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return a.String(), b.String()
}

func TestSameAsTextHandler(t *testing.T) {
	at := time.Date(2026, 11, 30, 3, 4, 5, 120_000_000, time.FixedZone("X", 3600))
	tests := []slog.Record{
		record(at, slog.LevelInfo, "request", slog.String("method", "POST"), slog.String("path", "/v1/chat/completions"),
			slog.String("route", "saif"), slog.String("chain", "saif→deepseek-r1 (served by deepseek-r1)"),
			slog.Int("status", 200), slog.Duration("duration", 1234567*time.Nanosecond)),
		record(at.Add(999*time.Microsecond), slog.LevelWarn, "stream broke off", slog.String("target", "r1"),
			slog.Any("error", errors.New("boom \"quoted\"")), slog.Bool("x", true)),
		record(time.Time{}, slog.LevelError, "", slog.String("", "empty key"), slog.String("k", "")),
		record(at, slog.LevelDebug+1, "a=b", slog.Float64("f", 0.25), slog.Uint64("u", 7), slog.Int64("i", -3),
			slog.String("tab", "a\tb"), slog.String("nl", "a\nb"), slog.String("bad", "\xff"), slog.String("nbsp", "a\u00a0b")),
		record(at, slog.LevelInfo, "group", slog.Group("g", slog.String("a", "1"))),
		record(at, slog.LevelInfo, "time", slog.Time("t", at)),
	}
	for i, r := range tests {
		if fast, std := both(t, r); fast != std {
			t.Errorf("record %d:\nfast %q\nstd  %q", i, fast, std)
		}
	}
	// Random strings of printable, space, control and non-ASCII runes, as keys and values.
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("ab=\" \t\n\\é→\u00a0\u200b\x00\x7fZ9.-_µ")
	word := func() string {
		var sb strings.Builder
		for range rng.IntN(6) {
			sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	for i := range 2000 {
		r := record(at.Add(time.Duration(rng.Int64N(int64(time.Hour)))), slog.LevelInfo, word(),
			slog.String(word()+"k", word()), slog.Duration("d", time.Duration(rng.Int64N(int64(time.Minute)))))
		if fast, std := both(t, r); fast != std {
			t.Fatalf("random record %d:\nfast %q\nstd  %q", i, fast, std)
		}
	}
}

func TestDerivedAndLevels(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(NewText(&buf, slog.LevelInfo))
	l.Debug("hidden")
	l.With("component", "lifecycle").WithGroup("g").Info("derived", "k", 1)
	l.Info("plain", "k", 2)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "component=lifecycle") || !strings.Contains(lines[0], "g.k=1") ||
		!strings.HasSuffix(lines[1], "msg=plain k=2") {
		t.Errorf("got %q", lines)
	}
}

// Writes from the fast path and from derived loggers never interleave within a line.
func TestConcurrentLinesWhole(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(NewText(&buf, slog.LevelInfo))
	d := l.With("via", "text")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if g%2 == 0 {
					l.Info("fast", "g", g, "i", i, "pad", strings.Repeat("x", 100))
				} else {
					d.Info("std", "g", g, "i", i, "pad", strings.Repeat("y", 100))
				}
			}
		}()
	}
	wg.Wait()
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if !strings.HasPrefix(line, "time=") || strings.Count(line, "time=") != 1 {
			t.Fatalf("interleaved line %q", line)
		}
	}
}

func BenchmarkRequestLine(b *testing.B) {
	for _, tt := range []struct {
		name string
		h    slog.Handler
	}{
		{"logfmt", NewText(discard{}, slog.LevelInfo)},
		{"slog-text", slog.NewTextHandler(discard{}, nil)},
	} {
		b.Run(tt.name+"/handle", func(b *testing.B) {
			start := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
				r.AddAttrs(slog.String("method", "POST"), slog.String("path", "/v1/chat/completions"),
					slog.String("route", "saif"), slog.String("chain", "saif"), slog.Int("status", 200),
					slog.Duration("duration", time.Since(start)))
				_ = tt.h.Handle(context.Background(), r)
			}
		})
		b.Run(tt.name, func(b *testing.B) {
			l := slog.New(tt.h)
			start := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				l.LogAttrs(context.Background(), slog.LevelInfo, "request",
					slog.String("method", "POST"), slog.String("path", "/v1/chat/completions"),
					slog.String("route", "saif"), slog.String("chain", "saif"), slog.Int("status", 200),
					slog.Duration("duration", time.Since(start)))
			}
		})
	}
}

// BenchmarkRequestLineDirect is the request line written as a Line: what server's logRequest
// does with a *Text, against BenchmarkRequestLine's logfmt (the record through Handle). Its
// duration is under 10 ms, as a request's is, however long the benchmark runs (under valgrind,
// seconds).
func BenchmarkRequestLineDirect(b *testing.B) {
	h := NewText(discard{}, slog.LevelInfo)
	start := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now()
		_ = h.Line(now, slog.LevelInfo, "request").String("method", "POST").String("path", "/v1/chat/completions").
			String("route", "saif").String("chain", "saif").Int("status", 200).Duration("duration", now.Sub(start)%(10*time.Millisecond)).Write()
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
