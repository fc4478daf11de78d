package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
