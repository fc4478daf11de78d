package conformance

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// answerEdit serves the reference fake and hands every answer, of any path, to edit with the
// request's body: a fake server flawed in one way, the way some real server has been.
type answerEdit struct {
	next http.Handler
	edit func(path, req string, h http.Header, status int, body string) (int, string)
}

func (a answerEdit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	req, rec := replay(a.next, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	status, body := a.edit(path, req, w.Header(), rec.Code, rec.Body.String())
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// Which probe a request is, told by its body.
func isPlainChatStream(path, req string) bool {
	return path == "/v1/chat/completions" && strings.Contains(req, `"stream":true`) && !strings.Contains(req, `"tools"`)
}
func isToolsStreamReq(path, req string) bool {
	return path == "/v1/chat/completions" && strings.Contains(req, `"stream":true`) && strings.Contains(req, `"tools"`)
}
func isUsageStreamReq(path, req string) bool {
	return isPlainChatStream(path, req) && strings.Contains(req, `"include_usage":true`)
}
func isLogprobsReq(req string) bool { return strings.Contains(req, `"logprobs":true`) }
func isStopReq(req string) bool     { return strings.Contains(req, `"stop":[`) }
func isLengthReq(req string) bool {
	return strings.Contains(req, `"max_tokens":1,"messages":[{"content":"Count`)
}

// TestFlawedServersAreNamed: each fake server is wrong in one way a real one has been wrong (or,
// where the row says so, bends the wire in a way the specifications allow); the checks that do
// not pass must be exactly those named, so that a flaw is reported by the check about it and a
// legitimate variant by none.
func TestFlawedServersAreNamed(t *testing.T) {
	tests := []struct {
		name string
		edit func(path, req string, h http.Header, status int, body string) (int, string)
		want map[string]Result
	}{
		// Legitimate variants: nothing may fail.
		{name: "data: without its space", edit: func(_, _ string, h http.Header, s int, b string) (int, string) {
			if !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				return s, b
			}
			return s, strings.ReplaceAll(b, "data: ", "data:")
		}},
		{name: "CRLF and keep-alive comments", edit: func(_, _ string, h http.Header, s int, b string) (int, string) {
			if !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				return s, b
			}
			return s, strings.ReplaceAll(": keep-alive\n\n"+strings.ReplaceAll(b, "\n\n", "\n: keep-alive\n\n"), "\n", "\r\n")
		}},

		// Streams.
		{name: "stream without [DONE]", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) {
				return s, b
			}
			return s, strings.TrimSuffix(b, "data: [DONE]\n\n")
		}, want: map[string]Result{"chat.stream.done": Fail}},
		// The checks about every chat stream judge the streams with tools and with include_usage
		// too, and say which stream broke: a server may break only the ones its other code
		// path writes.
		{name: "stream with tools without [DONE]", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isToolsStreamReq(path, req) {
				return s, b
			}
			return s, strings.TrimSuffix(b, "data: [DONE]\n\n")
		}, want: map[string]Result{"chat.stream.done": Fail}},
		{name: "include_usage stream without [DONE]", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isUsageStreamReq(path, req) {
				return s, b
			}
			return s, strings.TrimSuffix(b, "data: [DONE]\n\n")
		}, want: map[string]Result{"chat.stream.done": Fail}},
		{name: "object chat.completion on the chunks of the stream with tools", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isToolsStreamReq(path, req) {
				return s, b
			}
			return s, strings.ReplaceAll(b, `"object":"chat.completion.chunk"`, `"object":"chat.completion"`)
		}, want: map[string]Result{"chat.stream.object": Fail}},
		{name: "object chat.completion on the chunks of the include_usage stream", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isUsageStreamReq(path, req) {
				return s, b
			}
			return s, strings.ReplaceAll(b, `"object":"chat.completion.chunk"`, `"object":"chat.completion"`)
		}, want: map[string]Result{"chat.stream.object": Fail}},
		{name: "id changes after the first chunk of the stream with tools", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isToolsStreamReq(path, req) {
				return s, b
			}
			first, rest, _ := strings.Cut(b, "\n\n")
			return s, first + "\n\n" + strings.ReplaceAll(rest, `"id":"chatcmpl-fake1"`, `"id":"chatcmpl-fake2"`)
		}, want: map[string]Result{"chat.stream.id": Fail}},
		// The usage chunk keeps the id of the chunk before it, so that only chat.stream.id is
		// about it.
		{name: "id changes after the first chunk of the include_usage stream", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isUsageStreamReq(path, req) {
				return s, b
			}
			first, rest, _ := strings.Cut(b, "\n\n")
			return s, first + "\n\n" + strings.ReplaceAll(rest, `"id":"chatcmpl-fake1"`, `"id":"chatcmpl-fake2"`)
		}, want: map[string]Result{"chat.stream.id": Fail}},
		{name: "finish_reason missing on the last chunk", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) {
				return s, b
			}
			return s, strings.ReplaceAll(b, `"finish_reason":"stop"`, `"finish_reason":null`)
		}, want: map[string]Result{"chat.stream.finish_reason": Fail}},
		{name: "finish_reason twice", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) || isUsageStreamReq(path, req) {
				return s, b
			}
			return s, strings.Replace(b, `{"content":"."},"finish_reason":null`, `{"content":"."},"finish_reason":"stop"`, 1)
		}, want: map[string]Result{"chat.stream.finish_reason": Fail}},
		{name: "include_usage: no usage chunk", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isUsageStreamReq(path, req) {
				return s, b
			}
			return s, regexp.MustCompile(`data: \{"choices":\[\],[^\n]*\n\n`).ReplaceAllString(b, "")
		}, want: map[string]Result{"chat.stream.usage.final": Fail, "chat.stream.usage.total": Skip}},
		{name: "include_usage: usage before the finish chunk", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isUsageStreamReq(path, req) {
				return s, b
			}
			u := regexp.MustCompile(`data: \{"choices":\[\],[^\n]*\n\n`).FindString(b)
			b = strings.Replace(b, u, "", 1)
			i := strings.Index(b, `data: {"choices":[{"delta":{},"finish_reason":"stop"`)
			return s, b[:i] + u + b[i:]
		}, want: map[string]Result{"chat.stream.usage.final": Fail, "chat.stream.usage.elsewhere": Fail, "chat.stream.usage.total": Skip}},
		{name: "include_usage: usage chunk with a choice", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isUsageStreamReq(path, req) {
				return s, b
			}
			return s, strings.Replace(b, `data: {"choices":[],`, `data: {"choices":[{"delta":{},"finish_reason":null,"index":0}],`, 1)
		}, want: map[string]Result{"chat.stream.usage.final": Fail, "chat.stream.usage.elsewhere": Fail, "chat.stream.usage.total": Skip}},
		{name: "object chat.completion on stream chunks", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) {
				return s, b
			}
			return s, strings.ReplaceAll(b, `"object":"chat.completion.chunk"`, `"object":"chat.completion"`)
		}, want: map[string]Result{"chat.stream.object": Fail}},
		{name: "created a string on stream chunks", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) {
				return s, b
			}
			return s, strings.ReplaceAll(b, `"created":1750000000`, `"created":"1750000000"`)
		}, want: map[string]Result{"chat.stream.created": Fail, "chat.stream.created.same": Skip}},
		{name: "model absent from stream chunks", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) {
				return s, b
			}
			return s, strings.ReplaceAll(b, `"model":"fake-model",`, ``)
		}, want: map[string]Result{"chat.stream.model": Fail, "chat.stream.model.same": Skip}},
		{name: "Content-Type text/plain on the stream", edit: func(path, req string, h http.Header, s int, b string) (int, string) {
			if isPlainChatStream(path, req) && !isUsageStreamReq(path, req) {
				h.Set("Content-Type", "text/plain; charset=utf-8")
			}
			return s, b
		}, want: map[string]Result{"chat.stream.content_type": Fail}},
		{name: "role user in a delta", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) {
				return s, b
			}
			return s, strings.ReplaceAll(b, `"role":"assistant"`, `"role":"user"`)
		}, want: map[string]Result{"chat.stream.role": Fail, "chat.stream.role.first": Warn}},

		{name: "finish_reason an empty string until the last chunk", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) {
				return s, b
			}
			return s, strings.ReplaceAll(b, `"finish_reason":null`, `"finish_reason":""`)
		}, want: map[string]Result{"chat.stream.finish_reason": Fail}},
		// Clients index choices[0] (openai-python's README does): the reference lets choices be
		// empty only on the final usage chunk.
		{name: "choices empty in a chunk mid-stream", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) || isUsageStreamReq(path, req) {
				return s, b
			}
			i := strings.Index(b, `data: {"choices":[{"delta":{"content":" there"}`)
			return s, b[:i] + `data: {"choices":[],"created":1750000000,"id":"chatcmpl-fake1","model":"fake-model","object":"chat.completion.chunk"}` + "\n\n" + b[i:]
		}, want: map[string]Result{"chat.stream.choices": Warn}},
		// Some servers close every stream with a choice-less chunk, include_usage or not: no
		// failure, since openai-go's accumulator takes it, but choices[0] is not there.
		{name: "a final chunk with empty choices and null usage without include_usage", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if path != "/v1/chat/completions" || !strings.Contains(req, `"stream":true`) || strings.Contains(req, `"include_usage":true`) {
				return s, b
			}
			last := `data: {"choices":[],"created":1750000000,"id":"chatcmpl-fake1","model":"fake-model","object":"chat.completion.chunk","usage":null}` + "\n\n"
			return s, strings.Replace(b, "data: [DONE]", last+"data: [DONE]", 1)
		}, want: map[string]Result{"chat.stream.choices": Warn}},
		// llama-server's builds that close every stream with the usage chunk, asked for or not:
		// chat.stream.usage.absent's to report, once.
		{name: "a usage chunk without include_usage", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) || isUsageStreamReq(path, req) {
				return s, b
			}
			last := `data: {"choices":[],"created":1750000000,"id":"chatcmpl-fake1","model":"fake-model","object":"chat.completion.chunk","usage":{"completion_tokens":10,"prompt_tokens":7,"total_tokens":17}}` + "\n\n"
			return s, strings.Replace(b, "data: [DONE]", last+"data: [DONE]", 1)
		}, want: map[string]Result{"chat.stream.usage.absent": Warn}},
		// A first chunk with no choice, as Azure OpenAI sends its prompt filter results in.
		{name: "choices empty in the first chunk", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) || isUsageStreamReq(path, req) {
				return s, b
			}
			return s, `data: {"choices":[],"created":1750000000,"id":"chatcmpl-fake1","model":"fake-model","object":"chat.completion.chunk","prompt_filter_results":[{"prompt_index":0}]}` + "\n\n" + b
		}, want: map[string]Result{"chat.stream.choices": Warn}},
		{name: "choice index absent from stream chunks", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isPlainChatStream(path, req) {
				return s, b
			}
			return s, strings.ReplaceAll(b, `"index":0,`, ``)
		}, want: map[string]Result{"chat.stream.delta": Fail}},
		// Tool calls.
		{name: "streamed tool arguments not JSON once joined", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isToolsStreamReq(path, req) {
				return s, b
			}
			return s, strings.Replace(b, `"arguments":":\"UTC\"}"`, `"arguments":":\"UTC\""`, 1)
		}, want: map[string]Result{"tools.stream.arguments": Fail}},
		{name: "streamed tool call without index on its first fragment", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !isToolsStreamReq(path, req) {
				return s, b
			}
			return s, strings.Replace(b, `"id":"call_fake1","index":0,`, `"id":"call_fake1",`, 1)
		}, want: map[string]Result{"tools.stream.index": Fail}},
		{name: "tool arguments not JSON", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if path != "/v1/chat/completions" || isToolsStreamReq(path, req) {
				return s, b
			}
			return s, strings.Replace(b, `"arguments":"{\"zone\":\"UTC\"}"`, `"arguments":"{zone: UTC}"`, 1)
		}, want: map[string]Result{"tools.named.arguments": Fail}},

		// Plain chat.
		{name: "stop sequence kept in the output", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if path != "/v1/chat/completions" || !isStopReq(req) {
				return s, b
			}
			return s, strings.Replace(b, `"content":"H"`, `"content":"He"`, 1)
		}, want: map[string]Result{"chat.stop.excluded": Fail}},
		{name: "max_tokens ignored", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if path != "/v1/chat/completions" || !isLengthReq(req) {
				return s, b
			}
			b = strings.Replace(b, `"finish_reason":"length"`, `"finish_reason":"stop"`, 1)
			b = strings.Replace(b, `"content":"Hello"`, `"content":"One, two, three."`, 1)
			return s, strings.Replace(b, `"completion_tokens":1,"prompt_tokens":7,"total_tokens":8`, `"completion_tokens":6,"prompt_tokens":7,"total_tokens":13`, 1)
		}, want: map[string]Result{"chat.max_tokens.length": Fail, "chat.max_tokens.respected": Fail}},
		// Usage as a placeholder, every count 0 (hand-written servers and proxies): it adds up, but
		// it counts nothing, so it cannot show that a limit held.
		{name: "usage all zeros", edit: func(path, req string, h http.Header, s int, b string) (int, string) {
			if path != "/v1/chat/completions" || s != 200 || strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				return s, b
			}
			return s, regexp.MustCompile(`"usage":\{[^}]*\}`).ReplaceAllString(b, `"usage":{"completion_tokens":0,"prompt_tokens":0,"total_tokens":0}`)
		}, want: map[string]Result{"chat.usage": Warn, "chat.max_tokens.respected": Skip, "chat.max_completion_tokens.respected": Skip}},
		{name: "max_completion_tokens ignored, usage all zeros", edit: func(path, req string, h http.Header, s int, b string) (int, string) {
			if path != "/v1/chat/completions" || s != 200 || strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				return s, b
			}
			if strings.Contains(req, `"max_completion_tokens":4`) {
				b = strings.Replace(b, `"content":"Hello there, the"`, `"content":"One, two, three, four, five, six, seven, eight, nine, ten."`, 1)
				b = strings.Replace(b, `"finish_reason":"length"`, `"finish_reason":"stop"`, 1)
			}
			return s, regexp.MustCompile(`"usage":\{[^}]*\}`).ReplaceAllString(b, `"usage":{"completion_tokens":0,"prompt_tokens":0,"total_tokens":0}`)
		}, want: map[string]Result{"chat.usage": Warn, "chat.max_tokens.respected": Skip, "chat.max_completion_tokens.respected": Skip}},
		// Ollama leaves prompt_tokens 0 when the prompt came from its cache: no fault.
		{name: "prompt_tokens 0", edit: func(path, req string, h http.Header, s int, b string) (int, string) {
			if path != "/v1/chat/completions" || s != 200 || strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				return s, b
			}
			re := regexp.MustCompile(`"usage":\{"completion_tokens":(\d+),"prompt_tokens":7,"total_tokens":\d+\}`)
			return s, re.ReplaceAllString(b, `"usage":{"completion_tokens":$1,"prompt_tokens":0,"total_tokens":$1}`)
		}},
		{name: "created a string", edit: func(path, req string, h http.Header, s int, b string) (int, string) {
			if path != "/v1/chat/completions" || strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				return s, b
			}
			return s, strings.ReplaceAll(b, `"created":1750000000`, `"created":"1750000000"`)
		}, want: map[string]Result{"chat.created": Fail}},
		{name: "logprobs requested but null", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if path != "/v1/chat/completions" || !isLogprobsReq(req) {
				return s, b
			}
			return s, regexp.MustCompile(`"logprobs":\{.*\},"message"`).ReplaceAllString(b, `"logprobs":null,"message"`)
		}, want: map[string]Result{"logprobs.content": Fail, "logprobs.top_count": Skip}},
		{name: "logprobs requested but absent", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if path != "/v1/chat/completions" || !isLogprobsReq(req) {
				return s, b
			}
			return s, regexp.MustCompile(`"logprobs":\{.*\},"message"`).ReplaceAllString(b, `"message"`)
		}, want: map[string]Result{"logprobs.content": Fail, "logprobs.top_count": Skip}},

		// Errors.
		{name: "plain-text 500 to invalid JSON", edit: func(_, req string, h http.Header, s int, b string) (int, string) {
			if s != 400 || !strings.HasSuffix(req, "[") {
				return s, b
			}
			h.Set("Content-Type", "text/plain; charset=utf-8")
			return 500, "Internal Server Error"
		}, want: map[string]Result{"errors.invalid_json": Fail, "errors.shape": Fail, "errors.content_type": Warn}},
		{name: "FastAPI detail errors", edit: func(_, _ string, _ http.Header, s int, b string) (int, string) {
			if s < 400 {
				return s, b
			}
			return s, `{"detail":"` + regexp.MustCompile(`"message":"([^"]*)"`).FindStringSubmatch(b)[1] + `"}`
		}, want: map[string]Result{"errors.shape": Fail, "sdk.error": Fail, "errors.strict.code": Skip, "errors.strict.param": Skip}},
		{name: "unknown model answered 200 with an error object", edit: func(_, req string, _ http.Header, s int, b string) (int, string) {
			if s == 404 && strings.Contains(req, noSuchModel) {
				return 200, b
			}
			return s, b
		}, want: map[string]Result{"errors.unknown_model": Fail, "sdk.error": Skip}},

		{name: "error a string", edit: func(_, _ string, _ http.Header, s int, b string) (int, string) {
			if s < 400 {
				return s, b
			}
			return s, `{"error":"` + regexp.MustCompile(`"message":"([^"]*)"`).FindStringSubmatch(b)[1] + `"}`
		}, want: map[string]Result{"errors.shape": Fail, "sdk.error": Fail, "errors.strict.code": Skip, "errors.strict.param": Skip}},
		{name: "500 to a request without messages", edit: func(_, req string, _ http.Header, s int, b string) (int, string) {
			if s == 400 && !strings.Contains(req, `"messages"`) {
				return 500, b
			}
			return s, b
		}, want: map[string]Result{"errors.missing_messages": Fail}},
		{name: "max_completion_tokens ignored", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if !strings.Contains(req, `"max_completion_tokens":4`) {
				return s, b
			}
			return s, strings.Replace(b, `"completion_tokens":4,"prompt_tokens":7,"total_tokens":11`, `"completion_tokens":9,"prompt_tokens":7,"total_tokens":16`, 1)
		}, want: map[string]Result{"chat.max_completion_tokens.respected": Fail}},
		{name: "a positive logprob", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if path != "/v1/chat/completions" || !isLogprobsReq(req) {
				return s, b
			}
			return s, strings.Replace(b, `"logprob":-0.5`, `"logprob":0.5`, 1)
		}, want: map[string]Result{"logprobs.content": Fail}},
		// Embeddings.
		{name: "base64 answered as floats", edit: func(path, req string, _ http.Header, s int, b string) (int, string) {
			if path != "/v1/embeddings" || !strings.Contains(req, `"base64"`) {
				return s, b
			}
			return s, base64AsFloats(t, b)
		}, want: map[string]Result{"embeddings.base64": Fail}},
		// A server that batches its inputs and answers them in another order, or one vector for
		// all of them, with the indexes 0, 1, 2 as asked: only the vectors tell.
		{name: "embeddings: the vectors shifted by one, indexes as asked", edit: func(path, _ string, _ http.Header, s int, b string) (int, string) {
			if path != "/v1/embeddings" || s != 200 {
				return s, b
			}
			return s, moveVectors(t, b, func(i, n int) int { return (i + 1) % n })
		}, want: map[string]Result{"embeddings.order": Fail}},
		{name: "embeddings: the first input's vector for every input", edit: func(path, _ string, _ http.Header, s int, b string) (int, string) {
			if path != "/v1/embeddings" || s != 200 {
				return s, b
			}
			return s, moveVectors(t, b, func(int, int) int { return 0 })
		}, want: map[string]Result{"embeddings.order": Fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return answerEdit{next: h, edit: tt.edit}
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
					} else if c.Result == Skip {
						t.Logf("%s: skip %s", c.ID, c.Reason)
					}
				}
				t.Errorf("checks that did not pass (-want +got):\n%s", diff)
			}
		})
	}
}

// base64AsFloats turns an embeddings answer's base64 vectors into the float arrays they encode,
// as a server does that ignores encoding_format.
func base64AsFloats(t *testing.T, body string) string {
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("embeddings answer: %v", err)
	}
	for _, d := range v["data"].([]any) {
		item := d.(map[string]any)
		raw, err := base64.StdEncoding.DecodeString(item["embedding"].(string))
		if err != nil {
			t.Fatalf("base64: %v", err)
		}
		var fs []float64
		for k := 0; k+4 <= len(raw); k += 4 {
			fs = append(fs, float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[k:]))))
		}
		item["embedding"] = fs
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// moveVectors gives item i of an embeddings answer the embedding of item from(i, n), leaving
// every index where it was.
func moveVectors(t *testing.T, body string, from func(i, n int) int) string {
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("embeddings answer: %v", err)
	}
	data := v["data"].([]any)
	var embs []any
	for _, d := range data {
		embs = append(embs, d.(map[string]any)["embedding"])
	}
	for i, d := range data {
		d.(map[string]any)["embedding"] = embs[from(i, len(data))]
	}
	b, _ := json.Marshal(v)
	return string(b)
}
