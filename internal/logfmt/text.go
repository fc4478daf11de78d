// Package logfmt owns the gateway's log line format: log/slog's text format (key=value pairs),
// written for the common record (a message and flat attributes of plain kinds) without slog's
// generic machinery, and handed to slog's own TextHandler for everything else. A line whose
// shape the caller knows (the request log line, written on every request) can skip the record
// too: Text.Line appends typed pairs straight into a pooled buffer, in the same bytes.
// slog.TextHandler took 2.5 µs for the request line, a few percent of the gateway's CPU under
// load (PERFORMANCE.md).
package logfmt

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hayula/gateway/internal/swar"
)

// Text is a slog.Handler whose output is byte for byte what slog.NewTextHandler(w, opts) writes
// (TestSameAsTextHandler). Records with groups, attributes added by WithAttrs, or values of
// kinds other than string, int, uint, float, bool and duration go to slog's TextHandler.
type Text struct {
	mu    *sync.Mutex // serialises every write to w, this handler's and the fallback's
	w     io.Writer
	level slog.Leveler
	text  slog.Handler
	bufs  *sync.Pool // *[]byte

	// stamp is the second last written, formatted: lines come many to a second, and formatting
	// the date, clock and zone was a quarter of a Line's cost (BenchmarkRequestLineDirect).
	stamp atomic.Pointer[stamp]
}

var _ slog.Handler = (*Text)(nil)

// NewText writes records to w at level and above; a nil level means Info.
func NewText(w io.Writer, level slog.Leveler) *Text {
	if level == nil {
		level = slog.LevelInfo
	}
	mu := &sync.Mutex{}
	lw := &lockedWriter{mu: mu, w: w}
	return &Text{mu: mu, w: w, level: level, bufs: &sync.Pool{},
		text: slog.NewTextHandler(lw, &slog.HandlerOptions{Level: level})}
}

// lockedWriter gives the fallback handler the same lock as the fast path.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Enabled reports whether level is at or above the handler's.
func (h *Text) Enabled(_ context.Context, level slog.Level) bool { return level >= h.level.Level() }

// WithAttrs and WithGroup return slog's TextHandler with them: derived loggers keep the format
// and lose only the fast path.
func (h *Text) WithAttrs(as []slog.Attr) slog.Handler { return h.text.WithAttrs(as) }
func (h *Text) WithGroup(name string) slog.Handler    { return h.text.WithGroup(name) }

// Handle writes r as one line.
func (h *Text) Handle(ctx context.Context, r slog.Record) error {
	fast := true
	r.Attrs(func(a slog.Attr) bool {
		fast = a.Key != "" && lineKind(a.Value.Kind())
		return fast
	})
	if !fast {
		return h.text.Handle(ctx, r)
	}
	l := h.Line(r.Time, r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		l = l.attr(a)
		return true
	})
	return l.Write()
}

// start takes a buffer from the pool and writes a line's time, level and message to it.
func (h *Text) start(t time.Time, level slog.Level, msg string) *[]byte {
	bp, _ := h.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b := (*bp)[:0]
	if !t.IsZero() {
		b = append(b, "time="...)
		b = h.appendTime(b, t)
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = append(b, level.String()...) // "INFO", "DEBUG-2"…: never quoted
	b = append(b, " msg="...)
	b = appendString(b, msg)
	*bp = b
	return bp
}

// finish ends the line in *bp, writes it and gives the buffer back to the pool.
func (h *Text) finish(bp *[]byte) error {
	b := append(*bp, '\n')
	h.mu.Lock()
	_, err := h.w.Write(b)
	h.mu.Unlock()
	if cap(b) <= 16<<10 {
		*bp = b
		h.bufs.Put(bp)
	}
	return err
}

// stamp is one second in one location as slog writes it, without the milliseconds: RFC 3339,
// the date and clock in text[:19] and the zone ("Z" or "-07:00") in text[19:n]. The key is the
// Unix second and the location, which together fix the offset (DST included); a Location's
// zone rules do not change once it is built.
type stamp struct {
	sec  int64
	loc  *time.Location
	ok   bool // the year has four digits; other years have another layout, which appendMillis writes
	n    int
	text [32]byte
}

// appendTime is appendMillis(b, t), with the date, clock and zone of t's second taken from the
// handler's stamp when it is that second's. A stamp is never modified once stored; goroutines
// whose times differ each store their own, so times out of order cost a format and stay right.
func (h *Text) appendTime(b []byte, t time.Time) []byte {
	sec, loc := t.Unix(), t.Location()
	s := h.stamp.Load()
	if s == nil || s.sec != sec || s.loc != loc {
		s = &stamp{sec: sec, loc: loc}
		y := t.Year()
		s.ok = y >= 0 && y <= 9999
		if s.ok {
			s.n = len(t.AppendFormat(s.text[:0], time.RFC3339)) // at most 25 bytes: fits, so in place
		}
		h.stamp.Store(s)
	}
	if !s.ok {
		return appendMillis(b, t)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, s.text[:19]...)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, s.text[19:s.n]...)
}

// appendMillis is RFC 3339 with exactly three digits of milliseconds, as slog writes times.
func appendMillis(b []byte, t time.Time) []byte {
	const prefix = len("2006-01-02T15:04:05.000")
	n := len(b)
	// RFC3339Nano trims trailing zeros; a tenth of a millisecond added after truncating keeps
	// four digits, and the fourth is cut.
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefix], b[n+prefix+1:]...)
}

// appendString appends s, quoted with strconv.Quote when slog would quote it: when it is empty
// or has a space, '=', '"', an ASCII control character but DEL, or a rune that is not printable.
func appendString(b []byte, s string) []byte {
	if needsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

func needsQuoting(s string) bool {
	if s == "" {
		return true
	}
	// Eight bytes at a time, and the last few in one word (swar.Short), while none is one the
	// byte loop below stops at or looks into: a request line's keys and values are plain ASCII
	// (the path, the route, the request ID), and a byte at a time was most of the line's cost.
	i := 0
	for ; i < len(s)-7; i += 8 {
		if stopByte(swar.Word(s, i)) {
			break
		}
	}
	if i+8 > len(s) && !stopByte(swar.Short(s[i:], 'a')) {
		return false
	}
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == '=' || c == '"' {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// stopByte reports whether a byte of the word x is one needsQuoting's byte loop stops at or
// decodes: a space or an ASCII control character (below 0x21), '=', '"', or a byte of a
// multi-byte rune (0x80 and above). Each test is the "has a zero byte" one: its borrows can
// mark bytes past a true hit, never a word without one.
func stopByte(x uint64) bool {
	return swar.Below(x, '!')|swar.Is(x, '=')|swar.Is(x, '"')|swar.High(x) != 0
}
