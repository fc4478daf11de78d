package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

var errNotUTF8 = errors.New("not valid UTF-8, which JSON requires (RFC 8259 section 8.1)")

// Responses are decoded into generic values (with json.Number) rather than
// structs because the checks must tell "absent" from "null" from "wrong type",
// and "3" from "3.0" for integer fields; typed decoding would hide all three.

func decodeJSON(b []byte) (any, error) {
	// RFC 8259 requires UTF-8 between systems. encoding/json would replace
	// a bad byte with U+FFFD and hide it; strict clients reject the text.
	if !utf8.Valid(b) {
		return nil, errNotUTF8
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	// Decoder.More is no test for the end: it answers false before a "}"
	// or "]", so `{...}}` would pass. After the value only JSON's own
	// whitespace may follow (bytes.TrimSpace knows more).
	if rest := bytes.TrimLeft(b[d.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("trailing data after JSON value: %q", clip(string(rest), 20))
	}
	return v, nil
}

func asObject(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok
}

func asArray(v any) ([]any, bool) {
	a, ok := v.([]any)
	return a, ok
}

// asInt accepts only integer literals: 1700000000 but not 1700000000.5 or
// 1.7e9, because the reference types these fields as integers.
func asInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE") {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

func asNumber(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// at walks objects by string keys and arrays by int indexes.
func at(v any, path ...any) (any, bool) {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			a, ok := v.([]any)
			if !ok || k < 0 || k >= len(a) {
				return nil, false
			}
			v = a[k]
		default:
			return nil, false
		}
	}
	return v, true
}

// isNullish is true for an absent key (ok=false) or an explicit null.
func isNullish(v any, ok bool) bool { return !ok || v == nil }

// show renders a value for evidence, short enough for a table cell.
func show(v any) string {
	if v == nil {
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return clip(string(b), 160)
}

// brief renders an object for evidence beside the member at fault: members
// in key order, an array of more than four values summed up as its length
// ([…1024 items], so an embedding is never quoted number by number), a long
// string cut to its first bytes and its length, a nested value clipped, the
// whole at most 160 bytes.
func brief(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		v := show(m[k])
		switch x := m[k].(type) {
		case []any:
			if len(x) > 4 {
				v = fmt.Sprintf("[…%d items]", len(x))
			}
		case string:
			if len(x) > 40 {
				// Its first runes, and how long it is: a base64 vector
				// shows what it is without being quoted.
				n := 16
				for n > 0 && !utf8.RuneStart(x[n]) {
					n--
				}
				v = fmt.Sprintf("%s…(%d bytes)", show(x[:n]), len(x))
			}
		}
		fmt.Fprintf(&b, "%q:%s", k, clip(v, 60))
	}
	b.WriteString("}")
	return clip(b.String(), 160)
}

// showField renders a possibly absent field.
func showField(v any, ok bool) string {
	if !ok {
		return "absent"
	}
	return show(v)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
