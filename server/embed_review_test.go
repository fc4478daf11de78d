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

// ollamaEmbedder answers /api/embed as Ollama's EmbedHandler does: one embedding per input
// string, in the order given; 400 "invalid input type" for an item that is not a string; a
// vector of width values, cut to dimensions (and renormalised) only when 0 < dimensions < width
// and the server is new enough to read dimensions at all (honoursDims); prompt_eval_count the
// inputs' tokens, here one per byte.
type ollamaEmbedder struct {
	width       int
	honoursDims bool
}

// vector is the embedding of s: values a float32 holds exactly, but for the last, 0.1, which
// it does not (Ollama sends float32s, written as their shortest decimal).
func vector(s string, width int) []float32 {
	v := make([]float32, width)
	for j := range v {
		v[j] = float32(len(s)) + float32(j)/4
	}
	v[width-1] = 0.1
	return v
}

func (o ollamaEmbedder) handler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var req struct {
			Input      any `json:"input"`
			Dimensions int `json:"dimensions"`
		}
		if r.URL.Path != "/api/embed" || json.NewDecoder(r.Body).Decode(&req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"bad request"}`)
			return
		}
		var in []string
		switch v := req.Input.(type) {
		case string:
			in = []string{v}
		case []any:
			for _, x := range v {
				s, ok := x.(string)
				if !ok {
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprint(w, `{"error":"invalid input type"}`)
					return
				}
				in = append(in, s)
			}
		}
		out := make([][]float32, len(in))
		tokens := 0
		for i, s := range in {
			out[i] = vector(s, o.width)
			if o.honoursDims && req.Dimensions > 0 && req.Dimensions < o.width {
				out[i] = out[i][:req.Dimensions]
			}
			tokens += len(s)
		}
		b, _ := json.Marshal(map[string]any{"model": "nomic", "embeddings": out, "prompt_eval_count": tokens})
		_, _ = w.Write(b)
	}
}

// ollamaEmbedRoute is a gateway whose route "emb" is one Ollama target served by o.
func ollamaEmbedRoute(t *testing.T, o ollamaEmbedder) (*gateway, *fake) {
	t.Helper()
	oll := newFake(t, "oll")
	oll.set(o.handler())
	cfg := "[targets.oll]\nadapter = \"ollama\"\nurl = \"" + oll.srv.URL + "\"\nclass = \"private\"\nmodel = \"nomic\"\n\n" +
		"[routes.emb]\ntargets = [\"oll\"]\n"
	return newGateway(t, cfg, nil), oll
}

// TestEmbeddingsOllamaThroughSDK: openai-go, as an application uses it, through an Ollama
// target: float and base64 (the Python SDK's default, which it decodes itself) give the same
// float32 vectors, each at its input's index and in order, with usage from prompt_eval_count.
func TestEmbeddingsOllamaThroughSDK(t *testing.T) {
	g, _ := ollamaEmbedRoute(t, ollamaEmbedder{width: 5})
	c := sdkClient(g, "unused")
	inputs := []string{"a", "bbbb", "cc"}
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{"", "float", "base64"} {
		t.Run(string(format)+"-", func(t *testing.T) {
			res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb",
				Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs},
				EncodingFormat: format})
			if err != nil {
				t.Fatal(err)
			}
			if res.Object != "list" || len(res.Data) != len(inputs) || res.Usage.PromptTokens != 7 || res.Usage.TotalTokens != 7 {
				t.Fatalf("answer %s", res.RawJSON())
			}
			for i, d := range res.Data {
				want := vector(inputs[i], 5)
				if d.Index != int64(i) || d.Object != "embedding" || len(d.Embedding) != len(want) {
					t.Fatalf("item %d: %s", i, d.RawJSON())
				}
				for j, f := range d.Embedding {
					if float32(f) != want[j] {
						t.Fatalf("item %d value %d: %v, want %v", i, j, f, want[j])
					}
				}
				var raw any
				_ = json.Unmarshal([]byte(d.JSON.Embedding.Raw()), &raw)
				if _, isString := raw.(string); isString != (format == "base64") {
					t.Errorf("format %q: embedding sent as %s", format, d.JSON.Embedding.Raw())
				}
			}
		})
	}
	// The base64 string is exactly OpenAI's: the little-endian float32s.
	rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":"xy","encoding_format":"base64"}`)
	var body struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rep.body, &body); err != nil || len(body.Data) != 1 {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	want := make([]byte, 0, 20)
	for _, f := range vector("xy", 5) {
		want = binary.LittleEndian.AppendUint32(want, math.Float32bits(f))
	}
	if got := body.Data[0].Embedding; got != base64.StdEncoding.EncodeToString(want) {
		t.Errorf("base64 %s, want %s", got, base64.StdEncoding.EncodeToString(want))
	}
}

// TestEmbeddingsOllamaRefusesTokens: Ollama embeds text only; token ids are refused with a 400
// naming input (the target is skipped, and a route with nothing else has nothing to serve them),
// never sent on to be embedded as the digits' text. Inputs of no shape OpenAI takes are refused
// before any target, naming input.
func TestEmbeddingsOllamaRefusesTokens(t *testing.T) {
	g, oll := ollamaEmbedRoute(t, ollamaEmbedder{width: 3})
	c := sdkClient(g, "unused")
	for name, in := range map[string]openai.EmbeddingNewParamsInputUnion{
		"tokens":       {OfArrayOfTokens: []int64{1, 2, 3}},
		"token arrays": {OfArrayOfTokenArrays: [][]int64{{1, 2}, {3}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb", Input: in})
			var ae *openai.Error
			if !asAPIError(err, &ae) || ae.StatusCode != 400 || ae.Code != "unsupported_request" ||
				!strings.Contains(ae.Message, "input as token ids") || ae.Type != "invalid_request_error" {
				t.Fatalf("error %v", err)
			}
		})
	}
	for _, in := range []string{`["a",1]`, `[["a"]]`, `{"text":"a"}`, `5`} {
		rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":`+in+`}`)
		if rep.status != 400 || rep.errorField(t, "param") != "input" {
			t.Errorf("%s: %d %s", in, rep.status, rep.body)
		}
	}
	if n := oll.hits.Load(); n != 0 {
		t.Errorf("Ollama was asked %d times", n)
	}
}

func asAPIError(err error, ae **openai.Error) bool {
	e, ok := err.(*openai.Error)
	if ok {
		*ae = e
	}
	return ok
}

// TestEmbeddingsInputsAtMost2048: OpenAI's API holds an input array to 2048 items (of strings,
// or of token arrays) and refuses more with a 400; the gateway does so for every adapter, before
// a target is asked (Ollama would embed them all, and a batch that large is a client's bug).
func TestEmbeddingsInputsAtMost2048(t *testing.T) {
	g, oll := ollamaEmbedRoute(t, ollamaEmbedder{width: 2})
	many := func(n int, item string) string {
		return `{"model":"emb","input":[` + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + `]}`
	}
	for _, body := range []string{many(2049, `"a"`), many(2049, `[1]`), many(5000, `"a"`)} {
		rep := g.post(t, "/v1/embeddings", body)
		if rep.status != 400 || rep.errorField(t, "param") != "input" || rep.errorField(t, "code") != "array_above_max_length" {
			t.Errorf("%d %.200s", rep.status, rep.body)
		}
	}
	if n := oll.hits.Load(); n != 0 {
		t.Errorf("Ollama was asked %d times", n)
	}
	if rep := g.post(t, "/v1/embeddings", many(2048, `"a"`)); rep.status != 200 {
		t.Errorf("2048 inputs: %d %.300s", rep.status, rep.body)
	}
	// A single token array is one input, however long.
	if rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":[`+strings.TrimSuffix(strings.Repeat("1,", 3000), ",")+`]}`); rep.status == 400 && rep.errorField(t, "code") == "array_above_max_length" {
		t.Errorf("3000 tokens refused as too many inputs: %s", rep.body)
	}
}

// TestEmbeddingsDimensions: dimensions goes on to /api/embed; a vector of another width (an
// Ollama older than dimensions, or one asked for more than the model has, answers at the
// model's own width) is refused with a 400 naming dimensions, never passed off as what was asked.
// A dimensions or encoding_format of the wrong type or value is refused before any target is.
func TestEmbeddingsDimensions(t *testing.T) {
	t.Run("honoured", func(t *testing.T) {
		g, oll := ollamaEmbedRoute(t, ollamaEmbedder{width: 8, honoursDims: true})
		c := sdkClient(g, "unused")
		res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}, Dimensions: param.NewOpt[int64](4),
			EncodingFormat: "base64"})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range res.Data {
			if len(d.Embedding) != 4 {
				t.Errorf("width %d", len(d.Embedding))
			}
		}
		if d := oll.lastBody(t)["dimensions"]; d != 4.0 {
			t.Errorf("dimensions sent %v", d)
		}
	})
	for name, o := range map[string]ollamaEmbedder{
		"more than the model has": {width: 8, honoursDims: true},
		"ignored":                 {width: 8},
	} {
		t.Run(name, func(t *testing.T) {
			g, _ := ollamaEmbedRoute(t, o)
			dims := 4
			if o.honoursDims {
				dims = 16
			}
			rep := g.post(t, "/v1/embeddings", fmt.Sprintf(`{"model":"emb","input":"a","dimensions":%d}`, dims))
			if rep.status != 400 || rep.errorField(t, "param") != "dimensions" || rep.errorField(t, "type") != "invalid_request_error" {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, "8") {
				t.Errorf("message does not say the width it has: %s", msg)
			}
		})
	}
	t.Run("refused before a target", func(t *testing.T) {
		g, oll := ollamaEmbedRoute(t, ollamaEmbedder{width: 8, honoursDims: true})
		for _, tc := range []struct{ field, value string }{
			{"dimensions", `"4"`}, {"dimensions", `4.5`}, {"dimensions", `0`}, {"dimensions", `-3`}, {"dimensions", `[4]`},
			{"encoding_format", `"float32"`}, {"encoding_format", `1`}, {"encoding_format", `"BASE64"`},
		} {
			rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":"a","`+tc.field+`":`+tc.value+`}`)
			if rep.status != 400 || rep.errorField(t, "param") != tc.field {
				t.Errorf("%s %s: %d %s", tc.field, tc.value, rep.status, rep.body)
			}
		}
		// The ollama adapter's decoder would read these as the fields; an upstream's does not.
		for _, folded := range []string{`"Dimensions":4`, `"ENCODING_FORMAT":"base64"`} {
			rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":"a",`+folded+`}`)
			if rep.status != 400 || rep.errorField(t, "code") != "unknown_parameter" {
				t.Errorf("%s: %d %s", folded, rep.status, rep.body)
			}
		}
		if n := oll.hits.Load(); n != 0 {
			t.Errorf("Ollama was asked %d times", n)
		}
		for _, ok := range []string{`"dimensions":null`, `"encoding_format":null`, `"encoding_format":"float"`} {
			if rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":"a",`+ok+`}`); rep.status != 200 {
				t.Errorf("%s: %d %s", ok, rep.status, rep.body)
			}
		}
	})
}

// TestEmbeddingsOllamaNoSilentTruncation: Ollama's /api/embed cuts an input longer than the
// window to fit unless asked not to (truncate: false), and embeds the start of a document as if
// it were the whole; OpenAI refuses such an input. The gateway asks Ollama not to, and the
// overflow Ollama answers falls through to a target with a larger window.
func TestEmbeddingsOllamaNoSilentTruncation(t *testing.T) {
	oll, big := newFake(t, "oll"), newFake(t, "big")
	oll.set(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Truncate *bool `json:"truncate"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		if req.Truncate == nil || *req.Truncate {
			fmt.Fprint(w, `{"model":"nomic","embeddings":[[0.5,0.5]],"prompt_eval_count":2048}`) // the start only
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"the input length exceeds the context length"}`)
	})
	cfg := "[targets.oll]\nadapter = \"ollama\"\nurl = \"" + oll.srv.URL + "\"\nclass = \"private\"\nmodel = \"nomic\"\n\n" +
		target("big", big.url(), "private", `model = "big-embed"`) + "[routes.emb]\ntargets = [\"oll\", \"big\"]\n\n" +
		"[routes.small]\ntargets = [\"oll\"]\n"
	g := newGateway(t, cfg, nil)
	if rep := g.post(t, "/v1/embeddings", `{"model":"small","input":"a very long document"}`); rep.status != 400 ||
		!strings.Contains(fmt.Sprint(rep.errorField(t, "message")), "exceeds the context length") {
		t.Errorf("no larger target: %d %s", rep.status, rep.body)
	}
	rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":"a very long document"}`)
	if rep.status != 200 || big.hits.Load() != 1 {
		t.Fatalf("%d (big asked %d times) %s", rep.status, big.hits.Load(), rep.body)
	}
	if tr, ok := oll.lastBody(t)["truncate"]; !ok || tr != false {
		t.Errorf("truncate sent: %v (present %v)", tr, ok)
	}
}

// TestEmbeddingsOllamaCountMismatch: an /api/embed answer with fewer (or more) embeddings than
// inputs cannot say which input each belongs to; passed on, a client zipping inputs with data
// would pair texts with the wrong vectors. It is the target's failure, class endpoint, as
// through an openai target (TestEmbeddingsOllamaCountMismatchIsEndpoint).
func TestEmbeddingsOllamaCountMismatch(t *testing.T) {
	oll := newFake(t, "oll")
	oll.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model":"nomic","embeddings":[[0.5,0.5]],"prompt_eval_count":2}`)
	})
	cfg := "[targets.oll]\nadapter = \"ollama\"\nurl = \"" + oll.srv.URL + "\"\nclass = \"private\"\nmodel = \"nomic\"\n\n" +
		"[routes.emb]\ntargets = [\"oll\"]\n"
	g := newGateway(t, cfg, nil)
	if rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":["a","b"]}`); rep.status != http.StatusBadGateway {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	if rep := g.post(t, "/v1/embeddings", `{"model":"emb","input":["a"]}`); rep.status != 200 {
		t.Fatalf("one input: %d %s", rep.status, rep.body)
	}
}

// TestEmbeddingsOpenAIPassesThrough: an openai target gets encoding_format and dimensions as the
// client sent them, and its answer (a base64 string included) reaches the client as it came.
func TestEmbeddingsOpenAIPassesThrough(t *testing.T) {
	up := newFake(t, "oai")
	const answer = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AACAPwAAAMA="}],"model":"text-embedding-3-small","usage":{"prompt_tokens":1,"total_tokens":1}}`
	up.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, answer)
	})
	g := newGateway(t, target("oai", up.url(), "private", `model = "text-embedding-3-small"`)+"[routes.emb]\ntargets = [\"oai\"]\n", nil)
	c := sdkClient(g, "unused")
	res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: param.NewOpt("x")}, Dimensions: param.NewOpt[int64](2),
		EncodingFormat: "base64"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 1 || len(res.Data[0].Embedding) != 2 || res.Data[0].Embedding[0] != 1 || res.Data[0].Embedding[1] != -2 {
		t.Fatalf("answer %s", res.RawJSON())
	}
	sent := up.lastBody(t)
	if sent["encoding_format"] != "base64" || sent["dimensions"] != 2.0 || sent["model"] != "text-embedding-3-small" {
		t.Errorf("sent %v", sent)
	}
}
