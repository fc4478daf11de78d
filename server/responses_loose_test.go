package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesToolOutputParts: a function_call_output whose output is an array of parts goes on
// as its texts; an image or a file in it is refused, naming the part, where the bridge once
// dropped it and sent the model the text alone, as if the tool had returned no image.
func TestResponsesToolOutputParts(t *testing.T) {
	g, up := oneTarget(t)
	const head = `{"model":"r","input":[{"role":"user","content":"look"},` +
		`{"type":"function_call","call_id":"call_1","name":"shot","arguments":"{}"},` +
		`{"type":"function_call","call_id":"call_2","name":"shot","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"first"},` +
		`{"type":"function_call_output","call_id":"call_2","output":`
	for _, tc := range []struct{ name, output, param string }{
		{"image", `[{"type":"input_text","text":"the screen:"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]`, "input[4].output[1]"},
		{"image by file id", `[{"type":"input_image","file_id":"file_1"}]`, "input[4].output[0]"},
		{"file", `[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"},{"type":"input_file","file_data":"data:application/pdf;base64,AAAA","filename":"x.pdf"}]`, "input[4].output[2]"},
		{"unknown part", `[{"type":"input_audio"}]`, "input[4].output[0].type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", head+tc.output+`}]}`)
			if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != tc.param ||
				rep.errorField(t, "type") != "invalid_request_error" {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("upstream asked %d times", n)
	}
	rep := g.post(t, "/v1/responses", head+`[{"type":"input_text","text":"two "},{"type":"input_text","text":"parts"}]}]}`)
	if rep.status != http.StatusOK {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	msgs := upstreamMessages(t, up)
	want := []any{
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "first"},
		map[string]any{"role": "tool", "tool_call_id": "call_2", "content": "two parts"},
	}
	if d := cmp.Diff(want, msgs[len(msgs)-2:]); d != "" {
		t.Errorf("tool messages (-want +got):\n%s", d)
	}
}

// TestResponsesNotStored: the gateway keeps no responses, so every endpoint that would read one
// answers an OpenAI-shaped 404 that says so, where they answered unknown_url as if the API had
// no such endpoint; a key is still checked first. A POST that asks for store: true (OpenAI's
// default, which the SDK leaves to the server by sending nothing) is served, and its answer says
// "store": false, which the 404 of a GET then agrees with.
func TestResponsesNotStored(t *testing.T) {
	g, _ := keyed(t)
	auth := []string{"Authorization", "Bearer " + laptopKey}
	rep := g.post(t, "/v1/responses", `{"model":"saif","input":"hi","store":true}`, auth...)
	if rep.status != http.StatusOK || rep.json(t)["store"] != false {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	id, _ := rep.json(t)["id"].(string)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/responses/" + id},
		{"HEAD", "/v1/responses/" + id},
		{"DELETE", "/v1/responses/" + id},
		{"GET", "/v1/responses/" + id + "/input_items"},
		{"POST", "/v1/responses/" + id + "/cancel"},
	} {
		t.Run(tc.method+" "+strings.Replace(tc.path, id, "{id}", 1), func(t *testing.T) {
			if rep := g.do(t, tc.method, tc.path, ""); rep.status != http.StatusUnauthorized {
				t.Fatalf("without a key: %d %s", rep.status, rep.body)
			}
			rep := g.do(t, tc.method, tc.path, "", auth...)
			if rep.status != http.StatusNotFound {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
			if tc.method == "HEAD" {
				return
			}
			if c := rep.errorField(t, "code"); c != "response_not_found" {
				t.Errorf("code %v: %s", c, rep.body)
			}
			if msg, _ := rep.errorField(t, "message").(string); !strings.Contains(msg, id) || !strings.Contains(msg, "stores no responses") {
				t.Errorf("message %q", msg)
			}
		})
	}
	c := sdkClient(g, laptopKey)
	_, err := c.Responses.Get(context.Background(), id, responses.ResponseGetParams{})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusNotFound || oe.Code != "response_not_found" {
		t.Fatalf("SDK Get: %v", err)
	}
}

// TestExplainResponsesBody: POST /v1/route/explain takes the body of a POST /v1/responses as it
// takes a chat body (a body with "input" and no "messages" is a Responses body), and decides as
// the real call does: the filters see the chat request the bridge builds. Explain once refused
// such a body for its missing messages.
func TestExplainResponsesBody(t *testing.T) {
	noTools, public, private := newFake(t, "no-tools"), newFake(t, "public"), newFake(t, "private")
	g := newGateway(t, target("no-tools", noTools.url(), "private", "tools = false")+
		target("public", public.url(), "public")+target("private", private.url(), "private")+`
[routes.r]
targets = ["no-tools", "public", "private"]

[routes.open]
targets = ["no-tools", "public"]
`, nil)
	const tools = `"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]`
	for _, tc := range []struct {
		name, body string
		hdr        []string
		first      string // the target the call is served by; "" when it is refused
	}{
		{"plain", `{"model":"r","input":"hi"}`, nil, "no-tools"},
		{"tools", `{"model":"r","input":"hi",` + tools + `}`, nil, "public"},
		{"tools, strict in the body", `{"model":"r","input":"hi","x-hayula-privacy":"strict",` + tools + `}`, nil, "private"},
		{"tools, strict in a header", `{"model":"r","input":[{"role":"user","content":"hi"}],` + tools + `}`,
			[]string{"x-hayula-privacy", "strict"}, "private"},
		{"nothing left", `{"model":"open","input":"hi","x-hayula-privacy":"strict",` + tools + `}`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := g.post(t, "/v1/route/explain", tc.body, tc.hdr...)
			if x.status != http.StatusOK {
				t.Fatalf("explain: %d %s", x.status, x.body)
			}
			var ex struct {
				Order []string `json:"order"`
				Error *struct {
					Status int    `json:"status"`
					Code   string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(x.body, &ex); err != nil {
				t.Fatal(err)
			}
			rep := g.post(t, "/v1/responses", tc.body, tc.hdr...)
			if tc.first == "" {
				if ex.Error == nil || rep.status != ex.Error.Status || rep.errorField(t, "code") != ex.Error.Code {
					t.Fatalf("explain %s; the call: %d %s", x.body, rep.status, rep.body)
				}
				return
			}
			chain := rep.header.Get("X-Hayula-Chain")
			if rep.status != http.StatusOK || chain != tc.first || ex.Error != nil || len(ex.Order) == 0 || ex.Order[0] != chain {
				t.Fatalf("explain %s; the call: %d chain %q %s", x.body, rep.status, chain, rep.body)
			}
		})
	}
}

// TestResponsesAllowedTools: a Responses tool_choice of type allowed_tools goes on in chat's
// shape (its mode and tools under "allowed_tools", each name under "function"), which every
// adapter reads, where the bridge refused it.
func TestResponsesAllowedTools(t *testing.T) {
	g, up := oneTarget(t)
	const tools = `"tools":[{"type":"function","name":"f"},{"type":"function","name":"g"}]`
	rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi",`+tools+
		`,"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"g"}]}}`)
	if rep.status != http.StatusOK {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	want := map[string]any{"type": "allowed_tools", "allowed_tools": map[string]any{"mode": "required",
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "g"}}}}}
	if d := cmp.Diff(want, up.lastBody(t)["tool_choice"]); d != "" {
		t.Errorf("upstream tool_choice (-want +got):\n%s", d)
	}
	for _, tc := range []struct{ name, choice, param string }{
		{"a tool not a function", `{"type":"allowed_tools","mode":"auto","tools":[{"type":"web_search"}]}`, "tool_choice.tools[0]"},
		{"a nameless function", `{"type":"allowed_tools","mode":"auto","tools":[{"type":"function"}]}`, "tool_choice.tools[0]"},
		{"a bad mode", `{"type":"allowed_tools","mode":"sometimes","tools":[{"type":"function","name":"g"}]}`, "tool_choice.mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi",`+tools+`,"tool_choice":`+tc.choice+`}`)
			if rep.status != http.StatusBadRequest || rep.errorField(t, "param") != tc.param {
				t.Fatalf("%d %s", rep.status, rep.body)
			}
		})
	}
}
