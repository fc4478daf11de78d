package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResponsesEchoMaxToolCalls: a response object repeats the request's max_tool_calls, as
// OpenAI's does (null when it was not sent, or sent null), whole and in the streamed
// response.created and response.completed; truncation is echoed "disabled", the only value the
// bridge takes.
func TestResponsesEchoMaxToolCalls(t *testing.T) {
	g, _ := oneTarget(t)
	for _, tc := range []struct{ member, want string }{
		{`"max_tool_calls":3,`, `3`},
		{`"max_tool_calls":null,`, `null`},
		{``, `null`},
	} {
		for _, stream := range []bool{false, true} {
			name := tc.member + " stream=" + map[bool]string{false: "false", true: "true"}[stream]
			t.Run(name, func(t *testing.T) {
				body := `{"model":"r","input":"hi",` + tc.member + `"truncation":"disabled"`
				if stream {
					body += `,"stream":true`
				}
				rep := g.post(t, "/v1/responses", body+`}`)
				if rep.status != http.StatusOK {
					t.Fatalf("%d %s", rep.status, rep.body)
				}
				var objects []map[string]json.RawMessage
				if !stream {
					var o map[string]json.RawMessage
					if err := json.Unmarshal(rep.body, &o); err != nil {
						t.Fatal(err)
					}
					objects = append(objects, o)
				} else {
					for _, line := range strings.Split(string(rep.body), "\n") {
						data, ok := strings.CutPrefix(line, "data: ")
						if !ok {
							continue
						}
						var ev struct {
							Type     string                     `json:"type"`
							Response map[string]json.RawMessage `json:"response"`
						}
						if err := json.Unmarshal([]byte(data), &ev); err != nil {
							t.Fatalf("%v: %s", err, data)
						}
						if ev.Type == "response.created" || ev.Type == "response.completed" {
							objects = append(objects, ev.Response)
						}
					}
					if len(objects) != 2 {
						t.Fatalf("%d of response.created and response.completed: %s", len(objects), rep.body)
					}
				}
				for _, o := range objects {
					got := map[string]string{"max_tool_calls": string(o["max_tool_calls"]), "truncation": string(o["truncation"])}
					want := map[string]string{"max_tool_calls": tc.want, "truncation": `"disabled"`}
					if d := cmp.Diff(want, got); d != "" {
						t.Errorf("echo (-want +got):\n%s", d)
					}
				}
			})
		}
	}
}
