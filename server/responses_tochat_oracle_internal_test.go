package server

import (
	"bytes"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// sameAsOld fails tb unless toChat and oldToChat, the translation before it walked items with
// jsonx and appended the chat body, give the same chat body byte for byte, the same refusal, and
// record the same in their responsesWriter (what the answer echoes, and the chat messages a
// refusal is named by).
func sameAsOld(tb testing.TB, body []byte) {
	tb.Helper()
	nb, ob := &responsesWriter{}, &responsesWriter{}
	// checkText may repair a lone surrogate in place: each gets its own copy.
	newChat, newErr := nb.toChat(bytes.Clone(body))
	oldChat, oldErr := oldToChat(ob, bytes.Clone(body))
	if (newErr == nil) != (oldErr == nil) || newErr != nil && *newErr != *oldErr {
		tb.Fatalf("body %q:\nrefusal %+v\nwant    %+v", body, newErr, oldErr)
	}
	if !bytes.Equal(newChat, oldChat) {
		tb.Fatalf("body %q:\nchat body %s\nwant      %s", body, newChat, oldChat)
	}
	if newErr != nil {
		return
	}
	if nb.model != ob.model || nb.stream != ob.stream || nb.effort != ob.effort || !reflect.DeepEqual(nb.echo, ob.echo) {
		tb.Fatalf("body %q: recorded model %q stream %v effort %v echo %+v, want %q %v %v %+v", body,
			nb.model, nb.stream, nb.effort, nb.echo, ob.model, ob.stream, ob.effort, ob.echo)
	}
	if len(nb.msgs) != len(ob.msgs) {
		tb.Fatalf("body %q: %d messages recorded, want %d", body, len(nb.msgs), len(ob.msgs))
	}
	for i := range nb.msgs {
		// A message's content is in the chat body, compared above; what a refusal is named by
		// (clientTerms) is compared here.
		n, o := nb.msgs[i], ob.msgs[i]
		same := n.Role == o.Role && n.item == o.item && n.ToolCallID == o.ToolCallID &&
			n.ReasoningContent == o.ReasoningContent && len(n.ToolCalls) == len(o.ToolCalls)
		for j := 0; same && j < len(n.ToolCalls); j++ {
			nc, oc := n.ToolCalls[j], o.ToolCalls[j]
			same = nc.ID == oc.ID && nc.Type == oc.Type && nc.Function.Name == oc.Function.Name && nc.item == oc.item
		}
		if !same {
			tb.Fatalf("body %q: message %d recorded %+v, want %+v", body, i, n, o)
		}
	}
}

// responsesSeeds are bodies of every kind of input item and part the bridge takes and refuses,
// of tools, tool_choice, text and reasoning, and of the shapes a walk could read differently
// from encoding/json: escaped and case-folded keys, a member twice, null for a string, a value
// of the wrong type, white space everywhere.
func responsesSeeds() []string {
	items := []string{
		`"hello"`, `"\u00e9\n<b>&"`, `null`, `[]`, `5`, `{}`, `[1]`, `["x"]`,
		`[{"role":"user","content":"hi"}]`,
		`[{"role":"user","content":"a\u2028b<&>\u0041\/"}]`,
		`[{"type":"message","role":"developer","content":"be brief"},{"role":"system","content":[{"type":"input_text","text":"s2"}]},{"role":"user","content":"q"}]`,
		`[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b<"}]}]`,
		`[{"role":"user","content":[{"type":"input_text","text":"\u00e9\/ \u000a \ud83d\ude00"}]},{"role":"assistant","content":[{"type":"refusal","refusal":"\u0041\n"}]}]`,
		`[{"role":"user","content":[{"type":"input_text","text":"x","text":null}]},{"role":"user","content":[{"type":"input_text"}]},{"role":"user","content":[]}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{\"a\":\"\u00e9\/\"}"},{"type":"function_call_output","call_id":"c","output":"x"}]`,
		`[{"role":"assistant","content":[{"type":"output_text","text":"a"},{"type":"refusal","refusal":"no"}]}]`,
		`[{"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"https://x/a.png","detail":"low"}]}]`,
		`[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]`,
		`[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]`,
		`[{"role":"user","content":[{"type":"text","text":"t"}]}]`,
		`[{"role":"user","content":[{"type":"input_image","image_url":{"url":"https://x"}}]}]`,
		`[{"role":"user","content":[{"type":"input_text","text":5}]}]`,
		`[{"role":"user","content":[{"Type":"input_text","text":"x"}]}]`,
		`[{"role":"user","content":[5]}]`,
		`[{"role":"user","content":{"type":"input_text"}}]`,
		`[{"role":"user","content":5}]`,
		`[{"role":"user","content":null}]`,
		`[{"role":"user"}]`,
		`[{"role":"","content":"x"}]`,
		`[{"content":"x"}]`,
		`[{"role":"tool","content":"x"}]`,
		`[{"role":5,"content":"x"}]`,
		`[{"role":"user","content":"x","role":null}]`,
		`[{"role":"user","role":"assistant","content":"x"}]`,
		`[{"r\u006fle":"user","content":"x"}]`,
		`[{"Role":"user","content":"x"}]`,
		`[{"role":"user","content":"x","Content":"y"}]`,
		`[ { "role" : "user" , "content" : [ { "type" : "input_text" , "text" : "x" } ] } ]`,
		`[{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\": \"<b>\"}"},{"type":"function_call_output","call_id":"c1","output":"ok & done"}]`,
		`[{"role":"assistant","content":"let me"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"g","arguments":""},{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"a"},{"type":"output_text","text":"b"}]},{"type":"function_call_output","call_id":"c1","output":null}]`,
		`[{"type":"function_call","name":"f","arguments":"{}"}]`,
		`[{"type":"function_call","call_id":"c","arguments":"{}"}]`,
		`[{"type":"function_call","call_id":"c","name":"f"}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":null}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":{"a":1}}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}","arguments":null},{"type":"function_call_output","call_id":"c","output":"x"}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"1"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"2"}]`,
		`[{"type":"function_call_output","call_id":"nope","output":"x"}]`,
		`[{"type":"function_call_output","output":"x"}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"},{"type":"function_call_output","call_id":"c","output":"y"}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"x"}]}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_file","file_id":"x"}]}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"refusal","refusal":"x"}]}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":5}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":{"a":1}}]`,
		`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}","status":"completed","id":"fc_1"},{"type":"function_call_output","call_id":"c","output":"\u003c\ud83d\ude00"}]`,
		`[{"role":"user","content":"q"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"content":[{"type":"reasoning_text","text":"think"},{"type":"reasoning_text","text":"more"}],"encrypted_content":"xyz"},{"role":"assistant","content":"a"}]`,
		`[{"type":"reasoning","content":[{"type":"reasoning_text","text":"t1"}]},{"type":"reasoning","content":[{"type":"reasoning_text","text":"t2"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}]`,
		`[{"type":"reasoning","summary":"x"}]`,
		`[{"type":"reasoning","content":[{"type":"summary_text","text":"x"}]}]`,
		`[{"type":"reasoning","content":{"type":"reasoning_text"}}]`,
		`[{"type":"reasoning","summary":[{"type":"summary_text","text":5}]},{"role":"user","content":"x"}]`,
		`[{"type":"reasoning","content":[{"type":"reasoning_text","text":"lost"}]},{"role":"user","content":"x"}]`,
		`[{"type":"web_search_call","id":"ws"}]`,
		`[{"type":"item_reference","id":"msg_1"}]`,
		`[{"type":5}]`,
		`[{"type":"message","role":"user","content":"x","extra":{"deep":[1,2,{"a":"b"}]}}]`,
	}
	var bodies []string
	for _, in := range items {
		bodies = append(bodies, `{"model":"m","input":`+in+`}`)
	}
	const in = `"input":[{"role":"user","content":"x"}]`
	for _, rest := range []string{
		`"instructions":"be brief <b>"`, `"instructions":"\u00e9 \/ \u2028\n"`, `"instructions":""`, `"instructions":5`, `"instructions":null`,
		`"instructions":"sys","input":[{"role":"system","content":"s2"},{"role":"developer","content":[{"type":"input_text","text":"s3"}]},{"role":"user","content":"u"}]`,
		`"tools":[{"type":"function","name":"f","description":"d <&>","parameters":{ "type" : "object", "properties":{"a":{"type":"string","description":"\u003c\u2028"}}},"strict":true}]`,
		`"tools":[{"type":"function","name":"f","parameters":null},{"type":"function","name":"g","description":null,"strict":null}]`,
		`"tools":[{"type":"function","name":"f","parameters":{},"strict":false,"extra":1}]`,
		`"tools":[{"type":"web_search"}]`, `"tools":[{"type":"function"}]`, `"tools":{}`, `"tools":[5]`, `"tools":[{"type":"function","Name":"f"}]`,
		`"tools":[{"type":"function","name":"f","parameters":[1, 2]}]`, `"tools":[]`, `"tools":null`,
		`"tools":[{"type":"function","name":"f"}],"tool_choice":"auto"`,
		`"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}`,
		`"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}`,
		`"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"}]}`,
		`"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}`,
		`"tool_choice":{"type":"allowed_tools","mode":"x","tools":[]}`, `"tool_choice":{"type":"file_search"}`, `"tool_choice":5`,
		`"tool_choice":{"type":"function","Name":"f"}`,
		`"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"},"strict":true,"description":"d"}}`,
		`"text":{"format":{"type":"json_object"}}`, `"text":{"format":{"type":"text"}}`, `"text":{"format":{"type":"yaml"}}`, `"text":5`, `"text":{"verbosity":"low"}`,
		`"reasoning":{"effort":"high","summary":"auto"}`, `"reasoning":{"effort":null}`, `"reasoning":{"effort":5}`, `"reasoning":"high"`,
		`"stream":true`, `"stream":false`, `"stream":"yes"`, `"max_output_tokens":64`, `"max_output_tokens":null`,
		`"temperature":0.5,"top_p":1,"parallel_tool_calls":false,"user":"u","metadata":{"a":"b"},"max_tool_calls":3`,
		`"store":true,"include":["reasoning.encrypted_content"],"truncation":"disabled","prompt_cache_key":"k"`,
		`"include":["message.output_text.logprobs"]`, `"top_logprobs":2`, `"truncation":"auto"`, `"n":2`, `"messages":[]`,
		`"previous_response_id":"resp_1"`, `"background":true`, `"Instructions":"x"`, `"x-hayula-privacy":"strict","x-hayula-privacy":"default"`,
	} {
		bodies = append(bodies, `{"model":"m",`+in+`,`+rest+`}`, `{"model":"m",`+rest+`,`+in+`}`)
	}
	bodies = append(bodies, `{"model":"m"}`, `null`, `[]`, `{"model":"m","input":"x"} x`, `{"model":5,"input":"x"}`, " {\"input\" : \"x\" , \"model\" : \"m\"}\n",
		`{"model":"m","input":[{"role":"user","content":"\ud800 lone"}]}`, string(agentBody(2)),
		"{\"model\":\"m\",\"input\":\"bad \xff utf-8\"}", "{\"model\":\"m\",\"inp\xffut\":\"x\",\"input\":\"x\"}",
		`{"model":"m","input":"x","deep":`+strings.Repeat("[", 126)+strings.Repeat("]", 126)+`}`,
		`{"model":"m","input":"x","deep":`+strings.Repeat("[", 127)+strings.Repeat("]", 127)+`}`,
		`{"model":"m","input":"x","x":"\ud83d\ude00 \udc00"}`, `{"model":"m","input":"x",}`, `{"model":"m","input":"x"`)
	return bodies
}

// testBodyLiterals are the string literals of the server's test files that hold or could be a
// Responses body, or an input array or item in one: the bodies the other Responses tests send,
// each the oracle tests send to both translations too.
func testBodyLiterals(tb testing.TB) []string {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		tb.Fatal(err)
	}
	var bodies []string
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		fset := token.NewFileSet()
		var s scanner.Scanner
		s.Init(fset.AddFile(name, -1, len(src)), src, nil, 0)
		for {
			_, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.STRING {
				continue
			}
			v, err := strconv.Unquote(lit)
			if err != nil {
				continue
			}
			v = strings.TrimSpace(v)
			switch {
			case strings.HasPrefix(v, "{") && strings.Contains(v, `"input"`):
				bodies = append(bodies, v)
			case strings.HasPrefix(v, "[{"):
				bodies = append(bodies, `{"model":"m","input":`+v+`}`)
			case strings.HasPrefix(v, "{") && (strings.Contains(v, `"role"`) || strings.Contains(v, `"call_id"`)):
				bodies = append(bodies, `{"model":"m","input":[`+v+`]}`)
			}
		}
	}
	if len(bodies) < 100 {
		tb.Fatalf("%d bodies found in the test files; the scan is broken", len(bodies))
	}
	return bodies
}

// TestResponsesToChatMatchesOld: the bridge's translation gives what the one before the walk gave
// (oldToChat), for the seeds and for every body the server's tests hold.
func TestResponsesToChatMatchesOld(t *testing.T) {
	for _, body := range append(responsesSeeds(), testBodyLiterals(t)...) {
		sameAsOld(t, []byte(body))
	}
}

func FuzzResponsesToChatMatchesOld(f *testing.F) {
	for _, body := range append(responsesSeeds(), testBodyLiterals(f)...) {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsOld(t, body)
	})
}
