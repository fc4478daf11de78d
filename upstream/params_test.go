package upstream

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

// TestOllamaParams holds the ollama adapter's /api/chat body to CONFIG.md's table for each
// OpenAI chat parameter a client may send: translated, or left out where it asks nothing of
// the answer. Zero values (temperature 0, seed 0) are values, and null is the parameter unsent.
func TestOllamaParams(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	const head = `{"model":"llama3.2","messages":[{"role":"user","content":"x"}]`
	tests := []struct {
		name, params string
		want         string // the /api/chat body after its messages
	}{
		{"temperature 0 is kept", `"temperature":0`, `,"options":{"temperature":0},"stream":false}`},
		{"seed 0 is kept", `"seed":0`, `,"options":{"seed":0},"stream":false}`},
		{"top_p", `"top_p":0.5`, `,"options":{"top_p":0.5},"stream":false}`},
		{"nulls are unsent", `"temperature":null,"top_p":null,"seed":null,"stop":null,"n":null,"max_tokens":null,` +
			`"max_completion_tokens":null,"frequency_penalty":null,"presence_penalty":null,"reasoning_effort":null,"response_format":null`,
			`,"stream":false}`},
		{"stop as a string is a list", `"stop":"END"`, `,"options":{"stop":["END"]},"stream":false}`},
		{"stop as an array", `"stop":["a","b"]`, `,"options":{"stop":["a","b"]},"stream":false}`},
		{"max_completion_tokens alone", `"max_completion_tokens":7`, `,"options":{"num_predict":7},"stream":false}`},
		{"max_tokens alone", `"max_tokens":9`, `,"options":{"num_predict":9},"stream":false}`},
		{"json_object", `"response_format":{"type":"json_object"}`, `,"format":"json","stream":false}`},
		{"harmless fields are left out", `"user":"u","metadata":{"a":"b"},"store":true,"service_tier":"auto",` +
			`"prediction":{"type":"content","content":"x"},"parallel_tool_calls":false,"n":1,"logit_bias":{},"modalities":["text"]`,
			`,"stream":false}`},
		// Ollama's think, as Ollama's own OpenAI endpoint maps reasoning_effort: a level, or false
		// for none. minimal and xhigh are the nearest level Ollama knows.
		{"reasoning_effort none is think false", `"reasoning_effort":"none"`, `,"stream":false,"think":false}`},
		{"reasoning_effort minimal is think low", `"reasoning_effort":"minimal"`, `,"stream":false,"think":"low"}`},
		{"reasoning_effort low", `"reasoning_effort":"low"`, `,"stream":false,"think":"low"}`},
		{"reasoning_effort medium", `"reasoning_effort":"medium"`, `,"stream":false,"think":"medium"}`},
		{"reasoning_effort high", `"reasoning_effort":"high"`, `,"stream":false,"think":"high"}`},
		{"reasoning_effort xhigh is think high", `"reasoning_effort":"xhigh"`, `,"stream":false,"think":"high"}`},
		{"reasoning_effort as an object", `"reasoning_effort":{"effort":"high","summary":"auto"}`, `,"stream":false,"think":"high"}`},
		{"reasoning_effort object without an effort", `"reasoning_effort":{"summary":"auto"}`, `,"stream":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
			req := chatRequestOf(t, `{`+msgs+`,`+tt.params+`}`)
			out, err := a.translate(req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(head+tt.want, string(mustJSON(out))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestOllamaReasoningEffortRefused: a reasoning_effort Ollama has no level for is the client's
// mistake, refused naming the field, as OpenAI and Ollama's own endpoint refuse it; sent on as
// nothing, the model would think as it likes.
func TestOllamaReasoningEffortRefused(t *testing.T) {
	for _, v := range []string{`"extreme"`, `""`, `{"effort":"lots"}`} {
		a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
		_, err := a.translate(chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"reasoning_effort":`+v+`}`))
		var se *core.StatusError
		if !errors.As(err, &se) || se.Status != 400 || se.Param != "reasoning_effort" || se.Code != "invalid_value" {
			t.Errorf("%s: %#v, want 400 invalid_value at reasoning_effort", v, err)
		}
	}
}
