package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestEmbeddingsOpenAICountMismatch: an openai target's embeddings answer with more or fewer
// items in data than the request sent inputs cannot say which input each belongs to, and a
// client pairing inputs with data by index would pair texts with the wrong vectors. It is the
// target's failure, class endpoint as a wrong width is: the chain moves on, the target is not
// benched, and when nothing else answers the client gets a 502 that says so. A good answer is
// relayed byte for byte. (This test failed first: the short answer reached the client as 200.)
func TestEmbeddingsOpenAICountMismatch(t *testing.T) {
	// short embeds the first input alone, as a server that takes no batch does.
	one := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`
	g, _ := embedBehind(t, "short", false, &one)

	for _, tc := range []struct {
		name, input string
		inputs      int // 1: short's answer is right
	}{
		{"a string", `"a"`, 1},
		{"one string in an array", `["a"]`, 1},
		{"token ids are one input", `[1,2,3]`, 1},
		{"two strings", `["a","b"]`, 2},
		{"two token arrays", `[[1,2],[3]]`, 2},
		{"three strings", `["a","b","c"]`, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"only","input":` + tc.input + `}`
			if tc.inputs == 1 {
				if rep := g.post(t, "/v1/embeddings", body); rep.status != 200 || string(rep.body) != one {
					t.Fatalf("a right answer is not relayed as it came: %d %s", rep.status, rep.body)
				}
				return
			}
			failsAndMovesOn(t, g, "short", body, fmt.Sprintf("1 embedding for %d inputs", tc.inputs))
		})
	}
	notBenched(t, g, "short", "a target that embeds one input at a time is not unwell")
}

// TestEmbeddingsOllamaCountMismatchIsEndpoint: an ollama target whose /api/embed answers fewer
// embeddings than inputs fails as an openai target's does, class endpoint: the target may serve
// one input at a time and is not unwell, so it is neither retried (max_retries) nor blamed, the
// chain moves on, and alone it is the 502 bad_upstream_response that says how many came for how
// many inputs. (This test failed first: it was a broken answer, class server_error, retried and
// counted toward the target's cooldown.)
func TestEmbeddingsOllamaCountMismatchIsEndpoint(t *testing.T) {
	answer := `{"model":"nomic","embeddings":[[0.5,0.25]],"prompt_eval_count":2}`
	g, short := embedBehind(t, "short", true, &answer)
	failsAndMovesOn(t, g, "short", `{"model":"only","input":["a","b"]}`, "1 embedding for 2 inputs")
	if n := short.hits.Load(); n != 2 {
		t.Errorf("a target that embeds one input at a time was asked %d times for 2 requests: retried", n)
	}
	notBenched(t, g, "short", "a target that embeds one input at a time is not unwell")
}

// TestEmbeddingsOpenAIEmptyDataIsCountMismatch: an openai target whose embeddings answer has a
// `data` list with nothing in it answers none of the inputs, as an ollama target's empty
// `embeddings` list does, and is judged so: a count mismatch (0 embeddings for 2 inputs), class
// endpoint, the chain moving on without blaming the target, alone a 502 saying how many came.
// It was a broken answer (class server_error) where the ollama adapter's was a count mismatch.
// A `data` member that is missing, or no array, is still a broken answer.
func TestEmbeddingsOpenAIEmptyDataIsCountMismatch(t *testing.T) {
	answer := `{"object":"list","data":[ ],"model":"m","usage":{"prompt_tokens":0,"total_tokens":0}}`
	g, _ := embedBehind(t, "empty", false, &answer)
	failsAndMovesOn(t, g, "empty", `{"model":"only","input":["a","b"]}`, "0 embeddings for 2 inputs")
	notBenched(t, g, "empty", "a target that embeds nothing of a batch is blamed as unwell")
}

// embedBehind is a gateway in front of two embedding targets: name, whose every answer is the
// JSON *answer holds when it is asked (a test may change it between requests), and good, an
// openai target that embeds well (openaiEmbedder). name is an openai target, or with ollama an
// ollama one (model nomic, max_retries 2, so that a retry would show in its hits). Route only
// is name alone; route emb is name, then good.
func embedBehind(t *testing.T, name string, ollama bool, answer *string) (*gateway, *fake) {
	t.Helper()
	bad, good := newFake(t, name), newFake(t, "good")
	bad.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, *answer)
	})
	good.set(openaiEmbedder{width: 2}.handler())
	first := target(name, bad.url(), "private")
	if ollama {
		first = "[targets." + name + "]\nadapter = \"ollama\"\nurl = \"" + bad.srv.URL + "\"\nclass = \"private\"\nmodel = \"nomic\"\nmax_retries = 2\n\n"
	}
	cfg := first + target("good", good.url(), "private") +
		"[routes.only]\ntargets = [\"" + name + "\"]\n\n[routes.emb]\ntargets = [\"" + name + "\", \"good\"]\n"
	return newGateway(t, cfg, nil), bad
}

// failsAndMovesOn: body, whose model is "only", is answered 502 bad_upstream_response with a
// message that holds says; sent to route emb instead, the chain moves on from name (an
// embedBehind target) to good. It returns the 502's message.
func failsAndMovesOn(t *testing.T, g *gateway, name, body, says string) string {
	t.Helper()
	rep := g.post(t, "/v1/embeddings", body)
	if rep.status != http.StatusBadGateway {
		t.Fatalf("status %d, want 502: %s", rep.status, rep.body)
	}
	msg, _ := rep.errorField(t, "message").(string)
	if !strings.Contains(msg, says) {
		t.Errorf("the 502 does not say what was wrong (%s): %s", says, msg)
	}
	if code, _ := rep.errorField(t, "code").(string); code != "bad_upstream_response" {
		t.Errorf("code %q", code)
	}
	rep = g.post(t, "/v1/embeddings", strings.Replace(body, `"only"`, `"emb"`, 1))
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != name+"→good (served by good)" {
		t.Fatalf("the chain did not move on: %d %s %q", rep.status, rep.body, rep.header.Get("x-hayula-chain"))
	}
	return msg
}

// notBenched: target name has no failure counted and is not cooling down; why says what it
// would mean.
func notBenched(t *testing.T, g *gateway, name, why string) {
	t.Helper()
	if st := g.srv.Health().Snapshot(mustTarget(t, g, name)); st.Failures != 0 || st.Cooling {
		t.Errorf("%s: %+v", why, st)
	}
}
