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
// (call Enabled first, as slog.Logger does), nothing is added by WithAttrs or WithGroup (those
// return another handler, which is not a *Text), and a method's key is written as it is: it must
// be one slog would not quote (not empty; no space, '=', '"', control character or byte above
// 0x7e), as the caller's constants are. (A record's keys, which Handle writes, are checked and
// quoted where slog would quote them.)
type Line struct {
	h  *Text
	bp *[]byte
}

// Line starts a line with t (left out when zero, as slog does), level and msg, in a buffer from
// the handler's pool.
func (h *Text) Line(t time.Time, level slog.Level, msg string) Line {
	return Line{h: h, bp: h.start(t, level, msg)}
}

// key appends " key=", key as it is (see Line).
func (l Line) key(key string) []byte {
	b := append(*l.bp, ' ')
	b = append(b, key...)
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
	*l.bp = appendInt(l.key(key), v)
	return l
}

// appendInt is strconv.AppendInt(b, v, 10), three digits (an HTTP status) written directly.
func appendInt(b []byte, v int64) []byte {
	if v >= 100 && v <= 999 {
		return append(b, byte('0'+v/100), byte('0'+v/10%10), byte('0'+v%10))
	}
	return strconv.AppendInt(b, v, 10)
}

// Uint appends key=v, as slog.Uint64(key, v).
func (l Line) Uint(key string, v uint64) Line {
	*l.bp = strconv.AppendUint(l.key(key), v, 10)
	return l
}

// Float appends key=v, as slog.Float64(key, v).
func (l Line) Float(key string, v float64) Line {
	*l.bp = appendFloat(l.key(key), v)
	return l
}

// appendFloat is how slog writes a float64.
func appendFloat(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'g', -1, 64) }

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

// attr appends a, of a kind lineKind accepts, with its key quoted when slog would quote it.
func (l Line) attr(a slog.Attr) Line {
	b := appendString(append(*l.bp, ' '), a.Key)
	b = append(b, '=')
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		b = appendString(b, v.String())
	case slog.KindInt64:
		b = appendInt(b, v.Int64())
	case slog.KindUint64:
		b = strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		b = appendFloat(b, v.Float64())
	case slog.KindBool:
		b = strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		b = appendDuration(b, v.Duration())
	default:
		panic("logfmt: no Line method for " + a.Value.Kind().String())
	}
	*l.bp = b
	return l
}

// Write ends the line with a newline and writes it to the handler's writer under the handler's
// lock, in one Write; the buffer goes back to the pool.
func (l Line) Write() error { return l.h.finish(l.bp) }

// appendDuration appends d.String(). A request's duration, under a second, is written here:
// String's general formatting (fractions of any unit, hours and minutes, the sign) cost some 550
// instructions of a request line's 2,200 (BenchmarkRequestLineDirect under callgrind), and the
// string it returns is copied; this costs about a tenth (TestAppendDurationAgrees holds it to
// String).
func appendDuration(b []byte, d time.Duration) []byte {
	if d <= 0 || d >= time.Second {
		return append(b, d.String()...)
	}
	u := uint64(d)
	unit, digits, scale := "ns", 0, uint64(1)
	switch {
	case u >= 1e6:
		unit, digits, scale = "ms", 6, 1e6
	case u >= 1e3:
		unit, digits, scale = "µs", 3, 1e3
	}
	whole, frac := u/scale, u%scale
	switch { // below a thousand, not zero
	case whole >= 100:
		b = append(b, byte('0'+whole/100), byte('0'+whole/10%10), byte('0'+whole%10))
	case whole >= 10:
		b = append(b, byte('0'+whole/10), byte('0'+whole%10))
	default:
		b = append(b, byte('0'+whole))
	}
	if frac != 0 {
		for frac%10 == 0 { // String writes no trailing zero
			frac /= 10
			digits--
		}
		b = append(b, '.')
		n := len(b)
		b = append(b, "000000"[:digits]...)
		for i := n + digits - 1; frac != 0; i-- {
			b[i] = byte('0' + frac%10)
			frac /= 10
		}
	}
	return append(b, unit...)
}
