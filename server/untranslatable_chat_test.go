package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestUntranslatableChatSkipsTranslators: a chat request that OpenAI's API serves but Ollama's
// /api/chat or SAIF's prompt cannot say — an input_audio or file content part, the legacy
// functions, an assistant's tool call whose arguments are no JSON object (a model's cut-off call
// sent back in the history) — was refused by the ollama and saif adapters with a 400 of class
// request, which stopped the chain at the first target although the route's openai target served
// it. The parts and functions now skip the translating targets in eligibility (filter format),
// as echo and token ids do (TestUntranslatableSkipsTranslators), and are never sent to them; the
// arguments, found only while translating, are that target's failure (class endpoint), so the
// chain moves on. A route with nothing else answers 400 as before, naming what could not be said.
func TestUntranslatableChatSkipsTranslators(t *testing.T) {
	saif, oll, oai := newFake(t, "saif"), newFake(t, "oll"), newFake(t, "oai")
	saif.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"s1","specialist":"webapp","routed_by":"router","confidence":0.5,"text":"saif","finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	})
	oll.set(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"model":"m","created_at":"2026-01-02T15:04:05Z","message":{"role":"assistant","content":"ollama"},"done":true,"done_reason":"stop"}`+"\n")
	})
	oai.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"openai"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	})
	cfg := "[targets.saif]\nadapter = \"saif\"\nurl = \"" + saif.srv.URL + "\"\nclass = \"private\"\nmodel = \"saif\"\n\n" +
		"[targets.oll]\nadapter = \"ollama\"\nurl = \"" + oll.srv.URL + "\"\nclass = \"private\"\nmodel = \"m\"\n\n" +
		target("oai", oai.url(), "private", `model = "m"`) +
		"[routes.all]\ntargets = [\"saif\", \"oll\", \"oai\"]\n\n[routes.saif]\ntargets = [\"saif\"]\n\n[routes.oll]\ntargets = [\"oll\"]\n"
	g := newGateway(t, cfg, nil)
	const tools = `,"tools":[{"type":"function","function":{"name":"f"}}]`
	for _, tc := range []struct {
		name, members string
		alone         []string // routes of one translating target, each answering 400
		code, field   string   // of that 400
	}{
		{"audio part", `"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}]}]`,
			[]string{"oll", "saif"}, "unsupported_request", "input_audio"},
		{"file part", `"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-abc"}},{"type":"text","text":"Sum it up."}]}]`,
			[]string{"oll", "saif"}, "unsupported_request", "file"},
		{"legacy functions", `"messages":[{"role":"user","content":"hi"}],"functions":[{"name":"f","parameters":{"type":"object"}}]`,
			[]string{"oll"}, "unsupported_request", "functions"},
		{"arguments not an object", `"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"city\": \"Fè"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"error: bad arguments"}]` + tools,
			[]string{"oll"}, "invalid_value", "messages[1].tool_calls[0].function.arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := oai.hits.Load()
			rep := g.post(t, "/v1/chat/completions", `{"model":"all",`+tc.members+`}`)
			if rep.status != 200 || !strings.HasSuffix(rep.header.Get("x-hayula-chain"), "oai") && !strings.HasSuffix(rep.header.Get("x-hayula-chain"), "(served by oai)") || oai.hits.Load() != before+1 {
				t.Errorf("route all: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
			}
			for _, alone := range tc.alone {
				rep = g.post(t, "/v1/chat/completions", `{"model":"`+alone+`",`+tc.members+`}`)
				msg, _ := rep.errorField(t, "message").(string)
				param, _ := rep.errorField(t, "param").(string)
				if rep.status != 400 || rep.errorField(t, "code") != tc.code || !strings.Contains(msg+" "+param, tc.field) {
					t.Errorf("route %s: %d %s", alone, rep.status, rep.body)
				}
			}
		})
	}
	if n := saif.hits.Load() + oll.hits.Load(); n != 0 {
		t.Fatalf("the translating targets were asked %d times", n)
	}
}
