package upstream

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
)

// TestOllamaParams holds the ollama adapter's /api/chat body to CONFIG.md's table for each
// OpenAI chat parameter a client may send: translated, or left out where it asks nothing of
// the answer. Zero values (temperature 0, seed 0) are values, and null is the parameter unsent.
func TestOllamaParams(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	const head = `{"model":"llama3.2","messages":[{"role":"user","content":"x"}]`
	tests := []struct {
		name, params string
		want         string // the /api/chat body after its messages
	}{
		{"temperature 0 is kept", `"temperature":0`, `,"options":{"temperature":0},"stream":false,"truncate":false}`},
		{"seed 0 is kept", `"seed":0`, `,"options":{"seed":0},"stream":false,"truncate":false}`},
		{"top_p", `"top_p":0.5`, `,"options":{"top_p":0.5},"stream":false,"truncate":false}`},
		{"nulls are unsent", `"temperature":null,"top_p":null,"seed":null,"stop":null,"n":null,"max_tokens":null,` +
			`"max_completion_tokens":null,"frequency_penalty":null,"presence_penalty":null,"reasoning_effort":null,"response_format":null`,
			`,"stream":false,"truncate":false}`},
		{"stop as a string is a list", `"stop":"END"`, `,"options":{"stop":["END"]},"stream":false,"truncate":false}`},
		{"stop as an array", `"stop":["a","b"]`, `,"options":{"stop":["a","b"]},"stream":false,"truncate":false}`},
		{"max_completion_tokens alone", `"max_completion_tokens":7`, `,"options":{"num_predict":7},"stream":false,"truncate":false}`},
		{"max_tokens alone", `"max_tokens":9`, `,"options":{"num_predict":9},"stream":false,"truncate":false}`},
		{"json_object", `"response_format":{"type":"json_object"}`, `,"format":"json","stream":false,"truncate":false}`},
		{"harmless fields are left out", `"user":"u","metadata":{"a":"b"},"store":true,"service_tier":"auto",` +
			`"prediction":{"type":"content","content":"x"},"parallel_tool_calls":false,"n":1,"logit_bias":{},"modalities":["text"]`,
			`,"stream":false,"truncate":false}`},
		// Ollama's think, as Ollama's own OpenAI endpoint maps reasoning_effort: a level, or false
		// for none. minimal, xhigh and max (openai-go v3's levels) are the nearest level Ollama knows.
		{"reasoning_effort none is think false", `"reasoning_effort":"none"`, `,"stream":false,"truncate":false,"think":false}`},
		{"reasoning_effort minimal is think low", `"reasoning_effort":"minimal"`, `,"stream":false,"truncate":false,"think":"low"}`},
		{"reasoning_effort low", `"reasoning_effort":"low"`, `,"stream":false,"truncate":false,"think":"low"}`},
		{"reasoning_effort medium", `"reasoning_effort":"medium"`, `,"stream":false,"truncate":false,"think":"medium"}`},
		{"reasoning_effort high", `"reasoning_effort":"high"`, `,"stream":false,"truncate":false,"think":"high"}`},
		{"reasoning_effort xhigh is think high", `"reasoning_effort":"xhigh"`, `,"stream":false,"truncate":false,"think":"high"}`},
		{"reasoning_effort max is think high", `"reasoning_effort":"max"`, `,"stream":false,"truncate":false,"think":"high"}`},
		{"reasoning_effort as an object", `"reasoning_effort":{"effort":"high","summary":"auto"}`, `,"stream":false,"truncate":false,"think":"high"}`},
		{"reasoning_effort object without an effort", `"reasoning_effort":{"summary":"auto"}`, `,"stream":false,"truncate":false}`},
		// OpenRouter's reasoning object, which Ollama's own OpenAI endpoint reads before
		// reasoning_effort, and which Open WebUI sends in place of reasoning_effort
		// (TestOllamaReasoningObjectAndThink).
		{"reasoning.effort none is think false", `"reasoning":{"effort":"none"}`, `,"stream":false,"truncate":false,"think":false}`},
		{"reasoning.effort a level", `"reasoning":{"effort":"low","summary":"auto"}`, `,"stream":false,"truncate":false,"think":"low"}`},
		{"reasoning.effort before reasoning_effort", `"reasoning_effort":"high","reasoning":{"effort":"minimal"}`, `,"stream":false,"truncate":false,"think":"low"}`},
		{"reasoning without an effort", `"reasoning":{"max_tokens":100},"reasoning_effort":"medium"`, `,"stream":false,"truncate":false,"think":"medium"}`},
		{"reasoning null", `"reasoning":null`, `,"stream":false,"truncate":false}`},
		// The reasoning object's other switches (TestOllamaReasoningSwitches): enabled false is
		// off before anything; enabled true or a max_tokens is on, at the level the other fields
		// give, or true.
		{"reasoning.enabled false is think false", `"reasoning":{"enabled":false}`, `,"stream":false,"truncate":false,"think":false}`},
		{"reasoning.enabled true is think true", `"reasoning":{"enabled":true}`, `,"stream":false,"truncate":false,"think":true}`},
		{"reasoning.max_tokens is think true", `"reasoning":{"max_tokens":2000}`, `,"stream":false,"truncate":false,"think":true}`},
		{"reasoning.max_tokens 0 says nothing", `"reasoning":{"max_tokens":0}`, `,"stream":false,"truncate":false}`},
		{"reasoning.enabled false before its effort", `"reasoning":{"effort":"high","enabled":false}`, `,"stream":false,"truncate":false,"think":false}`},
		{"reasoning.enabled false before reasoning_effort", `"reasoning":{"enabled":false},"reasoning_effort":"high"`, `,"stream":false,"truncate":false,"think":false}`},
		{"reasoning.enabled true at its effort", `"reasoning":{"enabled":true,"effort":"low"}`, `,"stream":false,"truncate":false,"think":"low"}`},
		{"reasoning.enabled true at think's level", `"reasoning":{"enabled":true},"think":"high"`, `,"stream":false,"truncate":false,"think":"high"}`},
		{"reasoning.enabled true over think false", `"reasoning":{"enabled":true},"think":false`, `,"stream":false,"truncate":false,"think":true}`},
		{"reasoning.max_tokens over reasoning_effort none", `"reasoning":{"max_tokens":100},"reasoning_effort":"none"`, `,"stream":false,"truncate":false,"think":true}`},
		{"reasoning.exclude alone says nothing of think", `"reasoning":{"exclude":true},"think":"medium"`, `,"stream":false,"truncate":false,"think":"medium"}`},
		// Ollama's own think, at the top as Open WebUI's "think (Ollama)" setting sends it to an
		// OpenAI connection: as written, unless reasoning_effort or reasoning says otherwise.
		{"think false", `"think":false`, `,"stream":false,"truncate":false,"think":false}`},
		{"think true", `"think":true`, `,"stream":false,"truncate":false,"think":true}`},
		{"think a level", `"think":"medium"`, `,"stream":false,"truncate":false,"think":"medium"}`},
		{"think null", `"think":null`, `,"stream":false,"truncate":false}`},
		// The levels Ollama added for its thinking budgets, sent as written: an Ollama before them
		// refuses them, and the chain moves on (TestOllamaOlderThinkLevelIsTheTargets).
		{"think max", `"think":"max"`, `,"stream":false,"truncate":false,"think":"max"}`},
		{"think minimal", `"think":"minimal"`, `,"stream":false,"truncate":false,"think":"minimal"}`},
		{"reasoning_effort before think", `"think":true,"reasoning_effort":"none"`, `,"stream":false,"truncate":false,"think":false}`},
		// vLLM's and llama-server's switch for Qwen3's thinking, which clients set in
		// chat_template_kwargs (Open WebUI's custom parameters, LiteLLM's extra_body): the same
		// setting, last of all.
		{"enable_thinking false", `"chat_template_kwargs":{"enable_thinking":false}`, `,"stream":false,"truncate":false,"think":false}`},
		{"enable_thinking true", `"chat_template_kwargs":{"enable_thinking":true,"preserve_thinking":false}`, `,"stream":false,"truncate":false,"think":true}`},
		{"think before enable_thinking", `"chat_template_kwargs":{"enable_thinking":false},"think":"high"`, `,"stream":false,"truncate":false,"think":"high"}`},
		{"reasoning_effort before enable_thinking", `"chat_template_kwargs":{"enable_thinking":true},"reasoning_effort":"none"`, `,"stream":false,"truncate":false,"think":false}`},
		{"enable_thinking not a boolean", `"chat_template_kwargs":{"enable_thinking":"no"}`, `,"stream":false,"truncate":false}`},
		{"thinking, DeepSeek V3.1's switch", `"chat_template_kwargs":{"thinking":true}`, `,"stream":false,"truncate":false,"think":true}`},
		{"thinking false", `"chat_template_kwargs":{"thinking":false}`, `,"stream":false,"truncate":false,"think":false}`},
		{"enable_thinking before thinking", `"chat_template_kwargs":{"enable_thinking":false,"thinking":true}`, `,"stream":false,"truncate":false,"think":false}`},
		{"thinking not a boolean", `"chat_template_kwargs":{"thinking":"on"}`, `,"stream":false,"truncate":false}`},
		{"other template arguments", `"chat_template_kwargs":{"preserve_thinking":true}`, `,"stream":false,"truncate":false}`},
		{"enable_thinking spelled otherwise", `"chat_template_kwargs":{"Enable_Thinking":false}`, `,"stream":false,"truncate":false}`},
		// The sampling fields Ollama adds, which homelab clients send in the body (as LiteLLM's
		// extra parameters): options, or keep_alive at the top (TestOllamaSamplingOptions).
		{"top_k", `"top_k":40`, `,"options":{"top_k":40},"stream":false,"truncate":false}`},
		{"top_k a whole number written otherwise", `"top_k":4.0e1`, `,"options":{"top_k":40},"stream":false,"truncate":false}`},
		{"min_p and repeat_penalty", `"min_p":0.05,"repeat_penalty":1.1`, `,"options":{"min_p":0.05,"repeat_penalty":1.1},"stream":false,"truncate":false}`},
		{"top_k 0 and min_p 0 are values", `"top_k":0,"min_p":0`, `,"options":{"top_k":0,"min_p":0},"stream":false,"truncate":false}`},
		{"beside the OpenAI options", `"temperature":0.7,"top_k":20,"top_p":0.8`,
			`,"options":{"temperature":0.7,"top_p":0.8,"top_k":20},"stream":false,"truncate":false}`},
		{"keep_alive a duration", `"keep_alive":"10m"`, `,"stream":false,"truncate":false,"keep_alive":"10m"}`},
		{"keep_alive seconds", `"keep_alive":300`, `,"stream":false,"truncate":false,"keep_alive":300}`},
		{"keep_alive -1 keeps the model loaded", `"keep_alive":-1`, `,"stream":false,"truncate":false,"keep_alive":-1}`},
		{"keep_alive 0 unloads after the answer", `"keep_alive":"0"`, `,"stream":false,"truncate":false,"keep_alive":"0"}`},
		{"Ollama-only nulls are unsent", `"top_k":null,"min_p":null,"repeat_penalty":null,"keep_alive":null,"num_ctx":null`, `,"stream":false,"truncate":false}`},
		// num_ctx is the target's context_window, which the gateway filters by; a client's would
		// run the model with another window than the one the prompt was found to fit.
		{"a client's num_ctx is not sent", `"num_ctx":2048`, `,"stream":false,"truncate":false}`},
		// Ollama's own options object, as a script moved from /api/chat, LiteLLM's extra_body or
		// Open WebUI's custom parameters send it (TestOllamaNativeOptions): merged with what the
		// gateway sets from OpenAI's fields, which win where both name an option.
		{"options", `"options":{"num_ctx":4096,"mirostat":2,"top_k":20,"stop":["x"]}`,
			`,"options":{"num_ctx":4096,"mirostat":2,"top_k":20,"stop":["x"]},"stream":false,"truncate":false}`},
		{"OpenAI's fields win over options", `"temperature":0.7,"max_tokens":5,"options":{"temperature":0.1,"num_predict":9,"repeat_last_n":64}`,
			`,"options":{"temperature":0.7,"num_predict":5,"repeat_last_n":64},"stream":false,"truncate":false}`},
		{"the top-level sampling fields win over options", `"top_k":40,"options":{"top_k":10,"min_p":0.1}`,
			`,"options":{"top_k":40,"min_p":0.1},"stream":false,"truncate":false}`},
		{"options fill what OpenAI's fields leave", `"temperature":null,"options":{"temperature":0.2,"seed":0}`,
			`,"options":{"temperature":0.2,"seed":0},"stream":false,"truncate":false}`},
		{"runner options are not sent", `"options":{"num_gpu":0,"num_thread":4,"use_mmap":false,"num_batch":8,"main_gpu":1,` +
			`"low_vram":true,"use_mlock":true,"numa":true,"seed":3}`, `,"options":{"seed":3},"stream":false,"truncate":false}`},
		{"option nulls are unsent", `"options":{"temperature":null,"num_gpu":1}`, `,"stream":false,"truncate":false}`},
		{"options null or empty", `"options":null`, `,"stream":false,"truncate":false}`},
		{"options empty", `"options":{}`, `,"stream":false,"truncate":false}`},
		{"an option Ollama may know later goes as written", `"options":{"future_knob":[1,{"a":2}]}`,
			`,"options":{"future_knob":[1,{"a":2}]},"stream":false,"truncate":false}`},
		// Ollama's own format, used when response_format asks for no format.
		{"format json", `"format":"json"`, `,"format":"json","stream":false,"truncate":false}`},
		{"format a schema", `"format":{"type":"object","properties":{"a":{"type":"string"}}}`,
			`,"format":{"type":"object","properties":{"a":{"type":"string"}}},"stream":false,"truncate":false}`},
		{"format empty is unsent", `"format":""`, `,"stream":false,"truncate":false}`},
		{"format null is unsent", `"format":null`, `,"stream":false,"truncate":false}`},
		{"response_format before format", `"format":{"type":"object"},"response_format":{"type":"json_object"}`,
			`,"format":"json","stream":false,"truncate":false}`},
		{"format beside response_format text", `"response_format":{"type":"text"},"format":"json"`,
			`,"format":"json","stream":false,"truncate":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
			req := chatRequestOf(t, `{`+msgs+`,`+tt.params+`}`)
			out, err := a.translate(req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(head+tt.want, string(appendOllamaRequest(nil, out))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestOllamaContextWindowNotTheClients: the num_ctx sent is the target's context_window
// whatever num_ctx the client asks for, smaller or larger: a smaller one would cut the start of
// a prompt the context filter let through because it fits the window, a larger one take memory
// the operator did not give the model, and either reload the model for every other client.
func TestOllamaContextWindowNotTheClients(t *testing.T) {
	for _, body := range []string{`"num_ctx":2048`, `"num_ctx":131072`, `"num_ctx":"big"`,
		`"options":{"num_ctx":2048}`, `"options":{"num_ctx":131072}`, `"num_ctx":4096,"options":{"num_ctx":2048}`} {
		tg := ollamaTarget("http://127.0.0.1:1")
		tg.ContextWindow = 8192
		a := &openaiOllama{t: tg, newID: func() string { return "x" }}
		out, err := a.translate(chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],`+body+`}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(mustJSON(out.Options)); got != `{"num_ctx":8192}` {
			t.Errorf("%s: options %s, want the target's window", body, got)
		}
	}
}

// TestOllamaSamplingRefused: an Ollama-only field Ollama would refuse, or read as something
// else, is the client's mistake, refused naming it before anything is sent. The server has
// checked top_k, min_p and repeat_penalty's kinds (TestWrongKindRefused); what is left is a value
// out of range. keep_alive, which only Ollama reads, is checked here whole.
func TestOllamaSamplingRefused(t *testing.T) {
	for _, tt := range []struct{ field, value, code string }{
		{"keep_alive", `"soon"`, "invalid_value"},
		{"keep_alive", `"5"`, "invalid_value"}, // Ollama reads a string as a Go duration: "5" has no unit
		{"keep_alive", `""`, "invalid_value"},
		{"keep_alive", `true`, "invalid_type"},
		{"keep_alive", `{"m":5}`, "invalid_type"},
		{"keep_alive", `1e300`, "invalid_value"},
		{"top_k", `99999999999999999999`, "invalid_value"},
		{"top_k", `1e30`, "invalid_value"},
		{"min_p", `1e400`, "invalid_value"},
		{"repeat_penalty", `-1e400`, "invalid_value"},
		// Ollama's options and format (TestOllamaNativeOptions): a kind Ollama cannot load is a
		// 500 from it (its options error is no 400), which would count against a sound target.
		{"options", `[{"top_k":1}]`, "invalid_type"},
		{"options", `"top_k=1"`, "invalid_type"},
		{"options.top_k", `"40"`, "invalid_type"},
		{"options.temperature", `true`, "invalid_type"},
		{"options.penalize_newline", `1`, "invalid_type"},
		{"options.stop", `"END"`, "invalid_type"},
		{"options.stop", `["a",1]`, "invalid_type"},
		{"options.num_ctx", `{}`, "invalid_type"},
		{"options.stop", `["a",null]`, "invalid_type"},
		{"format", `"yaml"`, "invalid_value"},
		{"format", `"JSON"`, "invalid_value"},
		{"format", `5`, "invalid_type"},
		{"format", `["json"]`, "invalid_type"},
		{"format", `true`, "invalid_type"},
	} {
		a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
		member := `"` + tt.field + `":` + tt.value
		if name, ok := strings.CutPrefix(tt.field, "options."); ok {
			member = `"options":{"` + name + `":` + tt.value + `}`
		}
		_, err := a.translate(chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],`+member+`}`))
		var se *core.StatusError
		if !errors.As(err, &se) || se.Status != 400 || se.Param != tt.field || se.Code != tt.code {
			t.Errorf("%s %s: %#v, want 400 %s at %s", tt.field, tt.value, err, tt.code, tt.field)
		}
	}
}

// TestOllamaReasoningObjectAndThink: reasoning.effort and think, which the ollama adapter
// dropped (a client that turned thinking off got a model that thought as its default says), are
// refused as reasoning_effort is when Ollama has no level for them, naming the field.
func TestOllamaReasoningObjectAndThink(t *testing.T) {
	for _, tt := range []struct{ body, param, code string }{
		{`"reasoning":{"effort":"lots"}`, "reasoning.effort", "invalid_value"},
		{`"reasoning":{"effort":7}`, "reasoning.effort", "invalid_value"},
		{`"think":"lots"`, "think", "invalid_value"},
		{`"think":"none"`, "think", "invalid_value"},
		{`"think":"xhigh"`, "think", "invalid_value"},
		{`"reasoning":{"enabled":"yes"}`, "reasoning.enabled", "invalid_type"},
		{`"reasoning":{"max_tokens":"many"}`, "reasoning.max_tokens", "invalid_type"},
		{`"reasoning":{"exclude":1}`, "reasoning.exclude", "invalid_type"},
		{`"think":0`, "think", "invalid_value"},
		{`"think":[1024]`, "think", "invalid_type"},
		{`"think":{}`, "think", "invalid_type"},
	} {
		a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
		_, err := a.translate(chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],`+tt.body+`}`))
		var se *core.StatusError
		if !errors.As(err, &se) || se.Status != 400 || se.Param != tt.param || se.Code != tt.code {
			t.Errorf("%s: %#v, want 400 %s at %s", tt.body, err, tt.code, tt.param)
		}
	}
}

// TestOllamaReasoningEffortRefused: a reasoning_effort Ollama has no level for is the client's
// mistake, refused naming the field, as OpenAI and Ollama's own endpoint refuse it; sent on as
// nothing, the model would think as it likes.
func TestOllamaReasoningEffortRefused(t *testing.T) {
	for _, v := range []string{`"extreme"`, `""`, `{"effort":"lots"}`} {
		a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
		_, err := a.translate(chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"reasoning_effort":`+v+`}`))
		var se *core.StatusError
		if !errors.As(err, &se) || se.Status != 400 || se.Param != "reasoning_effort" || se.Code != "invalid_value" {
			t.Errorf("%s: %#v, want 400 invalid_value at reasoning_effort", v, err)
		}
	}
}

// TestOllamaReasoningObjectKeysAsSpelled: the reasoning object's members are read as OpenRouter,
// and the server for every adapter (core.Request.HideReasoning), read them: by their exact
// names, the last of a name winning. encoding/json's match of another case ("Exclude",
// "Enabled") hid the thinking, or turned it off, on an ollama target alone, while an openai or
// saif target of the same route served the request as it was written.
func TestOllamaReasoningObjectKeysAsSpelled(t *testing.T) {
	for _, tt := range []struct {
		reasoning string
		think     string // as sent, "" for none
		hide      bool
	}{
		{`{"Exclude":true}`, "", false},
		{`{"Enabled":false}`, "", false},
		{`{"MAX_TOKENS":100}`, "", false},
		{`{"Effort":"low"}`, "", false},
		{`{"exclude":true,"Exclude":false}`, "", true},
		{`{"enabled":false,"Enabled":true}`, "false", false},
		{`{"effort":"low","exclude":false,"exclude":true}`, `"low"`, true},
		{`{"ex\u0063lude":true,"max_tokens":10}`, "true", true},
	} {
		a := &openaiOllama{t: ollamaTarget("http://127.0.0.1:1"), newID: func() string { return "x" }}
		out, err := a.translate(chatRequestOf(t, `{"messages":[{"role":"user","content":"x"}],"reasoning":`+tt.reasoning+`}`))
		if err != nil {
			t.Fatalf("%s: %v", tt.reasoning, err)
		}
		if string(out.Think) != tt.think || out.hideThinking != tt.hide {
			t.Errorf("%s: think %s, hide %v; want %s, %v", tt.reasoning, out.Think, out.hideThinking, tt.think, tt.hide)
		}
	}
}
