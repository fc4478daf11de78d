package server_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
)

// openaiEmbedder answers /v1/embeddings as an OpenAI-compatible server does: one embedding per
// input string, floats or (encoding_format "base64") little-endian float32s; of width values,
// cut to dimensions only when it honours the field (honoursDims), as a server that ignores
// dimensions (llama-server, older vLLM and TEI builds) does not.
type openaiEmbedder struct {
	width       int
	honoursDims bool
}

func (o openaiEmbedder) handler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input          any    `json:"input"`
			Dimensions     int    `json:"dimensions"`
			EncodingFormat string `json:"encoding_format"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		in := []string{fmt.Sprint(req.Input)}
		if many, ok := req.Input.([]any); ok {
			in = in[:0]
			for _, s := range many {
				in = append(in, fmt.Sprint(s))
			}
		}
		type item struct {
			Object    string `json:"object"`
			Index     int    `json:"index"`
			Embedding any    `json:"embedding"`
		}
		data := make([]item, len(in))
		for i, s := range in {
			v := vector(s, o.width)
			if o.honoursDims && req.Dimensions > 0 && req.Dimensions < o.width {
				v = v[:req.Dimensions]
			}
			data[i] = item{Object: "embedding", Index: i, Embedding: v}
			if req.EncodingFormat == "base64" {
				b := make([]byte, 0, 4*len(v))
				for _, f := range v {
					b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
				}
				data[i].Embedding = base64.StdEncoding.EncodeToString(b)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "m",
			"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
	}
}

// TestEmbeddingsOpenAIDimensions: an openai target whose vectors are not of the width the
// request's dimensions asked for (a server that ignores the field) is not passed off as what
// was asked. As through Ollama, it is that target's failure, class endpoint: the chain moves on
// to a target that gives the width, the target's health is not blamed, and when nothing else
// answers the client gets a 400 unsupported_value naming dimensions and the width the target
// gives. A request without dimensions is passed through as it came.
func TestEmbeddingsOpenAIDimensions(t *testing.T) {
	wide, good := newFake(t, "wide"), newFake(t, "good")
	wide.set(openaiEmbedder{width: 8}.handler())
	good.set(openaiEmbedder{width: 8, honoursDims: true}.handler())
	cfg := target("wide", wide.url(), "private") + target("good", good.url(), "private") +
		"[routes.only]\ntargets = [\"wide\"]\n\n[routes.emb]\ntargets = [\"wide\", \"good\"]\n"
	g := newGateway(t, cfg, nil)
	c := sdkClient(g, "unused")

	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{"float", "base64"} {
		t.Run(string(format), func(t *testing.T) {
			body := fmt.Sprintf(`{"model":"only","input":["a","bb"],"dimensions":4,"encoding_format":%q}`, format)
			rep := g.post(t, "/v1/embeddings", body)
			if rep.status != 400 || rep.errorField(t, "param") != "dimensions" || rep.errorField(t, "code") != "unsupported_value" ||
				rep.errorField(t, "type") != "invalid_request_error" {
				t.Fatalf("nothing else answers: %d %s", rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, "8") {
				t.Errorf("message does not say the width the target gives: %s", msg)
			}

			before := good.hits.Load()
			res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb",
				Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "bb"}},
				Dimensions: param.NewOpt[int64](4), EncodingFormat: format})
			if err != nil {
				t.Fatal(err)
			}
			if good.hits.Load() != before+1 {
				t.Errorf("the chain did not move on to good")
			}
			for _, d := range res.Data {
				if len(d.Embedding) != 4 {
					t.Errorf("width %d, want 4", len(d.Embedding))
				}
			}
		})
	}
	rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":"a","dimensions":4}`)
	if chain := rep.header.Get("x-hayula-chain"); chain != "wide→good (served by good)" {
		t.Errorf("chain %q", chain)
	}
	if st := g.srv.Health().Snapshot(mustTarget(t, g, "wide")); st.Failures != 0 || st.Cooling {
		t.Errorf("a target that ignores dimensions is not unwell: %+v", st)
	}
	_, lines := scrape(t, g)
	if want := `hayula_upstream_attempts_total{target="wide",result="endpoint"} 5`; !lines[want] {
		t.Errorf("wide's attempts are not counted as endpoint failures (want %s)", want)
	}

	// The width asked for, and no dimensions at all: as it came.
	if rep := g.post(t, "/v1/embeddings", `{"model":"only","input":"a","dimensions":8}`); rep.status != 200 {
		t.Errorf("dimensions 8 of 8: %d %s", rep.status, rep.body)
	}
	wide.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,2,3]}],"model":"m"}`)
	})
	if rep := g.post(t, "/v1/embeddings", `{"model":"only","input":"a"}`); rep.status != 200 ||
		string(rep.body) != `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,2,3]}],"model":"m"}` {
		t.Errorf("without dimensions: %d %s", rep.status, rep.body)
	}
	// An embedding whose width cannot be told is a broken answer when a width was asked for.
	wide.set(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":null}],"model":"m"}`)
	})
	if rep := g.post(t, "/v1/embeddings", `{"model":"only","input":"a","dimensions":4}`); rep.status != http.StatusBadGateway {
		t.Errorf("an embedding of no width: %d %s", rep.status, rep.body)
	}
}

// TestEmbeddingsOllamaDimensionsFallThrough: through Ollama too, a vector of another width than
// asked is the target's failure, not the request's: the chain moves on to one that gives it.
func TestEmbeddingsOllamaDimensionsFallThrough(t *testing.T) {
	oll, good := newFake(t, "oll"), newFake(t, "good")
	oll.set(ollamaEmbedder{width: 8}.handler())
	good.set(openaiEmbedder{width: 8, honoursDims: true}.handler())
	cfg := "[targets.oll]\nadapter = \"ollama\"\nurl = \"" + oll.srv.URL + "\"\nclass = \"private\"\nmodel = \"nomic\"\n\n" +
		target("good", good.url(), "private") + "[routes.emb]\ntargets = [\"oll\", \"good\"]\n"
	g := newGateway(t, cfg, nil)
	rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":"a","dimensions":4}`)
	if rep.status != 200 || rep.header.Get("x-hayula-chain") != "oll→good (served by good)" {
		t.Fatalf("%d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
	if st := g.srv.Health().Snapshot(mustTarget(t, g, "oll")); st.Failures != 0 {
		t.Errorf("an Ollama that ignores dimensions is not unwell: %+v", st)
	}
}
