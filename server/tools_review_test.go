package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
)

// llamaServerNoJinja answers as llama-server started without --jinja: a body with tools, or with
// a tool_choice other than the string "auto", is refused (a runtime_error there, so a 500), and
// anything else is a completion.
func llamaServerNoJinja(name string) http.HandlerFunc {
	ok := okHandler(name)
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Tools      []json.RawMessage `json:"tools"`
			ToolChoice json.RawMessage   `json:"tool_choice"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		var choice string
		isString := json.Unmarshal(req.ToolChoice, &choice) == nil
		switch {
		case len(req.Tools) > 0:
			http.Error(w, `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`, http.StatusInternalServerError)
		case len(req.ToolChoice) > 0 && isString && choice != "auto":
			http.Error(w, `{"error":{"code":500,"message":"tool_choice param requires --jinja flag","type":"server_error"}}`, http.StatusInternalServerError)
		default:
			ok(w, r)
		}
	}
}

// TestToolChoiceWithoutToolsNotSentToATargetWithout: a target declared tools = false is sent no
// tool_choice, whether or not the request has tools: a client that sets tool_choice "none" on
// every request (openai-go's ToolChoice with no Tools sends it alone) offers the model nothing,
// and llama-server without --jinja answers any tool_choice but "auto" with a 500, which was
// retried and benched the target for a request it serves. (This test failed first: the
// tool_choice went on when the body had no tools, and the client got 502.)
func TestToolChoiceWithoutToolsNotSentToATargetWithout(t *testing.T) {
	up := newFake(t, "plain")
	up.set(llamaServerNoJinja("plain"))
	g := newGateway(t, target("plain", up.url(), "private", "tools = false")+"[routes.r]\ntargets = [\"plain\"]\n", nil)
	c := sdkClient(g, "unused")
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:      "r",
		Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: param.NewOpt("none")},
	})
	if err != nil {
		t.Fatalf("tool_choice none without tools: %v", err)
	}
	if sent := up.lastBody(t); sent["tool_choice"] != nil {
		t.Errorf("the target without tools got tool_choice: %v", sent)
	}
	for _, choice := range []string{
		`"none"`, `"\u006eone"`,
		`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`,
		`{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}`,
	} {
		for _, extra := range []string{``, `"parallel_tool_calls":false,`, `"tools":[],`, `"tools":null,`} {
			body := fmt.Sprintf(`{"model":"r",%s"tool_choice":%s,"messages":[{"role":"user","content":"x"}]}`, extra, choice)
			rep := g.post(t, "/v1/chat/completions", body)
			if rep.status != http.StatusOK || rep.header.Get("x-hayula-chain") != "plain" {
				t.Errorf("%s: %d %s", body, rep.status, rep.body)
				continue
			}
			sent := up.lastBody(t)
			for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls"} {
				if _, ok := sent[k]; ok {
					t.Errorf("%s: the target without tools got %s: %v", body, k, sent)
				}
			}
		}
	}
	// Through the Responses bridge, which passes tool_choice on in chat's shape.
	if rep := g.post(t, "/v1/responses", `{"model":"r","input":"hi","tool_choice":"none"}`); rep.status != http.StatusOK {
		t.Errorf("responses, tool_choice none without tools: %d %s", rep.status, rep.body)
	} else if _, ok := up.lastBody(t)["tool_choice"]; ok {
		t.Errorf("responses: the target without tools got tool_choice: %v", up.lastBody(t))
	}
}

// TestCustomToolsSkipOllama: a custom tool ({"type":"custom","custom":{…}}, free-form input
// rather than JSON arguments) is OpenAI's alone: Ollama's tools are functions, and given one it
// reads a function with no name, which the model cannot call, while a tool_choice naming the
// custom tool offered every tool. A request that offers one skips an ollama target, as the legacy
// functions do, so that an openai target serves it; a route with nothing else refuses it with
// 400 naming it. A request that offers none of them (tool_choice "none", or one naming a
// function tool, or an allowed_tools listing function tools alone) still reaches Ollama, without
// the custom tool. (This test failed first: the custom tool reached Ollama.)
func TestCustomToolsSkipOllama(t *testing.T) {
	oll, oai := newFake(t, "oll"), newFake(t, "oai")
	oll.set(ollamaAnswer)
	g := newGateway(t, "[targets.oll]\nadapter = \"ollama\"\nurl = \""+oll.srv.URL+"\"\nclass = \"private\"\nmodel = \"o\"\n\n"+
		target("oai", oai.url(), "private", `model = "m"`)+
		"[routes.olla]\ntargets = [\"oll\"]\n\n[routes.co]\ntargets = [\"oll\", \"oai\"]\n", nil)
	const tools = `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}},` +
		`{"type":"custom","custom":{"name":"c","description":"free-form"}}],`
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, choice := range []string{``, `"tool_choice":"auto",`, `"tool_choice":"required",`, `"tool_choice":null,`,
		`"tool_choice":{"type":"custom","custom":{"name":"c"}},`,
		`"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"custom","custom":{"name":"c"}},{"type":"function","function":{"name":"f"}}]}},`,
	} {
		before := oll.hits.Load()
		rep := g.post(t, "/v1/chat/completions", `{"model":"co",`+tools+choice+msgs+`}`)
		if rep.status != http.StatusOK || rep.header.Get("x-hayula-chain") != "oai" {
			t.Errorf("%s: %d chain %q: %s", choice, rep.status, rep.header.Get("x-hayula-chain"), rep.body)
		}
		rep = g.post(t, "/v1/chat/completions", `{"model":"olla",`+tools+choice+msgs+`}`)
		if rep.status != http.StatusBadRequest || rep.errorField(t, "code") != "unsupported_request" ||
			!strings.Contains(rep.errorField(t, "message").(string), "custom") {
			t.Errorf("%s, ollama alone: %d %s", choice, rep.status, rep.body)
		}
		if oll.hits.Load() != before {
			t.Errorf("%s: the ollama target was sent a custom tool: %s", choice, oll.lastBody(t)["tools"])
		}
	}
	for _, choice := range []string{`"tool_choice":"none",`,
		`"tool_choice":{"type":"function","function":{"name":"f"}},`,
		`"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"f"}}]}},`,
	} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"olla",`+tools+choice+msgs+`}`)
		if rep.status != http.StatusOK {
			t.Errorf("%s: %d %s", choice, rep.status, rep.body)
			continue
		}
		if sent, _ := json.Marshal(oll.lastBody(t)["tools"]); strings.Contains(string(sent), "custom") {
			t.Errorf("%s: the ollama target got the custom tool: %s", choice, sent)
		}
	}
}

// TestAllowedCustomToolIsOffered: an allowed_tools tool_choice that lists a custom tool alone
// offers that tool (mode "required" asks that it be called), so a target declared tools = false
// is passed by for a target with tools, which gets the tools and the tool_choice as sent, and
// skips an ollama target, which has no custom tools. (This test failed first: such a choice was
// read as offering none, and the target without tools was sent the request with its tools and
// tool_choice removed, answering in text where a call was required.) An empty list still
// offers none.
func TestAllowedCustomToolIsOffered(t *testing.T) {
	plain, oai, oll := newFake(t, "plain"), newFake(t, "oai"), newFake(t, "oll")
	oll.set(ollamaAnswer)
	g := newGateway(t, target("plain", plain.url(), "private", "tools = false")+target("oai", oai.url(), "private")+
		"[targets.oll]\nadapter = \"ollama\"\nurl = \""+oll.srv.URL+"\"\nclass = \"private\"\nmodel = \"o\"\n\n"+
		"[routes.r]\ntargets = [\"plain\", \"oll\", \"oai\"]\n", nil)
	const tools = `"tools":[{"type":"function","function":{"name":"f"}},{"type":"custom","custom":{"name":"apply_patch"}}],`
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, choice := range []string{
		`{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"custom","custom":{"name":"apply_patch"}}]}}`,
		`{"type":"allowed_tools","mode":"required","tools":[{"type":"custom","name":"apply_patch"}]}`,
	} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"r",`+tools+`"tool_choice":`+choice+`,`+msgs+`}`)
		if rep.status != http.StatusOK || rep.header.Get("x-hayula-chain") != "oai" {
			t.Errorf("%s: %d chain %q: %s", choice, rep.status, rep.header.Get("x-hayula-chain"), rep.body)
			continue
		}
		sent := oai.lastBody(t)
		if sent["tools"] == nil || sent["tool_choice"] == nil {
			t.Errorf("%s: the target with tools did not get them: %v", choice, sent)
		}
	}
	if n := plain.hits.Load() + oll.hits.Load(); n != 0 {
		t.Errorf("the targets that cannot call a custom tool were asked %d times", n)
	}
	rep := g.post(t, "/v1/chat/completions", `{"model":"r",`+tools+`"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}},`+msgs+`}`)
	if rep.status != http.StatusOK || rep.header.Get("x-hayula-chain") != "plain" {
		t.Errorf("an empty allowed_tools: %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
	}
}

// TestFunctionsWithCallNoneNotSentToATargetWithout: the legacy functions with function_call
// "none" offer nothing, as tools with tool_choice "none" do: a target declared tools = false may
// serve the request, and is sent it without functions and function_call; with function_call
// "auto", a name or none at all it is passed by. (This test failed first: the request was refused
// 400, the target dropped by the tools filter.)
func TestFunctionsWithCallNoneNotSentToATargetWithout(t *testing.T) {
	up := newFake(t, "plain")
	up.set(llamaServerNoJinja("plain"))
	g := newGateway(t, target("plain", up.url(), "private", "tools = false")+"[routes.r]\ntargets = [\"plain\"]\n", nil)
	const functions = `"functions":[{"name":"f","parameters":{"type":"object"}}],`
	const msgs = `"messages":[{"role":"user","content":"x"}]`
	for _, call := range []string{`"function_call":"none",`, `"function_call":"\u006eone",`} {
		rep := g.post(t, "/v1/chat/completions", `{"model":"r",`+functions+call+msgs+`}`)
		if rep.status != http.StatusOK || rep.header.Get("x-hayula-chain") != "plain" {
			t.Errorf("%s: %d %s", call, rep.status, rep.body)
			continue
		}
		sent := up.lastBody(t)
		for _, k := range []string{"functions", "function_call"} {
			if _, ok := sent[k]; ok {
				t.Errorf("%s: the target without tools got %s: %v", call, k, sent)
			}
		}
	}
	for _, call := range []string{``, `"function_call":"auto",`, `"function_call":{"name":"f"},`} {
		if rep := g.post(t, "/v1/chat/completions", `{"model":"r",`+functions+call+msgs+`}`); rep.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", call, rep.status, rep.body)
		}
	}
}
