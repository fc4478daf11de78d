package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ollamaAnswer answers /api/chat with one whole Ollama answer.
func ollamaAnswer(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"model":"o","created_at":"2026-11-30T12:00:00Z","message":{"role":"assistant","content":"ok"},"done":true,"done_reason":"stop"}`)
}

// ollamaAndOpenAI is a gateway with route "olla" on an Ollama target and route "oai" on an
// OpenAI-compatible one.
func ollamaAndOpenAI(t *testing.T) (g *gateway, oll, oai *fake) {
	t.Helper()
	oll, oai = newFake(t, "oll"), newFake(t, "oai")
	oll.set(ollamaAnswer)
	g = newGateway(t, "[targets.oll]\nadapter = \"ollama\"\nurl = \""+oll.srv.URL+"\"\nclass = \"private\"\nmodel = \"o\"\n\n"+
		target("oai", oai.url(), "private", `model = "m"`)+
		"[routes.olla]\ntargets = [\"oll\"]\n\n[routes.oai]\ntargets = [\"oai\"]\n", nil)
	return g, oll, oai
}

// TestOllamaReplaysReasoning: an assistant message's reasoning_content (or reasoning), which
// some clients send back with the history, reaches Ollama as the message's thinking, whichever
// decoder read the body; before, it was dropped. An OpenAI-compatible target gets the body as the
// client wrote it.
func TestOllamaReplaysReasoning(t *testing.T) {
	g, oll, oai := ollamaAndOpenAI(t)
	const history = `"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"42","reasoning_content":"6 times 7"},` +
		`{"role":"assistant","content":"43","reasoning":"one more"},{"role":"user","content":"why?"}]`
	for _, body := range []string{
		`{"model":"olla",` + history + `}`,
		`{"model":"olla","temperatur\u0065":1,` + history + `}`, // encoding/json's path
	} {
		rep := g.post(t, "/v1/chat/completions", body)
		if rep.status != 200 {
			t.Fatalf("%d %s", rep.status, rep.body)
		}
		want := []any{
			map[string]any{"role": "user", "content": "q"},
			map[string]any{"role": "assistant", "content": "42", "thinking": "6 times 7"},
			map[string]any{"role": "assistant", "content": "43", "thinking": "one more"},
			map[string]any{"role": "user", "content": "why?"},
		}
		if diff := cmp.Diff(want, oll.lastBody(t)["messages"]); diff != "" {
			t.Errorf("%s: messages (-want +got):\n%s", body, diff)
		}
	}
	if rep := g.post(t, "/v1/chat/completions", `{"model":"oai",`+history+`}`); rep.status != 200 {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	var sent struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	oai.mu.Lock()
	err := json.Unmarshal(oai.bodies[len(oai.bodies)-1], &sent)
	oai.mu.Unlock()
	if err != nil || len(sent.Messages) != 4 || string(sent.Messages[1]["reasoning_content"]) != `"6 times 7"` ||
		string(sent.Messages[2]["reasoning"]) != `"one more"` {
		t.Errorf("the OpenAI target got %+v (%v)", sent.Messages, err)
	}
}
