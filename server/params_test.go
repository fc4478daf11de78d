package server_test

import (
	"strings"
	"testing"
)

// TestStopElementsAreStrings: a stop array holding something other than strings is refused
// naming the element, as OpenAI refuses it. Before, it passed the kind check (an array), an
// OpenAI-compatible upstream refused it in its own words, and the ollama and saif adapters read
// no list out of it and sent no stop at all, "a" included: the answer ran past where the client
// asked it to stop.
func TestStopElementsAreStrings(t *testing.T) {
	oll := newFake(t, "oll")
	g := newGateway(t, "[targets.oll]\nadapter = \"ollama\"\nurl = \""+oll.srv.URL+"\"\nclass = \"private\"\nmodel = \"o\"\n\n"+
		"[routes.r]\ntargets = [\"oll\"]\n", nil)
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, tt := range []struct{ stop, param, got string }{
		{`["a",5]`, "stop[1]", "an integer"},
		{`[null]`, "stop[0]", "null"},
		{`["a",["b"]]`, "stop[1]", "an array"},
		{`[{"s":1}]`, "stop[0]", "an object"},
	} {
		t.Run(tt.stop, func(t *testing.T) {
			for _, body := range []string{
				`{"model":"r","stop":` + tt.stop + `,` + msgs + `}`,
				`{"model":"r","st\u006fp":` + tt.stop + `,` + msgs + `}`, // encoding/json's path
			} {
				rep := g.post(t, "/v1/chat/completions", body)
				if rep.status != 400 || rep.errorField(t, "param") != tt.param || rep.errorField(t, "code") != "invalid_type" ||
					!strings.Contains(rep.errorField(t, "message").(string), tt.got) {
					t.Errorf("%s: %d %s", body, rep.status, rep.body)
				}
			}
		})
	}
	if n := oll.hits.Load(); n != 0 {
		t.Fatalf("the upstream was asked %d times", n)
	}
	// The fake answers in OpenAI's shape, which the ollama adapter cannot read: reaching it is
	// what counts.
	for _, stop := range []string{`"a"`, `["a","b"]`, `[]`, `null`} {
		before := oll.hits.Load()
		rep := g.post(t, "/v1/chat/completions", `{"model":"r","stop":`+stop+`,`+msgs+`}`)
		if rep.status == 400 || oll.hits.Load() == before {
			t.Errorf("stop %s: %d %s", stop, rep.status, rep.body)
		}
	}
}
