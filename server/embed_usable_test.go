package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestEmbeddingsOpenAIUnusableEmbedding: an openai target's embeddings answer whose data items
// hold no usable embedding (null, none at all, an empty array, a vector per token, a string where
// floats were asked) is the target's failure as a wrong count is: class endpoint, the chain moves
// on without benching the target, and alone it is a 502 bad_upstream_response that names the
// item. An embedding is an array of numbers, or a base64 string when encoding_format is base64.
// (This test failed first: without dimensions, such an answer reached the client as 200.)
func TestEmbeddingsOpenAIUnusableEmbedding(t *testing.T) {
	bad, good := newFake(t, "bad"), newFake(t, "good")
	var answer string
	bad.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, answer)
	})
	good.set(openaiEmbedder{width: 2}.handler())
	cfg := target("bad", bad.url(), "private") + target("good", good.url(), "private") +
		"[routes.only]\ntargets = [\"bad\"]\n\n[routes.emb]\ntargets = [\"bad\", \"good\"]\n"
	g := newGateway(t, cfg, nil)
	const tail = `],"model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}`
	for _, tc := range []struct {
		name, format, data, item string // item: the data[i] the 502 names; "" = relayed as it came
	}{
		{"null embeddings", "", `{"object":"embedding","index":0,"embedding":null},{"object":"embedding","index":1,"embedding":null}`, "data[0]"},
		{"one null", "", `{"index":0,"embedding":[0.5,0.25]},{"index":1,"embedding":null}`, "data[1]"},
		{"no embedding member", "", `{"index":0,"embedding":[0.5,0.25]},{"index":1}`, "data[1]"},
		{"an empty array", "", `{"index":0,"embedding":[]},{"index":1,"embedding":[1]}`, "data[0]"},
		{"a vector per token", "", `{"index":0,"embedding":[[1,2],[3,4]]},{"index":1,"embedding":[1,2]}`, "data[0]"},
		{"an item that is no object", "", `null,{"index":1,"embedding":[1,2]}`, "data[0]"},
		{"a string where floats were asked", "", `{"index":0,"embedding":"AACAPwAAAMA="},{"index":1,"embedding":"AACAPwAAAMA="}`, "data[0]"},
		{"a string where float was said", `,"encoding_format":"float"`, `{"index":0,"embedding":[1,2]},{"index":1,"embedding":"AACAPwAAAMA="}`, "data[1]"},
		{"an empty string", `,"encoding_format":"base64"`, `{"index":0,"embedding":""},{"index":1,"embedding":"AACAPwAAAMA="}`, "data[0]"},
		{"base64 strings", `,"encoding_format":"base64"`, `{"index":0,"embedding":"AACAPwAAAMA="},{"index":1,"embedding":"AACAPwAAAMA="}`, ""},
		{"arrays when base64 was asked", `,"encoding_format":"base64"`, `{"index":0,"embedding":[1,2]},{"index":1,"embedding":[-0.5,3e-2]}`, ""},
		{"arrays", "", `{"index":0,"embedding":[ 1,2]},{"index":1,"embedding":[-0.5,3e-2]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer = `{"object":"list","data":[` + tc.data + tail
			body := `{"model":"only","input":["a","b"]` + tc.format + `}`
			rep := g.post(t, "/v1/embeddings", body)
			if tc.item == "" {
				if rep.status != 200 || string(rep.body) != answer {
					t.Fatalf("a usable answer is not relayed as it came: %d %s", rep.status, rep.body)
				}
				return
			}
			if rep.status != http.StatusBadGateway {
				t.Fatalf("status %d, want 502: %s", rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, tc.item) || !strings.Contains(msg, "embedding") {
				t.Errorf("the 502 does not say what was wrong (%s): %s", tc.item, msg)
			}
			if code, _ := rep.errorField(t, "code").(string); code != "bad_upstream_response" {
				t.Errorf("code %q", code)
			}
			rep = g.post(t, "/v1/embeddings", strings.Replace(body, `"only"`, `"emb"`, 1))
			if rep.status != 200 || rep.header.Get("x-hayula-chain") != "bad→good (served by good)" {
				t.Fatalf("the chain did not move on: %d %s %q", rep.status, rep.body, rep.header.Get("x-hayula-chain"))
			}
		})
	}
	if st := g.srv.Health().Snapshot(mustTarget(t, g, "bad")); st.Failures != 0 || st.Cooling {
		t.Errorf("a target that answers no usable embedding is benched: %+v", st)
	}
	if n := bad.hits.Load(); n != 2*9+3 {
		t.Errorf("bad asked %d times, want %d: a target whose answer holds no usable embedding is retried", n, 2*9+3)
	}
}
