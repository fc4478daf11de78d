package server_test

import (
	"fmt"
	"net/http"
	"testing"
)

// An n beyond int64 is still an integer above 1 (the kinds check lets it through): the request
// asks for more choices than an ollama or saif target answers, and must skip them as n = 2 does.
func TestChoicesHugeNSkipsOneChoice(t *testing.T) {
	oll := newFake(t, "oll")
	g := newGateway(t, "[targets.oll]\nadapter = \"ollama\"\nurl = \""+oll.srv.URL+"\"\nclass = \"private\"\nmodel = \"o\"\n\n"+
		"[routes.olla]\ntargets = [\"oll\"]\n", nil)
	for _, n := range []string{"99999999999999999999", "9223372036854775808", "1000000000000000000000000000000"} {
		t.Run(n, func(t *testing.T) {
			rep := g.post(t, "/v1/chat/completions", `{"model":"olla","n":`+n+`,"messages":[{"role":"user","content":"x"}]}`)
			if rep.status != 400 || rep.errorField(t, "code") != "unsupported_request" {
				t.Errorf("%d %s", rep.status, rep.body)
			}
		})
	}
	if oll.hits.Load() != 0 {
		t.Errorf("ollama asked %d times for a huge n", oll.hits.Load())
	}
}

// Embeddings have no choices: an "n" in an embeddings body (a client's shared defaults) asks for
// nothing an Ollama target cannot give, and must not skip it.
func TestEmbeddingsNIsNoChoices(t *testing.T) {
	g, oll := ollamaEmbedGateway(t)
	oll.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model":"nomic","embeddings":[[0.1,0.2]],"prompt_eval_count":1}`)
	})
	rep := g.post(t, "/v1/embeddings", `{"model":"emb","n":2,"input":"a"}`)
	if rep.status != 200 || oll.hits.Load() != 1 {
		t.Errorf("%d, ollama asked %d times: %s", rep.status, oll.hits.Load(), rep.body)
	}
}
