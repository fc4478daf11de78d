package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/internal/jsonx"
)

// sameAsChatDecode fails tb unless the chat body the bridge writes for the Responses body body
// is decoded by decodeWritten, the bridge's decode, to what decodeChat, the chat endpoint's,
// makes of it: the same request, or the same refusal. It also holds what decodeWritten may take
// for granted: the bridge writes valid JSON in valid UTF-8 with no lone surrogate escape (a text
// jsonx.FixText would leave as it is), whatever its depth. A body toChat refuses has nothing to
// compare.
func sameAsChatDecode(tb testing.TB, body []byte) {
	tb.Helper()
	chat, e := (&responsesWriter{}).toChat(bytes.Clone(body))
	if e != nil {
		return
	}
	text := bytes.Clone(chat)
	if !json.Valid(chat) || jsonx.FixText(text, 1<<30) != nil || !bytes.Equal(text, chat) {
		tb.Fatalf("body %q: the bridge wrote %q, not valid JSON in valid UTF-8 without a lone surrogate", body, chat)
	}
	sameAsOldWalk(tb, chat)
	r := httptest.NewRequest("POST", "/v1/responses", nil)
	// Each decode gets its own copy: the full one may repair the body in place.
	want, wantErr := decodeChat(r, bytes.Clone(chat), new(reqState), testNames)
	got, gotErr := decodeWritten(r, bytes.Clone(chat), new(reqState), testNames)
	if diff := cmp.Diff(wantErr, gotErr); diff != "" {
		tb.Fatalf("body %q, chat body %q: refusal (-decodeChat +decodeWritten):\n%s", body, chat, diff)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		tb.Fatalf("body %q, chat body %q: request (-decodeChat +decodeWritten):\n%s", body, chat, diff)
	}
}

// nested is a JSON value nesting n arrays and objects, alternately, around a string whose text
// holds brackets, an escaped quote and an escaped backslash, which no count of the nesting may
// take for brackets.
func nested(n int) string {
	var b strings.Builder
	for i := range n {
		if i%2 == 0 {
			b.WriteString(`{"a":`)
		} else {
			b.WriteByte('[')
		}
	}
	b.WriteString(`"]}\"[{\\"`)
	for i := n - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	}
	return b.String()
}

// deepBodies are Responses bodies nesting around the chat endpoint's depth limit (maxBodyDepth)
// where the bridge copies a value as it came: a member it passes on, a Hayula option, a
// schema, and where it writes it one level deeper than the client did (a tool's parameters,
// under "function"), so that the bridge's chat body goes one level past the limit where the
// client's did not; also where it drops what came (an item's or a part's member it does not
// read), and beside another fault, which the decode must refuse first as it did.
func deepBodies() []string {
	templates := []string{
		`{"model":"saif","input":"x","tools":[{"type":"function","name":"f","parameters":%s}]}`,
		`{"model":"saif","input":"x","tools":[{"type":"function","name":"f","parameters":{}},{"type":"function","name":"g","parameters":%s}],"tool_choice":"required"}`,
		`{"model":"saif","input":"x","deep":%s}`,
		`{"model":"saif","input":"x","x-fallback-on":%s}`,
		`{"model":"saif","input":"x","text":{"format":{"type":"json_schema","name":"s","schema":%s}}}`,
		`{"model":"saif","input":[{"role":"user","content":"x","extra":%s}]}`,
		`{"model":"saif","input":[{"role":"user","content":[{"type":"input_text","text":"x","extra":%s}]}]}`,
		`{"model":"saif","input":[{"role":"user","content":"x"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}","extra":%s},{"type":"function_call_output","call_id":"c","output":"y"}]}`,
		`{"model":"saif","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f","extra":%s}]}}`,
		`{"model":"saif","input":"x","metadata":{"a":%s}}`,
		`{"input":"x","tools":[{"type":"function","name":"f","parameters":%s}]}`,
		`{"model":"saif","input":"x","temperature":"hot","tools":[{"type":"function","name":"f","parameters":%s}]}`,
		`{"model":"saif","input":"x","tools":[{"type":"function","name":"f","parameters":%s}],"max_output_tokens":0}`,
		`{"model":"saif","input":"x","tools":[{"type":"function","name":"f","parameters":%s}],"Temperature":1}`,
		`{"model":"saif","input":"x","stop":%s}`,
		`{"model":"saif","input":"x","deep":"` + strings.Repeat("[", 200) + `"}`,
	}
	var bodies []string
	for _, tmpl := range templates {
		for n := maxBodyDepth - 8; n <= maxBodyDepth+1; n++ {
			bodies = append(bodies, strings.Replace(tmpl, "%s", nested(n), 1))
		}
	}
	return bodies
}

// writtenBodies are the Responses bodies the oracle tests of the bridge send (the seeds of
// TestResponsesToChatMatchesOld and every body the server's tests hold) and deepBodies.
func writtenBodies(tb testing.TB) []string {
	return append(append(responsesSeeds(), testBodyLiterals(tb)...), deepBodies()...)
}

// TestWrittenDecodesAsChat: the bridge's chat body is decoded as the chat endpoint decodes its
// own, for every body the bridge's oracle tests send and at and around the depth limit.
func TestWrittenDecodesAsChat(t *testing.T) {
	for _, body := range writtenBodies(t) {
		sameAsChatDecode(t, []byte(body))
	}
}

// TestDeepBodiesReachTheLimit: deepBodies reach the limit on both sides, in the bridge's chat
// body: some are refused there as too deep, and some one level shallower are not.
func TestDeepBodiesReachTheLimit(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/responses", nil)
	deep, deeper, taken := 0, 0, 0
	for _, body := range deepBodies() {
		chat, e := (&responsesWriter{}).toChat([]byte(body))
		if e != nil {
			continue
		}
		_, e = decodeChat(r, chat, new(reqState), testNames)
		switch {
		case e == nil:
			taken++
		case strings.Contains(e.Message, "deeper than"):
			deep++
			if jsonx.FixText([]byte(body), maxBodyDepth) == nil {
				deeper++ // within the limit as the client sent it: the bridge nested it deeper
			}
		}
	}
	if taken == 0 || deep == 0 || deeper == 0 {
		t.Fatalf("%d bodies taken, %d refused as too deep, %d of them within the limit as the client sent them",
			taken, deep, deeper)
	}
}

func FuzzWrittenDecodesAsChat(f *testing.F) {
	for _, body := range writtenBodies(f) {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsChatDecode(t, body)
	})
}
