package conformance

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hayula/gateway/conformance/conformancetest"
)

// ollamaLike is a fake whose /v1/models lists ids in that order and whose /v1/embeddings
// refuses every model but fake-embed as Ollama refuses a model that does not embed (400); it
// returns the models the embeddings requests named, sorted, once each.
func ollamaLike(t *testing.T, ids []string) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	embedded := map[string]bool{}
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
		return answerEdit{next: h, edit: func(path, req string, hd http.Header, s int, b string) (int, string) {
			switch path {
			case "/v1/models":
				var data []any
				for _, id := range ids {
					data = append(data, map[string]any{"id": id, "object": "model", "created": conformancetest.Created, "owned_by": "library"})
				}
				out, _ := json.Marshal(map[string]any{"object": "list", "data": data})
				return s, string(out)
			case "/v1/embeddings":
				var body struct{ Model string }
				_ = json.Unmarshal([]byte(req), &body)
				mu.Lock()
				embedded[body.Model] = true
				mu.Unlock()
				if body.Model != fakeEmbed {
					hd.Set("Content-Type", "application/json")
					return http.StatusBadRequest, `{"error":{"message":"\"` + body.Model + `\" does not support embeddings","type":"api_error","param":null,"code":null}}`
				}
			}
			return s, b
		}}
	})
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for m := range embedded {
			out = append(out, m)
		}
		sort.Strings(out)
		return out
	}
}

// TestEmbeddingsUseThePassedOverModel: without --model and --embedding-model, Ollama's
// /v1/models lists nomic-embed-text beside llama3.1, and the chat model chosen past the
// embedding model was sent the embeddings requests too, to be refused (every embeddings check
// skipped) or answered with a chat model's hidden state, judged as if it were an embedding
// model. The first id passed over as named like an embedding model (a reranker is none) is
// the embedding model now, and the report says so in every format. With none listed, or with
// --model given, the chat model is used as before; a 400 to the float request of a model the
// suite chose still means "not supported", never a failure.
func TestEmbeddingsUseThePassedOverModel(t *testing.T) {
	skipped := map[string]Result{
		"embeddings.status": Skip, "embeddings.object": Skip, "embeddings.entries": Skip,
		"embeddings.order": Skip, "embeddings.usage": Skip, "embeddings.base64": Skip,
	}
	tests := []struct {
		name  string
		ids   []string
		model string // --model
		want  string // the embedding model
		why   string // in the embedding model's choice
		skip  bool   // every embeddings check skips, refused with a 400
	}{
		{name: "listed first, as Ollama lists it", ids: []string{fakeEmbed, fakeModel},
			want: fakeEmbed, why: "the first id of /v1/models named like an embedding model"},
		{name: "listed after the chat model", ids: []string{fakeModel, fakeEmbed, "llama3.1"},
			want: fakeEmbed, why: "the first id of /v1/models named like an embedding model"},
		{name: "past a reranker", ids: []string{"bge-reranker-v2-m3", fakeEmbed, fakeModel},
			want: fakeEmbed, why: "the first id of /v1/models named like an embedding model"},
		{name: "the one chosen refuses embeddings", ids: []string{"nomic-embed-text", fakeModel},
			want: "nomic-embed-text", why: "named like an embedding model", skip: true},
		{name: "none listed", ids: []string{fakeModel, "llama3.1"},
			want: fakeModel, why: "the chat model", skip: true},
		{name: "--model given", ids: []string{fakeEmbed, fakeModel}, model: fakeModel,
			want: fakeModel, why: "the chat model", skip: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, embedded := ollamaLike(t, tt.ids)
			o := fakeOptions(t, srv)
			o.Model = tt.model
			o.EmbeddingModel = ""
			rep := runAgainst(t, o)
			if rep.Model != fakeModel {
				t.Fatalf("model %q (%s), want %q", rep.Model, rep.ModelChoice, fakeModel)
			}
			if rep.EmbeddingModel != tt.want || !strings.Contains(rep.EmbeddingChoice, tt.why) {
				t.Errorf("embedding model %q (%s), want %q (%s)", rep.EmbeddingModel, rep.EmbeddingChoice, tt.want, tt.why)
			}
			if diff := cmp.Diff([]string{tt.want}, embedded()); diff != "" {
				t.Errorf("models the embeddings requests named (-want +got):\n%s", diff)
			}
			want := baseline()
			if tt.skip {
				for id, r := range skipped {
					want[id] = r
				}
			}
			if diff := cmp.Diff(want, notPassing(rep)); diff != "" {
				t.Errorf("checks that did not pass (-want +got):\n%s", diff)
			}
			for f, line := range map[Format]string{
				FormatTable:    "Embedding model " + rep.EmbeddingModel + ": " + rep.EmbeddingChoice,
				FormatMarkdown: "Embedding model " + rep.EmbeddingModel + ": " + rep.EmbeddingChoice,
				FormatJSON:     `"embedding_model_choice": "` + rep.EmbeddingChoice + `"`,
				FormatJUnit:    `<property name="embedding_model_choice" value="` + rep.EmbeddingChoice + `">`,
			} {
				var b strings.Builder
				if err := rep.Write(&b, f); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(b.String(), line) {
					t.Errorf("the %s report does not say %q:\n%s", f, line, b.String())
				}
			}
		})
	}
}

// TestEmbeddingModelGivenIsSaid: --embedding-model is used as given, and the report says so.
func TestEmbeddingModelGivenIsSaid(t *testing.T) {
	srv, embedded := ollamaLike(t, []string{"nomic-embed-text", fakeModel})
	o := fakeOptions(t, srv)
	o.Only = []string{"embeddings.status"}
	rep := runAgainst(t, o)
	if rep.EmbeddingModel != fakeEmbed || rep.EmbeddingChoice != "given by --embedding-model" {
		t.Errorf("embedding model %q (%s), want %q given by --embedding-model", rep.EmbeddingModel, rep.EmbeddingChoice, fakeEmbed)
	}
	if diff := cmp.Diff([]string{fakeEmbed}, embedded()); diff != "" {
		t.Errorf("models the embeddings requests named (-want +got):\n%s", diff)
	}
}
