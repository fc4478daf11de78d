package logfmt

import (
	"log/slog"
	"strconv"
	"time"
)

// Line is a log line of a shape the caller knows, written without a slog.Record: Text.Line
// starts it with the time, level and message, each method appends one key=value pair, and Write
// writes it. The bytes are what Text.Handle (and so slog.TextHandler) writes for a record with
// that time, level, message and attributes (TestLineSameAsTextHandler). A Line is two words,
// passed by value so that calls chain; it is used by one goroutine, and not after Write.
//
// A Line skips what the caller has already done or does not need: the level is not checked
// (call Enabled first, as slog.Logger does), and nothing is added by WithAttrs or WithGroup
// (those return another handler, which is not a *Text).
type Line struct {
	h  *Text
	bp *[]byte
}

// Line starts a line with t (left out when zero, as slog does), level and msg, in a buffer from
// the handler's pool.
func (h *Text) Line(t time.Time, level slog.Level, msg string) Line {
	return Line{h: h, bp: h.start(t, level, msg)}
}

// key appends " key=" with key quoted when slog would quote it.
func (l Line) key(key string) []byte {
	b := append(*l.bp, ' ')
	b = appendString(b, key)
	return append(b, '=')
}

// String appends key=value, as slog.String(key, value).
func (l Line) String(key, value string) Line {
	*l.bp = appendString(l.key(key), value)
	return l
}

// Join appends key=value with value the elements of vals separated by sep (strings.Join), as
// slog.String(key, strings.Join(vals, sep)), without building the joined string when no part
// needs quoting.
func (l Line) Join(key, sep string, vals []string) Line {
	b := l.key(key)
	if len(vals) == 1 {
		*l.bp = appendString(b, vals[0])
		return l
	}
	plain := len(vals) > 0 && (sep == "" || !needsQuoting(sep))
	for _, v := range vals {
		plain = plain && !needsQuoting(v)
	}
	if !plain {
		// Quoting the parts one by one could differ from quoting the whole: a rune may be split
		// across two parts. Rare (an empty or odd name): the joined string is built.
		var joined []byte
		for i, v := range vals {
			if i > 0 {
				joined = append(joined, sep...)
			}
			joined = append(joined, v...)
		}
		*l.bp = appendString(b, string(joined))
		return l
	}
	// No part needs quoting, so each is valid UTF-8 without spaces, '=', '"' or unprintable
	// runes, and so is the whole.
	for i, v := range vals {
		if i > 0 {
			b = append(b, sep...)
		}
		b = append(b, v...)
	}
	*l.bp = b
	return l
}

// Int appends key=v, as slog.Int64(key, v).
func (l Line) Int(key string, v int64) Line {
	*l.bp = strconv.AppendInt(l.key(key), v, 10)
	return l
}

// Uint appends key=v, as slog.Uint64(key, v).
func (l Line) Uint(key string, v uint64) Line {
	*l.bp = strconv.AppendUint(l.key(key), v, 10)
	return l
}

// Float appends key=v, as slog.Float64(key, v).
func (l Line) Float(key string, v float64) Line {
	*l.bp = strconv.AppendFloat(l.key(key), v, 'g', -1, 64)
	return l
}

// Bool appends key=v, as slog.Bool(key, v).
func (l Line) Bool(key string, v bool) Line {
	*l.bp = strconv.AppendBool(l.key(key), v)
	return l
}

// Duration appends key=d in d.String()'s form, as slog.Duration(key, d).
func (l Line) Duration(key string, d time.Duration) Line {
	*l.bp = appendDuration(l.key(key), d)
	return l
}

// lineKind reports whether a value of kind k has a Line method (attr), and so whether Handle
// writes a record with it itself rather than through slog's TextHandler.
func lineKind(k slog.Kind) bool {
	switch k {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration:
		return true
	}
	return false
}

// attr appends a by the Line method for its kind, which lineKind must accept.
func (l Line) attr(a slog.Attr) Line {
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		return l.String(a.Key, v.String())
	case slog.KindInt64:
		return l.Int(a.Key, v.Int64())
	case slog.KindUint64:
		return l.Uint(a.Key, v.Uint64())
	case slog.KindFloat64:
		return l.Float(a.Key, v.Float64())
	case slog.KindBool:
		return l.Bool(a.Key, v.Bool())
	case slog.KindDuration:
		return l.Duration(a.Key, v.Duration())
	}
	panic("logfmt: no Line method for " + a.Value.Kind().String())
}

// Write ends the line with a newline and writes it to the handler's writer under the handler's
// lock, in one Write; the buffer goes back to the pool.
func (l Line) Write() error { return l.h.finish(l.bp) }

// appendDuration appends d.String(). String is inlinable and its string stays on the stack
// here; a copy of its formatting that writes into b measured no faster (BenchmarkRequestLineDirect).
func appendDuration(b []byte, d time.Duration) []byte {
	return append(b, d.String()...)
}
