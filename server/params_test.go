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

// TestOpenAIOnlyParamsSkipTranslators: logit_bias with entries, and modalities asking for audio,
// are what only an OpenAI-protocol target can honour: Ollama's /api/chat
// and SAIF have neither, and the adapters dropped them, so the client got tokens it had banned,
// or a text answer with no audio, without a word. Such a request now skips those targets, as n
// above 1 does; a route with nothing else refuses it naming the field. An empty logit_bias and
// text-only modalities ask for nothing and leave them eligible.
func TestOpenAIOnlyParamsSkipTranslators(t *testing.T) {
	oll, saif, oai := newFake(t, "oll"), newFake(t, "saif"), newFake(t, "oai")
	cfg := "[targets.oll]\nadapter = \"ollama\"\nurl = \"" + oll.srv.URL + "\"\nclass = \"private\"\nmodel = \"o\"\n\n" +
		"[targets.saif]\nadapter = \"saif\"\nurl = \"" + saif.srv.URL + "\"\nclass = \"private\"\nmodel = \"s\"\n\n" +
		target("oai", oai.url(), "private", `model = "m"`) +
		"[routes.co]\ntargets = [\"oll\", \"saif\", \"oai\"]\n\n[routes.olla]\ntargets = [\"oll\"]\n\n[routes.sm]\ntargets = [\"saif\"]\n"
	g := newGateway(t, cfg, nil)
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, a := range []struct{ name, field, reason string }{
		{"logit_bias", `"logit_bias":{"50256":-100},`, "logit_bias"},
		{"audio modality", `"modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"},`, "modalities"},
	} {
		t.Run(a.name, func(t *testing.T) {
			rep := g.post(t, "/v1/chat/completions", `{"model":"co",`+a.field+msgs+`}`)
			if rep.status != 200 || rep.header.Get("x-hayula-chain") != "oai" {
				t.Errorf("route co: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
			}
			for _, route := range []string{"olla", "sm"} {
				rep = g.post(t, "/v1/chat/completions", `{"model":"`+route+`",`+a.field+msgs+`}`)
				if rep.status != 400 || rep.errorField(t, "code") != "unsupported_request" ||
					!strings.Contains(rep.errorField(t, "message").(string), a.reason) {
					t.Errorf("route %s: %d %s", route, rep.status, rep.body)
				}
			}
		})
	}
	if n := oll.hits.Load() + saif.hits.Load(); n != 0 {
		t.Fatalf("the translating targets were asked %d times", n)
	}
	for _, field := range []string{`"logit_bias":{},`, `"logit_bias":null,`, `"modalities":["text"],`, `"modalities":null,"audio":null,`} {
		for _, f := range []*fake{oll, saif} {
			// The fakes answer in OpenAI's shape, which neither adapter reads: reaching them is
			// what counts.
			before := f.hits.Load()
			route := map[*fake]string{oll: "olla", saif: "sm"}[f]
			rep := g.post(t, "/v1/chat/completions", `{"model":"`+route+`",`+field+msgs+`}`)
			if rep.status == 400 || f.hits.Load() == before {
				t.Errorf("route %s, %s: %d %s", route, field, rep.status, rep.body)
			}
		}
	}
}

// An image by http(s) URL: Ollama's adapter cannot fetch it and refused it 400, which ended the
// route although a later target (an OpenAI one, which fetches it) could serve it. The Ollama
// target is skipped instead; a route of Ollama targets alone still refuses it, naming the field.
// An image inside a data: URL still goes to Ollama.
func TestRemoteImageSkipsOllama(t *testing.T) {
	oll, oai := newFake(t, "oll"), newFake(t, "oai")
	cfg := "[targets.oll]\nadapter = \"ollama\"\nurl = \"" + oll.srv.URL + "\"\nclass = \"private\"\nmodel = \"o\"\n\n" +
		target("oai", oai.url(), "private", `model = "m"`) +
		"[routes.co]\ntargets = [\"oll\", \"oai\"]\n\n[routes.olla]\ntargets = [\"oll\"]\n"
	g := newGateway(t, cfg, nil)
	img := func(url string) string {
		return `"messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},` +
			`{"type":"image_url","image_url":{"url":"` + url + `"}}]}]`
	}
	for _, url := range []string{"https://example.com/cat.png", "HTTP://example.com/cat.png"} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"co",`+img(url)+`}`)
		if rep.status != 200 || rep.header.Get("x-hayula-chain") != "oai" {
			t.Errorf("%s on route co: %d chain %q: %s", url, rep.status, rep.header.Get("x-hayula-chain"), rep.body)
		}
		rep = g.post(t, "/v1/chat/completions", `{"model":"olla",`+img(url)+`}`)
		if rep.status != 400 || !strings.Contains(rep.errorField(t, "message").(string), "image_url") {
			t.Errorf("%s on route olla: %d %s", url, rep.status, rep.body)
		}
	}
	if n := oll.hits.Load(); n != 0 {
		t.Fatalf("ollama was asked %d times for an image it cannot fetch", n)
	}
	rep := g.post(t, "/v1/chat/completions", `{"model":"co",`+img("data:image/png;base64,iVBORw0KGgo=")+`}`)
	if oll.hits.Load() != 1 {
		t.Errorf("a data: URL image did not go to ollama: %d %s", rep.status, rep.body)
	}
}
