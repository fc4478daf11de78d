package server

import (
	"encoding/json"
	"testing"
)

// structuredFormat reads response_format's type as the upstream does: escapes decoded, the last
// of duplicate members, a non-string type no JSON mode.
func TestStructuredFormat(t *testing.T) {
	for _, tc := range []struct {
		rf   string
		want bool
	}{
		{``, false},
		{`null`, false},
		{`{"type":"text"}`, false},
		{`{"type":"json_object"}`, true},
		{`{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"text"}}}`, true},
		{`{"json_schema":{"type":"text"},"type":"json_schema"}`, true},
		{`{"\u0074ype":"json_object"}`, true},
		{`{"type":"\u006a\u0073on_object"}`, true},
		{`{"type":1}`, false},
		{`{"type":null}`, false},
		{`{"type":"text","type":"json_object"}`, true},
		{`{"type":"json_object","type":"text"}`, false},
		{`{"type":"json_object","\u0074ype":"text"}`, false},
		{`{"Type":"json_object"}`, false},
	} {
		t.Run(tc.rf, func(t *testing.T) {
			if got := structuredFormat(json.RawMessage(tc.rf)); got != tc.want {
				t.Errorf("structuredFormat(%s) = %v, want %v", tc.rf, got, tc.want)
			}
			if tc.rf == "" || tc.rf == "null" {
				return
			}
			// The upstream's reading, where it is a Go struct: the last member counts.
			var rf struct {
				Type any `json:"type"`
			}
			if err := json.Unmarshal([]byte(tc.rf), &rf); err != nil {
				t.Fatal(err)
			}
			s, ok := rf.Type.(string)
			if tc.rf != `{"Type":"json_object"}` && (ok && s != "text") != tc.want {
				t.Errorf("encoding/json reads type %v; the filter's answer %v disagrees", rf.Type, tc.want)
			}
		})
	}
}
