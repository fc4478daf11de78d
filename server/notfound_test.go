package server_test

import (
	"strings"
	"testing"
)

// TestModelNotFoundSaysWhereTheListIs: a user who asks for the upstream's tag ("llama3.1:8b")
// or a model of another gateway's config instead of a route name is told where the names are,
// on every path that answers model_not_found, and the answer stays the same for a route the
// key may not use (input_test.go holds that).
func TestModelNotFoundSaysWhereTheListIs(t *testing.T) {
	g, _ := keyed(t)
	auth := []string{"Authorization", "Bearer " + laptopKey}
	const hint = "GET /v1/models lists the models you may use"
	for _, tc := range []struct{ name, method, path, body string }{
		{"chat", "POST", "/v1/chat/completions", `{"model":"llama3.1:8b","messages":[{"role":"user","content":"x"}]}`},
		{"embeddings", "POST", "/v1/embeddings", `{"model":"llama3.1:8b","input":"x"}`},
		{"explain", "POST", "/v1/route/explain", `{"model":"llama3.1:8b","messages":[{"role":"user","content":"x"}]}`},
		{"a route the key may not use", "POST", "/v1/chat/completions", `{"model":"cloud","messages":[{"role":"user","content":"x"}]}`},
		{"models/{id}", "GET", "/v1/models/llama3.1:8b", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.do(t, tc.method, tc.path, tc.body, auth...)
			if rep.status != 404 || rep.errorField(t, "code") != "model_not_found" {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, hint) {
				t.Errorf("message %q does not contain %q", msg, hint)
			}
		})
	}
}

// TestModelNotFoundClipsTheName: the name is echoed as OpenAI does, but only its first
// maxEcho bytes, cut at a character: a client that sends a model name as long as
// max_body_bytes allows does not get it back in full, on any path that answers model_not_found.
func TestModelNotFoundClipsTheName(t *testing.T) {
	g, _ := keyed(t)
	auth := []string{"Authorization", "Bearer " + laptopKey}
	long := "x" + strings.Repeat("ع", 900) // two bytes each: a cut must not split one; keyed takes 2 KB bodies
	for _, tc := range []struct{ name, method, path, body string }{
		{"chat", "POST", "/v1/chat/completions", `{"model":"` + long + `","messages":[{"role":"user","content":"x"}]}`},
		{"embeddings", "POST", "/v1/embeddings", `{"model":"` + long + `","input":"x"}`},
		{"explain", "POST", "/v1/route/explain", `{"model":"` + long + `","messages":[{"role":"user","content":"x"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.do(t, tc.method, tc.path, tc.body, auth...)
			if rep.status != 404 || rep.errorField(t, "code") != "model_not_found" {
				t.Fatalf("status %d: %.300s", rep.status, rep.body)
			}
			msg, _ := rep.errorField(t, "message").(string)
			if len(msg) > 1024 {
				t.Fatalf("message of %d bytes echoes the whole name", len(msg))
			}
			if !strings.Contains(msg, "x"+strings.Repeat("ع", 100)) || !strings.Contains(msg, "ع…` does not exist") {
				t.Errorf("message %.400q does not name the start of the model, cut at a character", msg)
			}
		})
	}
}

// TestResponsesEchoesClipped: the Responses bridge's refusals that repeat a client's type or mode
// name (an input item's type, a content part's, a tool's, tool_choice's mode, text.format's type)
// repeat at most maxEcho bytes of it, as model_not_found does; and so does the chat endpoint's
// refusal of an n below 1, which repeats the number as sent.
func TestResponsesEchoesClipped(t *testing.T) {
	g, _ := oneTarget(t)
	long := strings.Repeat("z", 1500)
	for _, tc := range []struct{ name, body string }{
		{"item type", `{"model":"r","input":[{"type":"` + long + `"}]}`},
		{"content part type", `{"model":"r","input":[{"role":"user","content":[{"type":"` + long + `"}]}]}`},
		{"tool_choice mode", `{"model":"r","input":"hi","tools":[{"type":"function","name":"f","parameters":{}}],"tool_choice":{"type":"allowed_tools","mode":"` + long + `","tools":[{"type":"function","name":"f"}]}}`},
		{"text.format type", `{"model":"r","input":"hi","text":{"format":{"type":"` + long + `"}}}`},
		{"tool type", `{"model":"r","input":"hi","tools":[{"type":"` + long + `"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.do(t, "POST", "/v1/responses", tc.body)
			if rep.status != 400 {
				t.Fatalf("status %d: %.300s", rep.status, rep.body)
			}
			msg, _ := rep.errorField(t, "message").(string)
			if !strings.Contains(msg, strings.Repeat("z", 200)) || strings.Contains(msg, strings.Repeat("z", 300)) {
				t.Errorf("message of %d bytes: %.400q; want the name's first %d bytes, cut with …", len(msg), msg, 256)
			}
		})
	}
}

func TestNBelowOneEchoClipped(t *testing.T) {
	g, _ := oneTarget(t)
	n := "-" + strings.Repeat("9", 1500)
	rep := g.do(t, "POST", "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"x"}],"n":`+n+`}`)
	if rep.status != 400 || rep.errorField(t, "code") != "integer_below_min_value" {
		t.Fatalf("status %d: %.300s", rep.status, rep.body)
	}
	if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, strings.Repeat("9", 200)) || len(msg) > 512 {
		t.Errorf("message of %d bytes: %.400q", len(msg), msg)
	}
}

// TestToolChoiceEchoClipped: chat's tool_choice refusals quote the client's mode or function
// name clipped to maxEcho like every other echo, and clip it before quoting, so that the quoted
// name is whole: cut after quoting (at 80 bytes, as it was) it lost its closing quote and could
// end inside an escape.
func TestToolChoiceEchoClipped(t *testing.T) {
	g, _ := oneTarget(t)
	long := strings.Repeat("x", 300)
	tools := `"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]`
	for _, tc := range []struct{ name, choice string }{
		{"mode", `"` + long + `"`},
		{"function name", `{"type":"function","function":{"name":"` + long + `"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.do(t, "POST", "/v1/chat/completions",
				`{"model":"r","messages":[{"role":"user","content":"x"}],`+tools+`,"tool_choice":`+tc.choice+`}`)
			if rep.status != 400 {
				t.Fatalf("status %d: %.300s", rep.status, rep.body)
			}
			msg, _ := rep.errorField(t, "message").(string)
			if want := `"` + strings.Repeat("x", 256) + `…"`; !strings.Contains(msg, want) {
				t.Errorf("message %.500q lacks the name quoted whole after clipping to 256 bytes", msg)
			}
		})
	}
}
