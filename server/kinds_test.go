package server

import (
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A chat field the gateway passes through is refused when its JSON kind is not the one OpenAI's
// API reference gives it, as OpenAI refuses it: 400 invalid_request_error naming the field. The
// gateway used to send such a body upstream. Each field is tried through the one-pass walk and,
// with an escaped key that walk leaves to encoding/json, through the fallback.
func TestWrongKindRefused(t *testing.T) {
	tests := []struct {
		field, value string
		code         string // invalid_type unless set
	}{
		{"tools", `{}`, ""},
		{"tools", `"f"`, ""},
		{"functions", `{}`, ""},
		{"tool_choice", `1`, ""},
		{"tool_choice", `["auto"]`, ""},
		{"function_call", `true`, ""},
		{"n", `"2"`, ""},
		{"n", `1.5`, ""},
		{"n", `2e0`, ""},
		{"n", `0`, "integer_below_min_value"},
		{"n", `-1`, "integer_below_min_value"},
		{"stream_options", `true`, ""},
		{"stream_options", `[]`, ""},
		{"stop", `1`, ""},
		{"stop", `{"a":1}`, ""},
		{"response_format", `"json_object"`, ""},
		{"response_format", `[]`, ""},
		{"seed", `"42"`, ""},
		{"logit_bias", `[1]`, ""},
		{"logit_bias", `"x"`, ""},
		{"user", `42`, ""},
		{"user", `{}`, ""},
		{"presence_penalty", `"0.5"`, ""},
		{"frequency_penalty", `true`, ""},
		{"temperature", `"hot"`, ""},
		{"top_p", `[1]`, ""},
		{"logprobs", `"true"`, ""},
		{"logprobs", `1`, ""},
		{"top_logprobs", `"5"`, ""},
		{"top_logprobs", `2.5`, ""},
		{"parallel_tool_calls", `"false"`, ""},
		{"store", `0`, ""},
		{"metadata", `[]`, ""},
		{"modalities", `"text"`, ""},
		{"audio", `"alloy"`, ""},
		{"prediction", `"x"`, ""},
		{"web_search_options", `true`, ""},
		{"reasoning_effort", `1`, ""},
		{"service_tier", `{}`, ""},
		{"verbosity", `[]`, ""},
		{"prompt_cache_key", `1`, ""},
		{"safety_identifier", `false`, ""},
		// The sampling fields the local servers add (Ollama, llama-server, vLLM, LM Studio), as
		// homelab clients send them in the body (TestOllamaSamplingOptions).
		{"top_k", `"40"`, ""},
		{"top_k", `40.5`, ""},
		{"top_k", `[40]`, ""},
		{"min_p", `"0.05"`, ""},
		{"min_p", `{}`, ""},
		{"repeat_penalty", `true`, ""},
		{"repeat_penalty", `"1.1"`, ""},
		{"max_tokens", `"9"`, ""},
		{"max_completion_tokens", `true`, ""},
	}
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	for _, tt := range tests {
		for _, key := range []string{tt.field, escapeFirst(tt.field)} {
			body := `{"model":"saif","messages":[{"role":"user","content":"hi"}],"` + key + `":` + tt.value + `}`
			t.Run(body, func(t *testing.T) {
				_, e := decodeChat(r, []byte(body), new(reqState), testNames)
				if e == nil {
					t.Fatal("accepted")
				}
				want := struct{ Status, Type, Param, Code string }{"400", typeInvalidRequest, tt.field, tt.code}
				if want.Code == "" {
					want.Code = "invalid_type"
				}
				got := struct{ Status, Type, Param, Code string }{strconv.Itoa(e.Status), e.Type, e.Param, e.Code}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("error %q (-want +got):\n%s", e.Message, diff)
				}
			})
		}
	}
}

// The kinds OpenAI allows, null included, still pass, by both ways.
func TestRightKindAccepted(t *testing.T) {
	for _, member := range []string{
		`"tools":[{"type":"function","function":{"name":"f"}}]`, `"tools":null`, `"tool_choice":"auto"`,
		`"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}`,
		`"function_call":"none"`, `"functions":[]`,
		`"n":1`, `"n":3`, `"n":null`, `"stream_options":{"include_usage":true}`, `"stop":"x"`, `"stop":["a","b"]`,
		`"stop":null`, `"response_format":{"type":"json_object"}`, `"seed":7`, `"logit_bias":{"50256":-100}`,
		`"user":"u"`, `"presence_penalty":0.5`, `"frequency_penalty":-1`, `"top_p":1`, `"logprobs":true`,
		`"logprobs":true,"top_logprobs":5`, `"top_logprobs":null`, `"parallel_tool_calls":false`, `"store":false`, `"metadata":{"a":"b"}`,
		`"modalities":["text"]`, `"audio":{"voice":"alloy","format":"wav"}`, `"prediction":{"type":"content","content":"x"}`,
		`"web_search_options":{}`, `"reasoning_effort":"low"`, `"service_tier":"auto"`, `"verbosity":"low"`,
		`"prompt_cache_key":"k"`, `"safety_identifier":"s"`, `"n_probs":"anything"`, `"N":"2"`,
		`"top_k":40`, `"top_k":-1`, `"top_k":40.0`, `"top_k":1e2`, `"top_k":null`, `"min_p":0.05`, `"min_p":0`, `"repeat_penalty":1.1`, `"repeat_penalty":1`,
		// openai-agents' LitellmModel sends the Responses shape when a reasoning summary is asked
		// for, and LiteLLM forwards it to an OpenAI-compatible base URL as it is.
		`"reasoning_effort":{"effort":"high","summary":"auto"}`,
	} {
		for _, body := range []string{
			`{"model":"saif","messages":[{"role":"user","content":"hi"}],` + member + `}`,
			`{"mod\u0065l":"saif","messages":[{"role":"user","content":"hi"}],` + member + `}`,
		} {
			t.Run(body, func(t *testing.T) {
				if _, e := decodeChat(httptest.NewRequest("POST", "/v1/chat/completions", nil), []byte(body),
					new(reqState), testNames); e != nil {
					t.Errorf("refused: %+v", *e)
				}
			})
		}
	}
}

// top_logprobs is OpenAI's only with logprobs true: without it the request is refused as OpenAI
// refuses it, whichever order the two come in and by both ways of decoding.
func TestTopLogprobsNeedsLogprobs(t *testing.T) {
	tests := []struct {
		members string
		refused bool
	}{
		{`"top_logprobs":2`, true},
		{`"top_logprobs":0`, false}, // asks for nothing; some clients send it by default
		{`"top_logprobs":1,"logprobs":false`, true},
		{`"top_logprobs":2,"logprobs":false`, true},
		{`"top_logprobs":2,"logprobs":null`, true},
		{`"logprobs":true,"top_logprobs":2`, false},
		{`"top_logprobs":2,"logprobs":true`, false},
		{`"top_logprobs":null`, false},
		{`"logprobs":false`, false},
	}
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	for _, tt := range tests {
		for _, model := range []string{`"model"`, `"mod\u0065l"`} {
			body := `{` + model + `:"saif","messages":[{"role":"user","content":"hi"}],` + tt.members + `}`
			t.Run(body, func(t *testing.T) {
				_, e := decodeChat(r, []byte(body), new(reqState), testNames)
				if !tt.refused {
					if e != nil {
						t.Fatalf("refused: %+v", *e)
					}
					return
				}
				if e == nil {
					t.Fatal("accepted")
				}
				want := struct{ Status, Type, Param, Code string }{"400", typeInvalidRequest, "top_logprobs", "invalid_value"}
				got := struct{ Status, Type, Param, Code string }{strconv.Itoa(e.Status), e.Type, e.Param, e.Code}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("error %q (-want +got):\n%s", e.Message, diff)
				}
			})
		}
	}
}

// escapeFirst spells the key's first letter as a \u escape: the same member to every JSON
// reader, which the one-pass walk leaves to encoding/json.
func escapeFirst(key string) string {
	return `\u00` + hex2(key[0]) + key[1:]
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// TestToolChoiceNoTargetCanHonour: a tool_choice that names no tool to call, or a mode OpenAI
// does not have, is refused before any target is asked, with OpenAI's status and a param; every
// target would otherwise answer it its own way. The modes that ask nothing of tools pass.
func TestToolChoiceNoTargetCanHonour(t *testing.T) {
	const f = `[{"type":"function","function":{"name":"f","parameters":{}}}]`
	for _, tc := range []struct {
		name, tools, choice string
		param               string // "" = accepted
	}{
		{"named, defined", f, `{"type":"function","function":{"name":"f"}}`, ""},
		{"named, defined among others", `[{"type":"function","function":{"name":"a"}},` + f[1:], `{"type":"function","function":{"name":"f"}}`, ""},
		{"named, not defined", f, `{"type":"function","function":{"name":"g"}}`, "tool_choice.function.name"},
		{"named, case differs", f, `{"type":"function","function":{"name":"F"}}`, "tool_choice.function.name"},
		{"named, no tools", ``, `{"type":"function","function":{"name":"f"}}`, "tool_choice"},
		{"named, empty tools", `[]`, `{"type":"function","function":{"name":"f"}}`, "tool_choice"},
		{"named, null tools", `null`, `{"type":"function","function":{"name":"f"}}`, "tool_choice"},
		{"required, tools", f, `"required"`, ""},
		{"required, no tools", ``, `"required"`, "tool_choice"},
		{"none, no tools", ``, `"none"`, ""},
		{"auto, no tools", ``, `"auto"`, ""},
		{"null", ``, `null`, ""},
		{"a mode OpenAI has not", f, `"any"`, "tool_choice"},
		{"allowed_tools: the targets judge", f, `{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f"}}]}}`, ""},
		{"custom: the targets judge", f, `{"type":"custom","custom":{"name":"c"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"saif","messages":[{"role":"user","content":"hi"}],"tool_choice":` + tc.choice
			if tc.tools != "" {
				body += `,"tools":` + tc.tools
			}
			body += `}`
			_, e := decodeChat(httptest.NewRequest("POST", "/v1/chat/completions", nil), []byte(body), new(reqState), testNames)
			switch {
			case tc.param == "" && e != nil:
				t.Fatalf("refused: %+v", *e)
			case tc.param != "" && e == nil:
				t.Fatal("accepted")
			case tc.param != "" && (e.Status != 400 || e.Type != "invalid_request_error" || e.Param != tc.param || e.Code != "invalid_value"):
				t.Fatalf("got %+v; want a 400 invalid_value for %s", *e, tc.param)
			}
		})
	}
}
