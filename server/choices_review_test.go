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

// A completions n is held to what a chat n is: an integer of at least 1, refused in OpenAI's
// words before anything is sent (0 and -1 went upstream as they were). An embeddings n, which
// OpenAI's embeddings do not have, is no concern of the gateway's: it goes on as it came.
func TestCompletionsNHeldAsChat(t *testing.T) {
	oai := newFake(t, "oai")
	g := newGateway(t, target("oai", oai.url(), "private")+"[routes.r]\ntargets = [\"oai\"]\n", nil)
	for _, tc := range []struct{ n, code string }{
		{"0", "integer_below_min_value"}, {"-1", "integer_below_min_value"}, {`"2"`, "invalid_type"}, {"2.5", "invalid_type"},
	} {
		rep := g.post(t, "/v1/completions", `{"model":"r","prompt":"x","n":`+tc.n+`}`)
		if rep.status != 400 || rep.errorField(t, "code") != tc.code || rep.errorField(t, "param") != "n" {
			t.Errorf("n %s: %d %s", tc.n, rep.status, rep.body)
		}
		chat := g.post(t, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"x"}],"n":`+tc.n+`}`)
		if chat.status != 400 || chat.errorField(t, "code") != tc.code {
			t.Errorf("chat n %s: %d %s, want the same refusal", tc.n, chat.status, chat.body)
		}
	}
	if oai.hits.Load() != 0 {
		t.Fatalf("the upstream was asked %d times", oai.hits.Load())
	}
	for _, n := range []string{"1", "null", "3"} {
		if rep := g.post(t, "/v1/completions", `{"model":"r","prompt":"x","n":`+n+`}`); rep.status != 200 {
			t.Errorf("n %s: %d %s", n, rep.status, rep.body)
		}
	}
	if rep := g.post(t, "/v1/embeddings", `{"model":"r","input":"x","n":"two"}`); rep.status != 200 {
		t.Errorf(`embeddings n "two": %d %s`, rep.status, rep.body)
	}
}
