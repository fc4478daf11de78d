package server_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// evil is a JSON string's content whose value holds ESC[2J, a line break, a C1 control (U+009B,
// CSI), a DEL and a lone surrogate (the invalid UTF-8 a body can carry: a raw invalid byte is
// refused as invalid JSON before anything reads it): what a client could send to clear the
// terminal of whoever prints the error, or split its log line. evilHeader is what a header can carry of it (no C0,
// no DEL): the C1 control as UTF-8 and the invalid byte.
const (
	evil       = `a\u001b[2Jb\nc\u009bd` + "\x7f" + `\ud800e`
	evilHeader = "a\xc2\x9bd\xffe"
)

// evilShown is evil as a message names it: the ESC, the line break, the C1 control and the DEL
// escaped (\u001b; the line break as \u000a, or as \n where the message quotes the raw JSON
// value), the surrogate as U+FFFD, which the JSON decoder made of it (\ud800 or \ufffd where the
// message quotes the raw value); everything else as sent. In a header, the invalid byte is \u00ff.
var (
	evilShown       = regexp.MustCompile(`a\\u001b\[2Jb(\\u000a|\\n)c\\u009bd\\u007f(\\ud800|\\ufffd|\x{FFFD})e`)
	evilHeaderShown = regexp.MustCompile(`a\\u009bd(\\u00ff|\x{FFFD})e`)
)

// TestErrorsEchoClientValuesEscaped: every error the gateway writes that repeats a value the
// client sent (a parameter's value, a call id, a role, a tool's or a part's type, a header's
// value, on chat, embeddings and the Responses bridge, and in the ollama adapter's refusals)
// repeats it through one rule (internal/echo): no raw C0, DEL, C1 or invalid UTF-8 reaches the
// message, and the value is still there to read, its control characters as \u00XX. Before,
// the Responses bridge's 400s and most others repeated it as sent, and the %q ones in Go's
// own escapes (\x1b, \xff), clipped or not.
func TestErrorsEchoClientValuesEscaped(t *testing.T) {
	up, oll := newFake(t, "up"), newFake(t, "oll")
	oll.set(ollamaAnswer)
	sa := newAdUpstream(t, saifScript)
	g := newGateway(t, fmt.Sprintf(`allowed_origins = ["https://chat.example.com"]
[targets.oll]
adapter = "ollama"
url = %q
class = "private"
model = "o"

[targets.saif]
adapter     = "saif"
url         = %q
specialists = ["malware"]

%s[routes.r]
targets = ["up"]

[routes.olla]
targets = ["oll"]

[routes.saif]
targets = ["saif"]
`, oll.srv.URL, sa.srv.URL, target("up", up.url(), "private", `model = "m"`)), nil)

	const (
		user  = `"messages":[{"role":"user","content":"x"}]`
		tool  = `"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]`
		rTool = `"tools":[{"type":"function","name":"f","parameters":{}}]`
		call  = `{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`
	)
	v := `"` + evil + `"`
	for _, c := range []struct {
		name, path, body string
		hdr              []string
		status           int
		code             string
		header           bool // the value went in a header: evilHeaderShown
	}{
		// Chat completions.
		{"chat tool_choice", "/v1/chat/completions", `{"model":"r",` + user + `,"tool_choice":` + v + `}`, nil, 400, "invalid_value", false},
		{"chat tool_choice function", "/v1/chat/completions",
			`{"model":"r",` + user + `,` + tool + `,"tool_choice":{"type":"function","function":{"name":` + v + `}}}`, nil, 400, "invalid_value", false},
		{"chat x-route-hint field", "/v1/chat/completions", `{"model":"saif",` + user + `,"x-route-hint":` + v + `}`, nil, 400, "unknown_specialist", false},
		{"chat x-route-hint header", "/v1/chat/completions", `{"model":"saif",` + user + `}`, []string{"x-route-hint", evilHeader}, 400, "unknown_specialist", true},
		{"chat Content-Encoding", "/v1/chat/completions", `{"model":"r",` + user + `}`, []string{"Content-Encoding", evilHeader}, 415, "unsupported_content_encoding", true},
		{"chat Origin", "/v1/chat/completions", `{"model":"r",` + user + `}`, []string{"Origin", evilHeader}, 403, "origin_not_allowed", true},
		// The ollama adapter's refusals.
		{"ollama keep_alive", "/v1/chat/completions", `{"model":"olla",` + user + `,"keep_alive":` + v + `}`, nil, 400, "invalid_value", false},
		{"ollama format", "/v1/chat/completions", `{"model":"olla",` + user + `,"format":` + v + `}`, nil, 400, "invalid_value", false},
		{"ollama think", "/v1/chat/completions", `{"model":"olla",` + user + `,"think":` + v + `}`, nil, 400, "invalid_value", false},
		{"ollama reasoning_effort", "/v1/chat/completions", `{"model":"olla",` + user + `,"reasoning_effort":` + v + `}`, nil, 400, "invalid_value", false},
		{"ollama content part type", "/v1/chat/completions", `{"model":"olla","messages":[{"role":"user","content":[{"type":` + v + `}]}]}`, nil, 400, "unsupported_content", false},
		{"ollama response_format type", "/v1/chat/completions", `{"model":"olla",` + user + `,"response_format":{"type":` + v + `}}`, nil, 400, "invalid_value", false},
		// Embeddings.
		{"embeddings encoding_format", "/v1/embeddings", `{"model":"r","input":"x","encoding_format":` + v + `}`, nil, 400, "invalid_value", false},
		// The Responses bridge.
		{"responses truncation", "/v1/responses", `{"model":"r","input":"x","truncation":` + v + `}`, nil, 400, "invalid_value", false},
		{"responses item type", "/v1/responses", `{"model":"r","input":[{"type":` + v + `}]}`, nil, 400, "unsupported_value", false},
		{"responses role", "/v1/responses", `{"model":"r","input":[{"role":` + v + `,"content":"x"}]}`, nil, 400, "invalid_value", false},
		{"responses content part type", "/v1/responses", `{"model":"r","input":[{"role":"user","content":[{"type":` + v + `}]}]}`, nil, 400, "unsupported_value", false},
		{"responses output part type", "/v1/responses",
			`{"model":"r","input":[` + call + `,{"type":"function_call_output","call_id":"c","output":[{"type":` + v + `}]}]}`, nil, 400, "unsupported_value", false},
		{"responses reasoning part type", "/v1/responses",
			`{"model":"r","input":[{"type":"reasoning","summary":[{"type":` + v + `,"text":"x"}]}]}`, nil, 400, "invalid_value", false},
		{"responses duplicate call_id", "/v1/responses",
			`{"model":"r","input":[{"type":"function_call","call_id":` + v + `,"name":"f","arguments":"{}"},{"type":"function_call","call_id":` + v + `,"name":"f","arguments":"{}"}]}`, nil, 400, "invalid_value", false},
		{"responses output without call", "/v1/responses",
			`{"model":"r","input":[{"type":"function_call_output","call_id":` + v + `,"output":"x"}]}`, nil, 400, "invalid_value", false},
		{"responses second output", "/v1/responses",
			`{"model":"r","input":[{"type":"function_call","call_id":` + v + `,"name":"f","arguments":"{}"},{"type":"function_call_output","call_id":` + v + `,"output":"x"},{"type":"function_call_output","call_id":` + v + `,"output":"x"}]}`, nil, 400, "invalid_value", false},
		{"responses call without output", "/v1/responses",
			`{"model":"r","input":[{"type":"function_call","call_id":` + v + `,"name":"f","arguments":"{}"}]}`, nil, 400, "invalid_value", false},
		{"responses tool type", "/v1/responses", `{"model":"r","input":"x","tools":[{"type":` + v + `}]}`, nil, 400, "unsupported_value", false},
		{"responses tool_choice name", "/v1/responses", `{"model":"r","input":"x",` + rTool + `,"tool_choice":{"type":"function","name":` + v + `}}`, nil, 400, "invalid_value", false},
		{"responses tool_choice mode", "/v1/responses",
			`{"model":"r","input":"x",` + rTool + `,"tool_choice":{"type":"allowed_tools","mode":` + v + `,"tools":[{"type":"function","name":"f"}]}}`, nil, 400, "invalid_value", false},
		{"responses text.format.type", "/v1/responses", `{"model":"r","input":"x","text":{"format":{"type":` + v + `}}}`, nil, 400, "unsupported_value", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := g.post(t, c.path, c.body, c.hdr...)
			if rep.status != c.status || rep.errorField(t, "code") != c.code {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
			if !utf8.Valid(rep.body) || bytes.ContainsAny(rep.body, "\x7f\u0080\u0085\u009b") {
				t.Errorf("the body holds a raw DEL, C1 control or invalid byte: %q", rep.body)
			}
			msg, _ := rep.errorField(t, "message").(string)
			if i := strings.IndexFunc(msg, unicode.IsControl); i >= 0 {
				t.Errorf("message %q holds %q", msg, msg[i:])
			}
			shown := evilShown
			if c.header {
				shown = evilHeaderShown
			}
			if !shown.MatchString(msg) {
				t.Errorf("message %q does not name the value as %s", msg, shown)
			}
		})
	}
}
