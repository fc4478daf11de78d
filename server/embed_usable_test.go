package server_test

import (
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
	var answer string
	g, bad := embedBehind(t, "bad", false, &answer)
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
			if tc.item == "" {
				if rep := g.post(t, "/v1/embeddings", body); rep.status != 200 || string(rep.body) != answer {
					t.Fatalf("a usable answer is not relayed as it came: %d %s", rep.status, rep.body)
				}
				return
			}
			if msg := failsAndMovesOn(t, g, "bad", body, tc.item); !strings.Contains(msg, "embedding") {
				t.Errorf("the 502 does not say what was wrong (%s): %s", tc.item, msg)
			}
		})
	}
	notBenched(t, g, "bad", "a target that answers no usable embedding is benched")
	if n := bad.hits.Load(); n != 2*9+3 {
		t.Errorf("bad asked %d times, want %d: a target whose answer holds no usable embedding is retried", n, 2*9+3)
	}
}
