package server

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// agentBody is a Responses body as a coding agent (Codex CLI, the Agents SDK) sends one on every
// turn, built the same way each time: instructions, 12 function tools, and turns of a user
// message, a function_call and its function_call_output (a shell's output, with the <, > and &
// that encoding/json escapes), then the turn's new user message. 20 turns make 51,748 bytes.
func agentBody(turns int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"saif","instructions":`)
	b.WriteString(fmt.Sprintf("%q", strings.Repeat("You are a coding agent running in a terminal. Keep going until the user's query is completely resolved; "+
		"use the tools to read files & run commands, and never guess at a file's contents.\n", 24)))
	b.WriteString(`,"input":[`)
	output := strings.Repeat(`drwxr-xr-x  2 user user 4096 Dec  3 00:53 notes\n-rw-r--r--  1 user user  812 Dec  3 00:53 go.mod\n`+
		`ok  \tgithub.com/hayula/gateway/server\t(cached) 2>&1 | grep -v \"<nil>\"\n`, 9)
	for t := 0; t < turns; t++ {
		if t > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"message","role":"user","content":[{"type":"input_text","text":"Step %d: look at server/responses.go and tell me where the chat body is written, then run the tests of the package."}]},`, t)
		fmt.Fprintf(&b, `{"type":"function_call","id":"fc_%04d","call_id":"call_%04d","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"ls -la && go test ./server/ 2>&1\"],\"workdir\":\"/work/main\",\"timeout_ms\":120000}"},`, t, t)
		fmt.Fprintf(&b, `{"type":"function_call_output","call_id":"call_%04d","output":"%s"}`, t, output)
	}
	b.WriteString(`,{"type":"message","role":"user","content":[{"type":"input_text","text":"Now fix it."}]}],"tools":[`)
	for i := 0; i < 12; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"function","name":"tool_%d","description":"Runs a command of kind %d in the sandbox and returns its output; the working directory is kept between calls.",`+
			`"strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"},"description":"The command to execute"},`+
			`"workdir":{"type":"string","description":"The working directory"},"timeout_ms":{"type":"number","description":"The timeout for the command in milliseconds"}},"required":["command"],"additionalProperties":false}}`, i, i)
	}
	b.WriteString(`],"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},` +
		`"store":false,"stream":true,"include":["reasoning.encrypted_content"]}`)
	return []byte(b.String())
}

// BenchmarkResponsesRequest is what one Responses request costs before it reaches routing: an
// agent's body (agentBody, about 50 KB) turned into a chat body by the bridge (toChat) and that
// decoded as the chat endpoint decodes its own (decodeWritten, as decodeResponses does).
func BenchmarkResponsesRequest(b *testing.B) {
	body := agentBody(20)
	r := httptest.NewRequest("POST", "/v1/responses", nil)
	st := new(reqState)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		bw := &responsesWriter{}
		chat, e := bw.toChat(body)
		if e != nil {
			b.Fatal(e.Message)
		}
		if _, e := decodeWritten(r, chat, st, testNames); e != nil {
			b.Fatal(e.Message)
		}
	}
}
