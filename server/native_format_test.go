package server_test

import (
	"strings"
	"testing"
)

// TestOllamaFormatSkipsSAIF: Ollama's own top-level format, "json" or a schema, which the ollama
// adapter sends as /api/chat's format, asks for JSON as a JSON response_format does; SAIF's
// protocol cannot carry either, and a SAIF target answered prose to it. It now skips a SAIF target
// as response_format does (TestFormatSkipsSAIF), and a route with nothing else refuses it naming
// format; "" and null, no format to Ollama, leave SAIF eligible, as does another string, which the
// ollama adapter refuses and an openai target reads as it likes (the filter drops only when
// certain). The last member of the name counts, as every decoder reads it, whichever way the body
// is decoded (an escaped key sends it to encoding/json).
func TestOllamaFormatSkipsSAIF(t *testing.T) {
	saif, oai := newFake(t, "saif"), newFake(t, "oai")
	cfg := "[targets.saif]\nadapter = \"saif\"\nurl = \"" + saif.srv.URL + "\"\nclass = \"private\"\nmodel = \"s\"\n\n" +
		target("oai", oai.url(), "private", `model = "m"`) +
		"[routes.co]\ntargets = [\"saif\", \"oai\"]\n\n[routes.sm]\ntargets = [\"saif\"]\n"
	g := newGateway(t, cfg, nil)
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, field := range []string{`"format":"json",`, `"format":{"type":"object","properties":{"a":{"type":"string"}}},`,
		`"response_format":{"type":"text"},"format":"json",`, `"format":null,"format":"json",`, `"form\u0061t":"json",`,
		`"x-route-hint":"","format":"json",`} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"co",`+field+msgs+`}`)
		if rep.status != 200 || rep.header.Get("x-hayula-chain") != "oai" {
			t.Errorf("%s route co: %d chain %q: %s", field, rep.status, rep.header.Get("x-hayula-chain"), rep.body)
		}
		rep = g.post(t, "/v1/chat/completions", `{"model":"sm",`+field+msgs+`}`)
		if rep.status != 400 || rep.errorField(t, "code") != "unsupported_request" ||
			!strings.Contains(rep.errorField(t, "message").(string), "format") {
			t.Errorf("%s route sm, only SAIF: %d %s", field, rep.status, rep.body)
		}
	}
	if n := saif.hits.Load(); n != 0 {
		t.Fatalf("SAIF was asked %d times for a JSON format", n)
	}
	noFormat := []string{`"format":"",`, `"format":null,`, `"format":"json","format":null,`, `"format":"yaml",`}
	for _, field := range noFormat {
		rep := g.post(t, "/v1/chat/completions", `{"model":"sm",`+field+msgs+`}`)
		if rep.status == 400 && rep.errorField(t, "code") == "unsupported_request" {
			t.Errorf("%s: refused: %s", field, rep.body)
		}
	}
	if n := saif.hits.Load(); n != int64(len(noFormat)) {
		t.Errorf("SAIF asked %d times for no JSON format; want %d", n, len(noFormat))
	}
}
