package conformance

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func isUsageStream(req string) bool { return strings.Contains(req, `"include_usage":true`) }
func isSchemaRequest(req string) bool {
	return strings.Contains(req, `"json_schema"`)
}
func isNRequest(req string) bool { return strings.Contains(req, `"n":2`) }

// usageChunkHead is how the fake's final usage chunk begins.
const usageChunkHead = `"choices":[],"created":1750000000,"id":"chatcmpl-fake1"`

// ignoresSchema is a server that ignores response_format json_schema with a model that does as
// the prompt says: it answers the JSON object the prompt quotes, if the prompt quotes one, and
// words otherwise.
func ignoresSchema(req string, _ http.Header, b string) string {
	if !isSchemaRequest(req) {
		return b
	}
	var r struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	_ = json.Unmarshal([]byte(req), &r)
	answer := "Yes, it is."
	if len(r.Messages) > 0 {
		if quoted := regexp.MustCompile(`\{[^{}]*\}`).FindString(r.Messages[0].Content); quoted != "" {
			answer = quoted
		}
	}
	content, _ := json.Marshal(answer)
	return strings.Replace(b, `"content":"{\"ok\": true}"`, `"content":`+string(content), 1)
}

// TestOneDeviationOneVerdict: each row bends the fake's answers in exactly one way, on the
// streaming usage, n 2, json_schema and streamed tool-call requests; the checks that do not pass
// must be exactly those named (a violation fails its check and no other; a variant the
// reference allows passes everything).
func TestOneDeviationOneVerdict(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(req string, h http.Header, body string) string
		editJSON func(req string, h http.Header, body string) string
		want     map[string]Result
	}{
		// Streaming usage.
		{name: "include_usage: other chunks without a usage member", edit: func(req string, _ http.Header, b string) string {
			if !isUsageStream(req) {
				return b
			}
			return strings.ReplaceAll(b, `,"usage":null`, ``)
		}},
		// openai-go's accumulator refuses a chunk whose id is not the stream's, so the usage is lost.
		{name: "include_usage: the usage chunk has another id", edit: func(req string, _ http.Header, b string) string {
			if !isUsageStream(req) {
				return b
			}
			return strings.Replace(b, usageChunkHead, `"choices":[],"created":1750000000,"id":"chatcmpl-usage"`, 1)
		}, want: map[string]Result{"chat.stream.usage.final": Fail}},
		{name: "include_usage: the usage chunk has no id", edit: func(req string, _ http.Header, b string) string {
			if !isUsageStream(req) {
				return b
			}
			return strings.Replace(b, usageChunkHead, `"choices":[],"created":1750000000`, 1)
		}, want: map[string]Result{"chat.stream.usage.final": Fail}},
		{name: "include_usage: usage also on the finish chunk", edit: func(req string, _ http.Header, b string) string {
			if !isUsageStream(req) {
				return b
			}
			return strings.Replace(b, `"finish_reason":"stop","index":0,"logprobs":null}],"created":1750000000,"id":"chatcmpl-fake1","model":"fake-model","object":"chat.completion.chunk","usage":null`,
				`"finish_reason":"stop","index":0,"logprobs":null}],"created":1750000000,"id":"chatcmpl-fake1","model":"fake-model","object":"chat.completion.chunk","usage":{"completion_tokens":10,"prompt_tokens":7,"total_tokens":17}`, 1)
		}, want: map[string]Result{"chat.stream.usage.elsewhere": Fail}},
		{name: "include_usage: usage chunk choices null", edit: func(req string, _ http.Header, b string) string {
			if !isUsageStream(req) {
				return b
			}
			return strings.Replace(b, usageChunkHead, `"choices":null,"created":1750000000,"id":"chatcmpl-fake1"`, 1)
		}, want: map[string]Result{"chat.stream.usage.final": Fail, "chat.stream.usage.elsewhere": Fail, "chat.stream.usage.total": Skip}},
		{name: "include_usage: total is not the sum", edit: func(req string, _ http.Header, b string) string {
			if !isUsageStream(req) {
				return b
			}
			return strings.Replace(b, `"total_tokens":17}`, `"total_tokens":18}`, 1)
		}, want: map[string]Result{"chat.stream.usage.total": Fail}},

		// n 2.
		{name: "n: the choices in reverse order", editJSON: func(req string, _ http.Header, b string) string {
			if !isNRequest(req) {
				return b
			}
			b = strings.Replace(b, `"index":0`, `"index":X`, 1)
			b = strings.Replace(b, `"index":1`, `"index":0`, 1)
			return strings.Replace(b, `"index":X`, `"index":1`, 1)
		}},
		{name: "n: ignored, one choice", editJSON: func(req string, _ http.Header, b string) string {
			if !isNRequest(req) {
				return b
			}
			i := strings.Index(b, `},{"finish_reason"`)
			j := strings.Index(b, `}}],"created"`)
			return b[:i+1] + b[j+2:]
		}, want: map[string]Result{"chat.n.choices": Warn}},
		{name: "n: both choices index 0", editJSON: func(req string, _ http.Header, b string) string {
			if !isNRequest(req) {
				return b
			}
			return strings.Replace(b, `"index":1`, `"index":0`, 1)
		}, want: map[string]Result{"chat.n.choices": Fail}},
		{name: "n: the second choice without message", editJSON: func(req string, _ http.Header, b string) string {
			if !isNRequest(req) {
				return b
			}
			i := strings.Index(b, `"index":1,`)
			j := strings.Index(b[i:], `}}]`)
			return b[:i] + `"index":1,"logprobs":null}]` + b[i+j+3:]
		}, want: map[string]Result{"chat.n.choices": Fail}},
		{name: "n: the second choice's role user", editJSON: func(req string, _ http.Header, b string) string {
			if !isNRequest(req) {
				return b
			}
			i := strings.Index(b, `"index":1,`)
			return b[:i] + strings.Replace(b[i:], `"role":"assistant"`, `"role":"user"`, 1)
		}, want: map[string]Result{"chat.n.choices": Fail}},
		{name: "n: the second choice's content a number", editJSON: func(req string, _ http.Header, b string) string {
			if !isNRequest(req) {
				return b
			}
			i := strings.Index(b, `"index":1,`)
			return b[:i] + regexp.MustCompile(`"content":"[^"]*"`).ReplaceAllString(b[i:], `"content":7`)
		}, want: map[string]Result{"chat.n.choices": Fail}},
		{name: "n: the second choice's finish_reason eos", editJSON: func(req string, _ http.Header, b string) string {
			if !isNRequest(req) {
				return b
			}
			i := strings.LastIndex(b, `"finish_reason":"`)
			return b[:i] + regexp.MustCompile(`^"finish_reason":"[a-z_]*"`).ReplaceAllString(b[i:], `"finish_reason":"eos"`)
		}, want: map[string]Result{"chat.n.choices": Fail}},
		// A choice that said nothing: the reference's content is a string or null.
		{name: "n: the second choice's content null", editJSON: func(req string, _ http.Header, b string) string {
			if !isNRequest(req) {
				return b
			}
			i := strings.Index(b, `"index":1,`)
			return b[:i] + regexp.MustCompile(`"content":"[^"]*"`).ReplaceAllString(b[i:], `"content":null`)
		}},

		// response_format json_schema.
		{name: "json_schema: the document among spaces and newlines", editJSON: func(req string, _ http.Header, b string) string {
			if !isSchemaRequest(req) {
				return b
			}
			return strings.Replace(b, `"content":"{\"ok\": true}"`, `"content":"\n  {\"ok\":true}\n"`, 1)
		}},
		// Structured outputs answer a refusal in message.refusal, content null: nothing to judge.
		{name: "json_schema: a refusal", editJSON: func(req string, _ http.Header, b string) string {
			if !isSchemaRequest(req) {
				return b
			}
			return strings.Replace(b, `"content":"{\"ok\": true}","refusal":null`, `"content":null,"refusal":"I cannot help with that."`, 1)
		}, want: map[string]Result{"format.json_schema": Skip}},
		{name: "json_schema: ignored by a model that does as the prompt says", editJSON: ignoresSchema,
			want: map[string]Result{"format.json_schema": Fail}},
		{name: "json_schema: a property the schema does not allow", editJSON: func(req string, _ http.Header, b string) string {
			if !isSchemaRequest(req) {
				return b
			}
			return strings.Replace(b, `"content":"{\"ok\": true}"`, `"content":"{\"ok\": true, \"why\": \"x\"}"`, 1)
		}, want: map[string]Result{"format.json_schema": Fail}},
		{name: "json_schema: ok a string", editJSON: func(req string, _ http.Header, b string) string {
			if !isSchemaRequest(req) {
				return b
			}
			return strings.Replace(b, `"content":"{\"ok\": true}"`, `"content":"{\"ok\": \"true\"}"`, 1)
		}, want: map[string]Result{"format.json_schema": Fail}},
		{name: "json_schema: in a Markdown fence", editJSON: func(req string, _ http.Header, b string) string {
			if !isSchemaRequest(req) {
				return b
			}
			return strings.Replace(b, `"content":"{\"ok\": true}"`, "\"content\":\"```json\\n{\\\"ok\\\": true}\\n```\"", 1)
		}, want: map[string]Result{"format.json_schema": Fail}},

		// Streamed tool calls.
		{name: "tools: the arguments in one fragment after the first", edit: func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			b = strings.Replace(b, `"arguments":"{\"zone\""`, `"arguments":"{\"zone\":\"UTC\"}"`, 1)
			return strings.Replace(b, `"arguments":":\"UTC\"}"`, `"arguments":""`, 1)
		}},
		// openai-go grows its calls to index+1 and leaves an empty call at 0; openai-python
		// inserts the first fragment at 0 and every later one as a new call.
		{name: "tools: the one call numbered 1 throughout", edit: func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			b = strings.ReplaceAll(b, `"index":0,"type":"function"`, `"index":1,"type":"function"`)
			return strings.ReplaceAll(b, `"},"index":0}]`, `"},"index":1}]`)
		}, want: map[string]Result{"tools.stream.index": Fail}},
		{name: "tools: a later fragment without index", edit: func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			return strings.Replace(b, `"},"index":0}]`, `"}}]`, 1)
		}, want: map[string]Result{"tools.stream.index": Fail}},
		{name: "tools: the name repeated on a later fragment", edit: func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			return strings.Replace(b, `{"function":{"arguments":"{\"zone\""}`, `{"function":{"arguments":"{\"zone\"","name":"get_time"}`, 1)
		}, want: map[string]Result{"tools.stream.later_fragments": Fail}},
		{name: "tools: the arguments again whole at the end", edit: func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			return strings.Replace(b, `"delta":{},"finish_reason":"tool_calls"`, `"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"zone\":\"UTC\"}"}}]},"finish_reason":"tool_calls"`, 1)
		}, want: map[string]Result{"tools.stream.arguments": Fail}},
		{name: "tools: an argument fragment a JSON object", edit: func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			b = strings.Replace(b, `"arguments":"{\"zone\""`, `"arguments":{"zone":"UTC"}`, 1)
			return strings.Replace(b, `"arguments":":\"UTC\"}"`, `"arguments":""`, 1)
		}, want: map[string]Result{"tools.stream.arguments": Fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return streamRewrite{next: h, edit: tt.edit, editJSON: tt.editJSON}
			})
			rep := runAgainst(t, fakeOptions(t, srv))
			want := baseline()
			for id, r := range tt.want {
				want[id] = r
			}
			if diff := cmp.Diff(want, notPassing(rep)); diff != "" {
				for _, c := range rep.Checks {
					if c.Evidence != nil {
						t.Logf("%s: expected %s; seen %s", c.ID, c.Evidence.Expected, c.Evidence.Seen)
					}
				}
				t.Errorf("checks that did not pass (-want +got):\n%s", diff)
			}
		})
	}
}
