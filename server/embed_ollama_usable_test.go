package server_test

import (
	"testing"
)

// TestEmbeddingsOllamaUnusableEmbedding: an ollama target whose /api/embed answers an embedding a
// client cannot read (null, [], a vector per token, an array with a non-number in it, an object,
// a string, or for base64 a number no float32 holds), or no embedding at all for the input it was
// sent, fails as an openai target's answer does (TestEmbeddingsOpenAIUnusableEmbedding,
// TestEmbeddingsOpenAICountMismatch): class endpoint, so it is neither retried (max_retries) nor
// counted toward a cooldown, the chain moves on, and alone it is a 502 bad_upstream_response that
// names the item. (This test failed first: each was a broken answer, class server_error, retried
// and counted toward the target's cooldown.)
func TestEmbeddingsOllamaUnusableEmbedding(t *testing.T) {
	var answer string
	g, bad := embedBehind(t, "bad", true, &answer)
	asked := 0
	for _, tc := range []struct {
		name, format, embeddings, says string // says: what the 502's message holds
	}{
		{"null", "float", `[0.5,0.25],null`, "embeddings[1]"},
		{"an empty array", "float", `[],[0.5,0.25]`, "embeddings[0]"},
		{"a vector per token", "float", `[[0.5],[0.25]],[0.5,0.25]`, "embeddings[0]"},
		{"a string in the vector", "base64", `[0.5,0.25],["0.5"]`, "embeddings[1]"},
		{"a null in the vector", "float", `[0.5,null],[0.5,0.25]`, "embeddings[0]"},
		{"an object", "float", `{"v":[0.5]},[0.5,0.25]`, "embeddings[0]"},
		{"a string", "base64", `"AAAAPw==",[0.5,0.25]`, "embeddings[0]"},
		{"beyond a float32", "base64", `[0.5,0.25],[1e39,0]`, "embeddings[1]"},
		{"none", "float", ``, "0 embeddings for 2 inputs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer = `{"model":"nomic","embeddings":[` + tc.embeddings + `],"prompt_eval_count":2}`
			body := `{"model":"only","input":["a","b"],"encoding_format":"` + tc.format + `"}`
			failsAndMovesOn(t, g, "bad", body, tc.says)
			asked += 2
			if n := bad.hits.Load(); n != int64(asked) {
				t.Errorf("bad asked %d times for %d requests: retried", n, asked)
			}
			notBenched(t, g, "bad", "a target that answers no usable embedding is benched")
		})
	}
}
