package server

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

// TestReadOptionsEachSource: each of the nine places an option can come from (its header, the
// body's member as the decoder kept it, the body's other spellings) applies it alone, and a
// request that sends none leaves no hint behind.
func TestReadOptionsEachSource(t *testing.T) {
	type applied struct {
		NoFallback, Strict bool
		RouteHint          string
	}
	cases := []struct {
		name   string
		header [2]string
		w      wireView
		opts   bodyOptions
		want   applied
	}{
		{name: "none"},
		{name: "fallback header", header: [2]string{hdrOptFallback, "false"}, want: applied{NoFallback: true}},
		{name: "fallback member", w: wireView{Fallback: json.RawMessage(`false`)}, want: applied{NoFallback: true}},
		{name: "fallback spelled otherwise", opts: bodyOptions{fallback: []json.RawMessage{json.RawMessage(`"false"`)}},
			want: applied{NoFallback: true}},
		{name: "privacy header", header: [2]string{hdrOptPrivacy, "strict"}, want: applied{Strict: true}},
		{name: "privacy member", w: wireView{Privacy: opt[string]{V: "strict", Set: true}}, want: applied{Strict: true}},
		{name: "privacy spelled otherwise", opts: bodyOptions{privacy: []string{"strict"}}, want: applied{Strict: true}},
		{name: "hint header", header: [2]string{hdrOptHint, "code"}, want: applied{RouteHint: "code"}},
		{name: "hint member", w: wireView{Hint: opt[string]{V: "code", Set: true}}, want: applied{RouteHint: "code"}},
		{name: "hint spelled otherwise", opts: bodyOptions{hint: []string{"code"}}, want: applied{RouteHint: "code"}},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
		if c.header[0] != "" {
			r.Header.Set(c.header[0], c.header[1])
		}
		req := core.Request{RouteHint: "left from before"}
		if e := readOptions(r, &c.w, c.opts, &req); e != nil {
			t.Errorf("%s: %v", c.name, e)
			continue
		}
		got := applied{NoFallback: req.NoFallback, Strict: req.Strict, RouteHint: req.RouteHint}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}
