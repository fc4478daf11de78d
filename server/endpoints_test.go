package server_test

import (
	"fmt"
	"net/http"
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
