package conformance

import (
	"testing"
)

func TestValidateSchema(t *testing.T) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"ok":   map[string]any{"type": "boolean"},
			"city": map[string]any{"type": "string", "enum": []any{"Paris", "Tokyo"}},
			"n":    map[string]any{"type": "integer"},
			"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string", "maxLength": 3}},
		},
		"required":             []any{"ok"},
		"additionalProperties": false,
	}
	tests := []struct {
		doc     string
		wantErr bool
	}{
		{`{"ok": true}`, false},
		{`{"ok": false, "city": "Tokyo", "n": 3, "tags": ["a", "bcd"]}`, false},
		{`{"ok": true, "n": 2.0}`, false},
		{`{}`, true},
		{`{"ok": "yes"}`, true},
		{`{"ok": true, "extra": 1}`, true},
		{`{"ok": true, "city": "Rome"}`, true},
		{`{"ok": true, "n": 2.5}`, true},
		{`{"ok": true, "tags": ["long"]}`, true},
		{`[{"ok": true}]`, true},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			v, err := decodeJSON([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := validateSchema(schema, v); (err != nil) != tt.wantErr {
				t.Errorf("validateSchema(%s) = %v, want error %v", tt.doc, err, tt.wantErr)
			}
		})
	}
}

// FuzzValidateSchema holds validateSchema to the answer schema's meaning, which is short
// enough to say again here: an object whose one property is a boolean "ok". It only looked for
// a panic, and passed with a validator that accepted anything.
func FuzzValidateSchema(f *testing.F) {
	for _, s := range []string{`{"ok": true}`, `{"ok": 1e400}`, `[]`, `null`, `{"ok": true, "x": {"y": []}}`,
		`{"ok": "true"}`, `{}`, `{"x": true}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		v, err := decodeJSON([]byte(doc))
		if err != nil {
			return
		}
		obj, isObj := v.(map[string]any)
		_, isBool := obj["ok"].(bool)
		want := isObj && len(obj) == 1 && isBool
		if err := validateSchema(answerSchema(), v); (err == nil) != want {
			t.Errorf("validateSchema(%s) = %v, want valid %v", doc, err, want)
		}
	})
}

func TestAsInt(t *testing.T) {
	tests := []struct {
		doc    string
		wantOK bool
	}{{"1750000000", true}, {"-3", true}, {"1.0", false}, {"1e3", false}, {`"1"`, false}, {"null", false}}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			v, err := decodeJSON([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := asInt(v); ok != tt.wantOK {
				t.Errorf("asInt(%s) ok = %v, want %v", tt.doc, ok, tt.wantOK)
			}
		})
	}
}
