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
	short, good := newFake(t, "short"), newFake(t, "good")
	// short embeds the first input alone, as a server that takes no batch does.
	const one = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`
	short.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, one)
	})
	good.set(openaiEmbedder{width: 2}.handler())
	cfg := target("short", short.url(), "private") + target("good", good.url(), "private") +
		"[routes.only]\ntargets = [\"short\"]\n\n[routes.emb]\ntargets = [\"short\", \"good\"]\n"
	g := newGateway(t, cfg, nil)

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
			rep := g.post(t, "/v1/embeddings", `{"model":"only","input":`+tc.input+`}`)
			if tc.inputs == 1 {
				if rep.status != 200 || string(rep.body) != one {
					t.Fatalf("a right answer is not relayed as it came: %d %s", rep.status, rep.body)
				}
				return
			}
			if rep.status != http.StatusBadGateway {
				t.Fatalf("1 embedding for %d inputs: %d %s", tc.inputs, rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, fmt.Sprintf("1 embedding for %d inputs", tc.inputs)) {
				t.Errorf("the 502 does not say what was wrong: %s", msg)
			}
			if code, _ := rep.errorField(t, "code").(string); code != "bad_upstream_response" {
				t.Errorf("code %q", code)
			}
			rep = g.post(t, "/v1/embeddings", `{"model":"emb","input":`+tc.input+`}`)
			if rep.status != 200 || rep.header.Get("x-hayula-chain") != "short→good (served by good)" {
				t.Fatalf("the chain did not move on: %d %s %q", rep.status, rep.body, rep.header.Get("x-hayula-chain"))
			}
		})
	}
	if st := g.srv.Health().Snapshot(mustTarget(t, g, "short")); st.Failures != 0 || st.Cooling {
		t.Errorf("a target that embeds one input at a time is not unwell: %+v", st)
	}
}

// TestEmbeddingsOllamaCountMismatchIsEndpoint: an ollama target whose /api/embed answers fewer
// embeddings than inputs fails as an openai target's does, class endpoint: the target may serve
// one input at a time and is not unwell, so it is neither retried (max_retries) nor blamed, the
// chain moves on, and alone it is the 502 bad_upstream_response that says how many came for how
// many inputs. (This test failed first: it was a broken answer, class server_error, retried and
// counted toward the target's cooldown.)
func TestEmbeddingsOllamaCountMismatchIsEndpoint(t *testing.T) {
	short, good := newFake(t, "short"), newFake(t, "good")
	short.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model":"nomic","embeddings":[[0.5,0.25]],"prompt_eval_count":2}`)
	})
	good.set(openaiEmbedder{width: 2}.handler())
	cfg := "[targets.short]\nadapter = \"ollama\"\nurl = \"" + short.srv.URL + "\"\nclass = \"private\"\nmodel = \"nomic\"\nmax_retries = 2\n\n" +
		target("good", good.url(), "private") +
		"[routes.only]\ntargets = [\"short\"]\n\n[routes.emb]\ntargets = [\"short\", \"good\"]\n"
	g := newGateway(t, cfg, nil)

	rep := g.post(t, "/v1/embeddings", `{"model":"only","input":["a","b"]}`)
	if rep.status != http.StatusBadGateway {
		t.Fatalf("1 embedding for 2 inputs: %d %s", rep.status, rep.body)
	}
	if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, "1 embedding for 2 inputs") {
		t.Errorf("the 502 does not say what was wrong: %s", msg)
	}
	if code, _ := rep.errorField(t, "code").(string); code != "bad_upstream_response" {
		t.Errorf("code %q", code)
	}
	if n := short.hits.Load(); n != 1 {
		t.Errorf("a target that embeds one input at a time was asked %d times: retried", n)
	}
	rep = g.post(t, "/v1/embeddings", `{"model":"emb","input":["a","b"]}`)
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "short→good (served by good)" {
		t.Fatalf("the chain did not move on: %d %s %q", rep.status, rep.body, rep.header.Get("x-hayula-chain"))
	}
	if st := g.srv.Health().Snapshot(mustTarget(t, g, "short")); st.Failures != 0 || st.Cooling {
		t.Errorf("a target that embeds one input at a time is not unwell: %+v", st)
	}
}

// TestEmbeddingsOpenAIEmptyDataIsCountMismatch: an openai target whose embeddings answer has a
// `data` list with nothing in it answers none of the inputs, as an ollama target's empty
// `embeddings` list does, and is judged so: a count mismatch (0 embeddings for 2 inputs), class
// endpoint, the chain moving on without blaming the target, alone a 502 saying how many came.
// It was a broken answer (class server_error) where the ollama adapter's was a count mismatch.
// A `data` member that is missing, or no array, is still a broken answer.
func TestEmbeddingsOpenAIEmptyDataIsCountMismatch(t *testing.T) {
	empty, good := newFake(t, "empty"), newFake(t, "good")
	empty.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[ ],"model":"m","usage":{"prompt_tokens":0,"total_tokens":0}}`)
	})
	good.set(openaiEmbedder{width: 2}.handler())
	cfg := target("empty", empty.url(), "private") + target("good", good.url(), "private") +
		"[routes.only]\ntargets = [\"empty\"]\n\n[routes.emb]\ntargets = [\"empty\", \"good\"]\n"
	g := newGateway(t, cfg, nil)
	rep := g.post(t, "/v1/embeddings", `{"model":"only","input":["a","b"]}`)
	if rep.status != http.StatusBadGateway {
		t.Fatalf("an empty data list: %d %s", rep.status, rep.body)
	}
	if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, "0 embeddings for 2 inputs") {
		t.Errorf("the 502 does not say what was wrong: %s", msg)
	}
	rep = g.post(t, "/v1/embeddings", `{"model":"emb","input":["a","b"]}`)
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "empty→good (served by good)" {
		t.Fatalf("the chain did not move on: %d %s %q", rep.status, rep.body, rep.header.Get("x-hayula-chain"))
	}
	if st := g.srv.Health().Snapshot(mustTarget(t, g, "empty")); st.Failures != 0 || st.Cooling {
		t.Errorf("a target that embeds nothing of a batch is blamed as unwell: %+v", st)
	}
}
