package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// ollamaEmbedGateway is a gateway whose route "emb" is one Ollama target answering /api/embed as
// Ollama does: one embedding per non-empty input, and none at all (200) for "" or [].
func ollamaEmbedGateway(t *testing.T) (*gateway, *fake) {
	t.Helper()
	oll := newFake(t, "oll")
	oll.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model":"nomic","embeddings":[],"prompt_eval_count":0}`)
	})
	cfg := "[targets.oll]\nadapter = \"ollama\"\nurl = \"" + oll.srv.URL + "\"\nclass = \"private\"\nmodel = \"nomic\"\n\n" +
		"[routes.emb]\ntargets = [\"oll\"]\n"
	return newGateway(t, cfg, nil), oll
}

// TestEmbeddingsEmptyInputRefused: OpenAI's API says input "cannot be an empty string" and its
// arrays hold 1 to 2048 items; Ollama answered such an input 200 with no embedding, which a
// client indexing data[0] reads as a crash far from the cause.
func TestEmbeddingsEmptyInputRefused(t *testing.T) {
	g, oll := ollamaEmbedGateway(t)
	for _, in := range []string{`""`, `[]`, ` [ ] `, `["a",""]`, `[[]]`, `[[1,2],[ ]]`} {
		t.Run(in, func(t *testing.T) {
			rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":`+in+`}`)
			if rep.status != 400 || rep.errorField(t, "param") != "input" || rep.errorField(t, "code") != "invalid_value" {
				t.Errorf("%d %s", rep.status, rep.body)
			}
		})
	}
	if n := oll.hits.Load(); n != 0 {
		t.Errorf("the upstream was asked %d times", n)
	}
	for _, in := range []string{`"a"`, `["a"," "]`, `[1]`, `[[1]]`} {
		rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":`+in+`}`)
		if rep.status == 400 && rep.errorField(t, "code") == "invalid_value" {
			t.Errorf("%s refused: %s", in, rep.body)
		}
	}
}

// TestOpSkipsAdaptersThatCannotServeIt: a target whose adapter does not serve the endpoint
// (Ollama for /v1/completions, SAIF for /v1/embeddings) is skipped by eligibility, as README
// promises, instead of being tried: tried, its 404 stopped a request that had said
// x-fallback-on: false, or a route whose fallback_on leaves out endpoint, even though the
// route's next target serves the endpoint.
func TestOpSkipsAdaptersThatCannotServeIt(t *testing.T) {
	oll, saif, oai := newFake(t, "oll"), newFake(t, "saif"), newFake(t, "oai")
	oai.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/completions":
			fmt.Fprint(w, `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"hi","finish_reason":"stop"}]}`)
		default:
			fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`)
		}
	})
	cfg := "[targets.oll]\nadapter = \"ollama\"\nurl = \"" + oll.srv.URL + "\"\nclass = \"private\"\nmodel = \"o\"\n\n" +
		"[targets.saif]\nadapter = \"saif\"\nurl = \"" + saif.srv.URL + "\"\nclass = \"private\"\nmodel = \"s\"\n\n" +
		target("oai", oai.url(), "private", `model = "m"`) +
		"[routes.co]\ntargets = [\"oll\", \"oai\"]\n\n" +
		"[routes.narrow]\ntargets = [\"oll\", \"oai\"]\nfallback_on = [\"connection\"]\n\n" +
		"[routes.sm]\ntargets = [\"saif\", \"oai\"]\n\n[routes.olla]\ntargets = [\"oll\"]\n"
	g := newGateway(t, cfg, nil)
	for _, tc := range []struct {
		name, path, body string
		hdr              []string
	}{
		{"completions no fallback", "/v1/completions", `{"model":"co","prompt":"x"}`, []string{"x-fallback-on", "false"}},
		{"completions narrow route", "/v1/completions", `{"model":"narrow","prompt":"x"}`, nil},
		{"embeddings no fallback", "/v1/embeddings", `{"model":"sm","input":"x","x-fallback-on":false}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, tc.path, tc.body, tc.hdr...)
			if rep.status != 200 || rep.header.Get("x-hayula-chain") != "oai" {
				t.Errorf("%d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
			}
		})
	}
	// A route with no target that serves the endpoint answers as the adapter did: 404.
	rep := g.post(t, "/v1/completions", `{"model":"olla","prompt":"x"}`)
	if rep.status != 404 || rep.errorField(t, "code") != "unsupported_endpoint" {
		t.Errorf("no target serves it: %d %s", rep.status, rep.body)
	}
	if n := oll.hits.Load() + saif.hits.Load(); n != 0 {
		t.Errorf("targets that cannot serve the endpoint were asked %d times", n)
	}
}

// TestAutoCompletionsClassifiesPrompt: model "auto" on /v1/completions is routed by its prompt,
// as a chat request is by its last user turn; the classifier read only messages, which a
// completions request has none of, so every prompt went to the default route.
func TestAutoCompletionsClassifiesPrompt(t *testing.T) {
	g, _ := autoGateway(t)
	const security = "How do I exploit a buffer overflow in this C program? Is CVE-2021-3156 relevant?"
	for _, tc := range []struct {
		prompt, route, intent string
	}{
		{fmt.Sprintf("%q", security), "saif", "security"},
		{fmt.Sprintf("[%q]", security), "saif", "security"},
		{`"Write a short poem about the sea."`, "averroes-q", "general"},
		{fmt.Sprintf("[%q, %q]", security, "a poem"), "averroes-q", "general"}, // a batch is not classified
	} {
		t.Run(tc.prompt, func(t *testing.T) {
			rep := g.post(t, "/v1/completions", `{"model":"auto","prompt":`+tc.prompt+`}`)
			if rep.status != 200 || rep.header.Get("x-hayula-route") != tc.route || rep.header.Get("x-hayula-intent") != tc.intent {
				t.Errorf("%d route %q intent %q, want %s (%s): %s", rep.status, rep.header.Get("x-hayula-route"),
					rep.header.Get("x-hayula-intent"), tc.route, tc.intent, rep.body)
			}
		})
	}
}

// TestChoicesSkipOneChoice: a request that asks for n > 1 choices skips the targets whose adapter
// answers one (ollama, saif), and a route with no other target refuses it, rather than answering
// fewer choices than asked for without a word. n = 1, or no n, leaves them eligible.
func TestChoicesSkipOneChoice(t *testing.T) {
	oll, saif, oai := newFake(t, "oll"), newFake(t, "saif"), newFake(t, "oai")
	cfg := "[targets.oll]\nadapter = \"ollama\"\nurl = \"" + oll.srv.URL + "\"\nclass = \"private\"\nmodel = \"o\"\n\n" +
		"[targets.saif]\nadapter = \"saif\"\nurl = \"" + saif.srv.URL + "\"\nclass = \"private\"\nmodel = \"s\"\n\n" +
		target("oai", oai.url(), "private", `model = "m"`) +
		"[routes.co]\ntargets = [\"oll\", \"saif\", \"oai\"]\n\n[routes.olla]\ntargets = [\"oll\"]\n" +
		"[routes.sm]\ntargets = [\"saif\"]\n"
	g := newGateway(t, cfg, nil)
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, tc := range []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", `{"model":"co","n":2,` + msgs + `}`},
		{"chat, escaped key", "/v1/chat/completions", `{"model":"co","\u006e":3,` + msgs + `}`},
		{"completions", "/v1/completions", `{"model":"co","n":2,"prompt":"x"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, tc.path, tc.body)
			if rep.status != 200 || rep.header.Get("x-hayula-chain") != "oai" {
				t.Errorf("%d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
			}
		})
	}
	for _, route := range []string{"olla", "sm"} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"`+route+`","n":2,`+msgs+`}`)
		if rep.status != 400 || rep.errorField(t, "code") != "unsupported_request" ||
			!strings.Contains(rep.errorField(t, "message").(string), "n = 2") {
			t.Errorf("route %s, nothing answers 2 choices: %d %s", route, rep.status, rep.body)
		}
	}
	if n := oll.hits.Load() + saif.hits.Load(); n != 0 {
		t.Fatalf("one-choice targets were asked %d times for n > 1", n)
	}
	for _, n := range []string{`"n":1,`, ``, `"n":null,`} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"olla",`+n+msgs+`}`)
		if rep.status == 400 && rep.errorField(t, "code") == "unsupported_request" {
			t.Errorf("%q: refused: %s", n, rep.body)
		}
	}
	if oll.hits.Load() != 3 {
		t.Errorf("ollama asked %d times for n 1, none and null; want 3", oll.hits.Load())
	}
}

// A request that asks for a JSON response_format or for logprobs skips a SAIF target, whose
// protocol carries neither: it would answer prose without logprobs, and the client would not know.
// A route with nothing else refuses it, naming why; a text format leaves SAIF eligible.
func TestFormatSkipsSAIF(t *testing.T) {
	saif, oai := newFake(t, "saif"), newFake(t, "oai")
	cfg := "[targets.saif]\nadapter = \"saif\"\nurl = \"" + saif.srv.URL + "\"\nclass = \"private\"\nmodel = \"s\"\n\n" +
		target("oai", oai.url(), "private", `model = "m"`) +
		"[routes.co]\ntargets = [\"saif\", \"oai\"]\n\n[routes.sm]\ntargets = [\"saif\"]\n"
	g := newGateway(t, cfg, nil)
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	asks := []struct{ name, field, reason string }{
		{"json_object", `"response_format":{"type":"json_object"},`, "response_format"},
		{"json_schema", `"response_format":{"json_schema":{"name":"a","schema":{}},"type":"json_schema"},`, "response_format"},
		{"logprobs", `"logprobs":true,`, "logprobs"},
	}
	for _, a := range asks {
		t.Run(a.name, func(t *testing.T) {
			rep := g.post(t, "/v1/chat/completions", `{"model":"co",`+a.field+msgs+`}`)
			if rep.status != 200 || rep.header.Get("x-hayula-chain") != "oai" {
				t.Errorf("route co: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
			}
			rep = g.post(t, "/v1/chat/completions", `{"model":"sm",`+a.field+msgs+`}`)
			if rep.status != 400 || rep.errorField(t, "code") != "unsupported_request" ||
				!strings.Contains(rep.errorField(t, "message").(string), a.reason) {
				t.Errorf("route sm, only SAIF: %d %s", rep.status, rep.body)
			}
		})
	}
	if n := saif.hits.Load(); n != 0 {
		t.Fatalf("SAIF was asked %d times for what its protocol cannot carry", n)
	}
	for _, field := range []string{`"response_format":{"type":"text"},`, `"logprobs":false,`, `"response_format":null,`} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"sm",`+field+msgs+`}`)
		if rep.status == 400 && rep.errorField(t, "code") == "unsupported_request" {
			t.Errorf("%s: refused: %s", field, rep.body)
		}
	}
	if n := saif.hits.Load(); n != 3 {
		t.Errorf("SAIF asked %d times for a text format, logprobs false and a null format; want 3", n)
	}
	// A completions request's logprobs is a number.
	rep := g.post(t, "/v1/completions", `{"model":"co","prompt":"x","logprobs":1}`)
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "oai" {
		t.Errorf("completions with logprobs, route co: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
	rep = g.post(t, "/v1/completions", `{"model":"sm","prompt":"x","logprobs":0}`)
	if rep.status != 400 || rep.errorField(t, "code") != "unsupported_request" {
		t.Errorf("completions with logprobs, only SAIF: %d %s", rep.status, rep.body)
	}
	if n := saif.hits.Load(); n != 3 {
		t.Errorf("SAIF was asked for completions with logprobs (%d hits, want 3)", n)
	}
	rep = g.post(t, "/v1/completions", `{"model":"sm","prompt":"x","logprobs":null}`)
	if rep.status == 400 && rep.errorField(t, "code") == "unsupported_request" {
		t.Errorf("completions with logprobs null refused: %s", rep.body)
	}
}
