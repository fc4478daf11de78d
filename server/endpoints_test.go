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
