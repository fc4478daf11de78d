package conformance

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hayula/gateway/conformance/conformancetest"
)

// listing is a fake whose /v1/models lists ids in that order and whose chat endpoint refuses
// the models in refuse as Ollama refuses an embedding model; it counts the chat requests per
// model.
func listing(t *testing.T, ids []string, refuse ...string) (*httptest.Server, func(model string) int) {
	t.Helper()
	var mu sync.Mutex
	chats := map[string]int{}
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
			case "/v1/chat/completions":
				var body struct{ Model string }
				_ = json.Unmarshal([]byte(req), &body)
				mu.Lock()
				chats[body.Model]++
				mu.Unlock()
				for _, m := range refuse {
					if body.Model == m {
						hd.Set("Content-Type", "application/json")
						return http.StatusBadRequest, `{"error":{"message":"\"` + m + `\" does not support chat","type":"api_error","param":null,"code":null}}`
					}
				}
			}
			return s, b
		}}
	})
	return srv, func(model string) int { mu.Lock(); defer mu.Unlock(); return chats[model] }
}

// TestModelChosenPastAnEmbeddingModel: without --model, Ollama's /v1/models often lists an
// embedding model first (nomic-embed-text), and every chat check failed against a server that
// is fine. An id named like an embedding model is passed over without a request; one that
// refuses chat gives way to the next; the report says which model was tested and why.
func TestModelChosenPastAnEmbeddingModel(t *testing.T) {
	tests := []struct {
		name   string
		ids    []string
		refuse []string
		why    []string // in the report's model_choice
		asked  map[string]int
	}{
		{name: "named like an embedding model", ids: []string{"nomic-embed-text:latest", fakeModel, fakeEmbed},
			why:   []string{"not named like an embedding model", "nomic-embed-text:latest, fake-embed"},
			asked: map[string]int{"nomic-embed-text:latest": 0}},
		// Ollama's answer to a chat request for an embedding model whose name does not say so.
		{name: "refuses chat", ids: []string{"paraphrase-multilingual", fakeModel, fakeEmbed}, refuse: []string{"paraphrase-multilingual"},
			why: []string{"the first id of /v1/models not refusing a chat request", `paraphrase-multilingual refused it: HTTP 400`, `does not support chat`},
			// The answer that chose fake-model is chat.basic's: not sent twice.
			asked: map[string]int{"paraphrase-multilingual": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, asked := listing(t, tt.ids, tt.refuse...)
			rep := runAgainst(t, fakeOptions(t, srv))
			if rep.Model != fakeModel {
				t.Fatalf("model %q (%s), want %q", rep.Model, rep.ModelChoice, fakeModel)
			}
			if diff := cmp.Diff(baseline(), notPassing(rep)); diff != "" {
				t.Errorf("checks that did not pass (-want +got):\n%s", diff)
			}
			for _, w := range tt.why {
				if !strings.Contains(rep.ModelChoice, w) {
					t.Errorf("model_choice %q does not say %q", rep.ModelChoice, w)
				}
			}
			for m, n := range tt.asked {
				if got := asked(m); got != n {
					t.Errorf("%d chat requests for %s, want %d", got, m, n)
				}
			}
			var table strings.Builder
			if err := rep.Write(&table, FormatTable); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(table.String(), "Model: "+rep.ModelChoice) {
				t.Errorf("the table does not say why the model was chosen:\n%s", table.String())
			}
		})
	}
}

// TestModelChoiceWhenEveryModelRefusesChat: a server that refuses every chat request is tested
// with the first listed id, after at most maxModelTries requests, and chat.status reports the
// refusal; so is one that lists only embedding models, without a request.
func TestModelChoiceWhenEveryModelRefusesChat(t *testing.T) {
	ids := []string{"a", "b", "c", "d"}
	srv, asked := listing(t, ids, ids...)
	o := fakeOptions(t, srv)
	o.Only = []string{"chat.status"}
	rep := runAgainst(t, o)
	if rep.Model != "a" || !strings.Contains(rep.ModelChoice, "every one tried refused a chat request") {
		t.Errorf("model %q (%s), want a, none taking chat", rep.Model, rep.ModelChoice)
	}
	if c, _ := rep.Result("chat.status"); c.Result != Fail || !strings.Contains(c.Reason, "does not support chat") {
		t.Errorf("chat.status = %s %q, want FAIL quoting the refusal", c.Result, c.Reason)
	}
	if n := asked("a") + asked("b") + asked("c") + asked("d"); n != maxModelTries || asked("a") != 1 {
		t.Errorf("%d chat requests (%d for a), want %d, one each", n, asked("a"), maxModelTries)
	}

	srv, asked = listing(t, []string{"nomic-embed-text", "mxbai-embed-large"})
	o = fakeOptions(t, srv)
	o.Only = []string{"chat.status"}
	rep = runAgainst(t, o)
	if rep.Model != "nomic-embed-text" || !strings.Contains(rep.ModelChoice, "give --model") {
		t.Errorf("model %q (%s), want nomic-embed-text and a word to give --model", rep.Model, rep.ModelChoice)
	}
	if n := asked("nomic-embed-text") + asked("mxbai-embed-large"); n != 1 {
		t.Errorf("%d chat requests, want 1: chat.status's own", n)
	}
}

func TestEmbeddingName(t *testing.T) {
	for id, want := range map[string]bool{
		"nomic-embed-text": true, "nomic-embed-text:latest": true, "mxbai-embed-large": true,
		"text-embedding-3-small": true, "jina-embeddings-v3": true, "all-minilm:l6-v2": true,
		"BAAI/bge-m3": true, "intfloat/multilingual-e5-large": true, "Alibaba-NLP/gte-Qwen2-7B-instruct": true,
		"snowflake-arctic-embed2": true, "granite-embedding:278m": true, "bge-reranker-v2-m3": true,
		"llama3.2": false, "qwen2.5:7b": false, "gpt-4o-mini": false, "gpt-5": false, "fake-model": false,
		"mistral-small3.1": false, "deepseek-r1:8b": false, "gemma3:27b": false, "phi4-mini": false,
	} {
		if got := embeddingName(id); got != want {
			t.Errorf("embeddingName(%q) = %v, want %v", id, got, want)
		}
	}
}

// TestModelChoiceHidesTheKey: the reason a model was chosen quotes the refusals of those passed
// over, and a server may repeat the key it was sent in them (LiteLLM's "Received API Key = …");
// the progress line and the report say why without it.
func TestModelChoiceHidesTheKey(t *testing.T) {
	const key = "sk-conformance-secret-7f3a"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/models" {
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m1","object":"model","created":1,"owned_by":"x"},{"id":"m2","object":"model","created":1,"owned_by":"x"}]}`))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"Received API Key = ` + r.Header.Get("Authorization") + `","type":"invalid_request_error","param":null,"code":null}}`))
	}))
	defer srv.Close()
	o := fakeOptions(t, srv)
	o.APIKey = key
	o.Only = []string{"chat.status"}
	var progress strings.Builder
	o.Progress = &progress
	rep := runAgainst(t, o)
	if !strings.Contains(rep.ModelChoice, "m1 refused it") {
		t.Fatalf("model_choice %q does not quote the refusal, and the test would prove nothing", rep.ModelChoice)
	}
	if strings.Contains(rep.ModelChoice, key[:16]) || strings.Contains(progress.String(), key[:16]) {
		t.Errorf("the key is shown: model_choice %q; progress:\n%s", rep.ModelChoice, progress.String())
	}
}
