package server_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResponsesSystemMidInput: a system or developer message after the conversation began stays
// where it was sent, as a system message (OpenAI's chat takes one anywhere, and the chat endpoint
// passes it on so), and is not merged into the leading one, which joins instructions and the
// input's leading system and developer messages: moved to the start it would tell the model at the
// first turn what the client said at a later one.
func TestResponsesSystemMidInput(t *testing.T) {
	g, up := oneTarget(t)
	rep := g.post(t, "/v1/responses", `{"model":"r","instructions":"be brief","input":[`+
		`{"role":"developer","content":"lead"},{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},`+
		`{"role":"developer","content":"now in French"},{"role":"system","content":[{"type":"input_text","text":"and polite"}]},`+
		`{"role":"user","content":"again"}]}`)
	if rep.status != http.StatusOK {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	want := []any{
		map[string]any{"role": "system", "content": "be brief\n\nlead"},
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"role": "assistant", "content": "hello"},
		map[string]any{"role": "system", "content": "now in French"},
		map[string]any{"role": "system", "content": "and polite"},
		map[string]any{"role": "user", "content": "again"},
	}
	if d := cmp.Diff(want, upstreamMessages(t, up)); d != "" {
		t.Errorf("upstream messages (-want +got):\n%s", d)
	}
}
