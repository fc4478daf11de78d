package upstream

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzOllamaEmbedMatchesUnmarshal holds decodeOllamaEmbed to json.Unmarshal, which read every
// /api/embed answer before: the same fields for any answer, and an error for the same ones.
func FuzzOllamaEmbedMatchesUnmarshal(f *testing.F) {
	for _, a := range []string{
		`{"model":"nomic","embeddings":[[0.1,-0.2,3e-5],[1,2]],"total_duration":1,"prompt_eval_count":9}`,
		`{"model":"m","embeddings":[]}`, `{"embeddings":null}`, `{"embeddings":[[1]],"embeddings":[[2],[3]]}`,
		`{"Embeddings":[[1]]}`, `{"model":null,"prompt_eval_count":null}`, `{"prompt_eval_count":1.5}`,
		`{"embeddings":[null,"x",{"a":1},[ 1 , 2 ]]}`, `{"model":"\u00e9\xff","embeddings":[[1]]} `, `{"embeddings":[[1]]} x`,
		`{"embeddings":[[1],]}`, `[[1]]`, `null`, `{"embeddings":{"a":[1]}}`, `{"m\u006fdel":"x"}`, `{"embeddings":[[1e999]]}`,
	} {
		f.Add([]byte(a))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want ollamaEmbedAnswer
		wantErr := json.Unmarshal(raw, &want)
		got, err := decodeOllamaEmbed(raw)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, json.Unmarshal's %v", raw, err, wantErr)
		}
		if err != nil {
			return
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q (-json.Unmarshal +decodeOllamaEmbed):\n%s", raw, diff)
		}
	})
}

// FuzzEmbeddingsListMatchesEncoding holds appendEmbeddingsList to mustJSON's bytes for the same
// list, which the adapter wrote before: vectors with and without white space, base64 strings,
// other kinds, an empty embedding, a model with escapes, usage or none.
func FuzzEmbeddingsListMatchesEncoding(f *testing.F) {
	f.Add([]byte(`[0.1,-2e-7,3]`), []byte(`"AACAPw=="`), "nomic<&>\u2028", 7, uint8(3))
	f.Add([]byte("[ 1,\n2 ]"), []byte(`"a\u2028 b"`), "", 0, uint8(0))
	f.Add([]byte(`null`), []byte(`{"a" : [1, "x y"]}`), "\xff", -1, uint8(1))
	f.Fuzz(func(t *testing.T, e1, e2 []byte, model string, tokens int, flags uint8) {
		if !json.Valid(e1) || !json.Valid(e2) {
			return // every embedding comes from a validated answer
		}
		data := []embeddingItem{{Object: "embedding", Index: 0, Embedding: e1}, {Object: "embedding", Index: 1, Embedding: e2}}
		if flags&1 != 0 {
			data[1].Embedding = nil
		}
		if flags&4 != 0 {
			data = nil
		}
		var u *embeddingsUsage
		if flags&2 != 0 {
			u = &embeddingsUsage{tokens, tokens}
		}
		want := mustJSON(struct {
			Object string           `json:"object"`
			Data   []embeddingItem  `json:"data"`
			Model  string           `json:"model"`
			Usage  *embeddingsUsage `json:"usage,omitempty"`
		}{"list", data, model, u})
		if got := appendEmbeddingsList([]byte("x"), data, model, u)[1:]; !bytes.Equal(got, want) {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
	})
}
