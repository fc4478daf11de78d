package conformance

import (
	"fmt"
	"reflect"
	"sort"
	"unicode/utf8"
)

// validateSchema checks v against the small JSON Schema subset the suite
// sends (type, properties, required, additionalProperties, enum, items,
// minLength, maxLength). A full validator would be a dependency for the sake
// of schemas we write ourselves; unknown keywords are ignored, never guessed.
func validateSchema(schema map[string]any, v any) error {
	return validateAt("$", schema, v)
}

func validateAt(path string, schema map[string]any, v any) error {
	if t, ok := schema["type"]; ok {
		if !typeMatches(t, v) {
			return fmt.Errorf("%s: want type %v, got %s", path, t, typeName(v))
		}
	}
	if enum, ok := schema["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if jsonEqual(e, v) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%s: %s is not one of %s", path, show(v), show(enum))
		}
	}
	if s, ok := v.(string); ok {
		n := utf8.RuneCountInString(s)
		if min, ok := schemaInt(schema["minLength"]); ok && n < min {
			return fmt.Errorf("%s: length %d < minLength %d", path, n, min)
		}
		if max, ok := schemaInt(schema["maxLength"]); ok && n > max {
			return fmt.Errorf("%s: length %d > maxLength %d", path, n, max)
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := schema["properties"].(map[string]any)
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				name, _ := r.(string)
				if _, ok := obj[name]; !ok {
					return fmt.Errorf("%s: required property %q missing", path, name)
				}
			}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, known := props[k].(map[string]any)
			if !known {
				if ap, ok := schema["additionalProperties"].(bool); ok && !ap {
					return fmt.Errorf("%s: property %q not allowed (additionalProperties false)", path, k)
				}
				continue
			}
			if err := validateAt(path+"."+k, sub, obj[k]); err != nil {
				return err
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := schema["items"].(map[string]any); ok {
			for i, e := range arr {
				if err := validateAt(fmt.Sprintf("%s[%d]", path, i), items, e); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func typeMatches(t any, v any) bool {
	switch tt := t.(type) {
	case string:
		return oneTypeMatches(tt, v)
	case []any:
		for _, e := range tt {
			if s, ok := e.(string); ok && oneTypeMatches(s, v) {
				return true
			}
		}
	}
	return false
}

func oneTypeMatches(t string, v any) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "integer":
		if _, ok := asInt(v); ok {
			return true
		}
		// 2.0 is an integer to JSON Schema.
		f, ok := asNumber(v)
		return ok && f == float64(int64(f))
	case "number":
		_, ok := asNumber(v)
		return ok
	}
	return false
}

func schemaInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case float64:
		return int(n), true
	}
	if i, ok := asInt(v); ok {
		return int(i), true
	}
	return 0, false
}

// jsonEqual compares a schema literal (Go values) with a decoded value
// (json.Number) by their JSON meaning.
func jsonEqual(a, b any) bool {
	if fa, ok := toFloat(a); ok {
		fb, ok := toFloat(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return asNumber(v)
}
