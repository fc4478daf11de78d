package conformance

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBrief(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want string
	}{
		{"short members as they are", map[string]any{"index": json.Number("1"), "object": "embedding", "e": []any{json.Number("1")}},
			`{"e":[1],"index":1,"object":"embedding"}`},
		{"a long array as its length", map[string]any{"embedding": make([]any, 1024)}, `{"embedding":[…1024 items]}`},
		{"a long string as its first bytes and its length", map[string]any{"s": strings.Repeat("A", 100)},
			`{"s":"AAAAAAAAAAAAAAAA"…(100 bytes)}`},
		{"cut on a rune boundary", map[string]any{"s": "x" + strings.Repeat("é", 30)},
			`{"s":"xééééééé"…(61 bytes)}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := brief(tt.in)
			if got != tt.want {
				t.Errorf("brief = %s, want %s", got, tt.want)
			}
			if !utf8.ValidString(got) || len(got) > 160+len("…") {
				t.Errorf("brief = %q: not UTF-8, or longer than 160 bytes", got)
			}
		})
	}
}
