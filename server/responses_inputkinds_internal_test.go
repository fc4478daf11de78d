package server

import (
	"strings"
	"testing"
)

// The input's kind decides how it is read: a string is the user's message, an array is walked
// for its items, and anything else is refused naming input, as encoding/json's reading decided
// before the walk took its place (the same cases pass on the tree before it).
func TestResponsesInputKinds(t *testing.T) {
	const typeErr = "Invalid type for 'input': expected a string or an array of input items."
	for input, want := range map[string]string{ // want: "" when accepted, else the refusal's param and message
		`"hello"`:    "",
		`"\u00e9\n"`: "",
		`null`:       "input: Missing required parameter",
		` [ ] `:      "input: 'input' has no messages",
		`[{"role":"user","content":"hi"}, {"role":"user","content":[{"type":"input_text","text":"x"}]}]`: "",
		`5`:                                 "input: " + typeErr,
		`{}`:                                "input: " + typeErr,
		`true`:                              "input: " + typeErr,
		`[1]`:                               "input[0]: ",
		`["x"]`:                             "input[0]: ",
		`[{"role":"user","content":"a"},7]`: "input[1]: ",
	} {
		body := []byte(`{"model":"m","input":` + input + `}`)
		_, e := (&responsesWriter{}).toChat(body)
		switch {
		case want == "" && e != nil:
			t.Errorf("input %s: refused (%s: %s)", input, e.Param, e.Message)
		case want != "" && e == nil:
			t.Errorf("input %s: accepted, want %q", input, want)
		case want != "":
			param, msg, _ := strings.Cut(want, ": ")
			if e.Param != param || !strings.HasPrefix(e.Message, msg) {
				t.Errorf("input %s: %s: %s, want %s: %s…", input, e.Param, e.Message, param, msg)
			}
		}
	}
}
