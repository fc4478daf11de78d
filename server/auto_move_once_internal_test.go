package server

import (
	"bytes"
	"maps"
	"net/http/httptest"
	"os"
	"slices"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
)

// keepCounter is a filter that counts, by target and filter, what it is asked, and answers as
// the filter it wraps does.
type keepCounter struct {
	filter.Filter
	asked map[string]int // "target/filter"
}

func (k keepCounter) Keep(req *core.Request, t *core.Target) (bool, string) {
	k.asked[t.Name+"/"+k.Name()]++
	return k.Filter.Keep(req, t)
}

// TestAutoMoveJudgesEachTargetOnce: autoMove asks each filter of s.fits about each target it
// judges once. The route a request is classified to and moved off is judged once, its drops kept
// for the move's reason and explain as the judgement is made (they were asked for again, the
// same filters over the same targets); each route of the order is asked until a target passes,
// the one chosen included. The move itself is as before: from, reason and drops.
func TestAutoMoveJudgesEachTargetOnce(t *testing.T) {
	// deepseek-r1 and openrouter see no images, saif neither (nor takes tools); auto's default
	// rules send a reasoning question to deepseek-r1, and move it to saif, then averroes-q.
	toml := "listen = \"127.0.0.1:0\"\n"
	for _, tg := range [][2]string{{"saif", "private\"\ntools = false\nvision = false"}, {"averroes-q", "private\""},
		{"deepseek-r1", "private\"\nvision = false"}, {"openrouter", "public\"\nvision = false"}} {
		toml += "[targets." + tg[0] + "]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:9/v1\"\nclass = \"" + tg[1] + "\n"
	}
	toml += "[routes.saif]\ntargets = [\"saif\"]\n[routes.averroes-q]\ntargets = [\"averroes-q\", \"deepseek-r1\"]\n" +
		"[routes.deepseek-r1]\ntargets = [\"deepseek-r1\", \"openrouter\"]\n[auto]\n"
	cfg, err := config.Parse([]byte(toml), "gateway.toml", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	const reasoning = `"Explain step by step why the sum of two odd numbers is even, and prove it."`
	judged := func(names ...string) map[string]int {
		m := map[string]int{}
		for _, n := range names {
			m[n] = 1
		}
		return m
	}
	caps := func(target string, more ...string) []string {
		return append([]string{target + "/endpoint", target + "/choices", target + "/format", target + "/privacy"}, more...)
	}
	for _, tc := range []struct {
		name, body  string
		route, from string
		reason      string
		drops       []filter.Drop
		asked       map[string]int
	}{
		{"image moves deepseek-r1 to averroes-q",
			`{"model":"auto","messages":[{"role":"user","content":[{"type":"text","text":` + reasoning +
				`},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`,
			"averroes-q", "deepseek-r1", "vision",
			[]filter.Drop{{Target: "deepseek-r1", Filter: "vision", Reason: "request has images: target has no vision"},
				{Target: "openrouter", Filter: "vision", Reason: "request has images: target has no vision"}},
			judged(slices.Concat(caps("deepseek-r1", "deepseek-r1/vision"), caps("openrouter", "openrouter/vision"),
				caps("saif", "saif/vision"), caps("averroes-q", "averroes-q/vision", "averroes-q/tools", "averroes-q/context"))...)},
		{"tools kept on deepseek-r1",
			`{"model":"auto","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],` +
				`"messages":[{"role":"user","content":` + reasoning + `}]}`,
			"deepseek-r1", "", "", nil,
			judged(caps("deepseek-r1", "deepseek-r1/vision", "deepseek-r1/tools", "deepseek-r1/context")...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Options{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			asked := map[string]int{}
			for i := range s.fits {
				s.fits[i].Filter = keepCounter{Filter: s.fits[i].Filter, asked: asked}
			}
			r := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader([]byte(tc.body)))
			_, rs, pick, e := s.admit(r, core.OpChat, nil, false)
			if e != nil {
				t.Fatalf("%d %s", e.Status, e.Message)
			}
			from := ""
			if pick.from != nil {
				from = pick.from.Name
			}
			if rs.Name != tc.route || from != tc.from || pick.reason != tc.reason || !slices.Equal(pick.drops, tc.drops) {
				t.Errorf("route %s, from %q, reason %q, drops %q; want %s, %q, %q, %q",
					rs.Name, from, pick.reason, pick.drops, tc.route, tc.from, tc.reason, tc.drops)
			}
			if !maps.Equal(asked, tc.asked) {
				t.Errorf("filters asked %v\nwant %v", asked, tc.asked)
			}
		})
	}
}
