package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/conformance/conformancetest"
)

// These tests take the view of someone who points the suite at vLLM, llama-server, Ollama, LM
// Studio, LiteLLM or OpenRouter: what those servers legitimately send must pass, and what breaks a
// client must fail with a reason that names the field.

func withoutIncludeUsage(req string) bool { return !strings.Contains(req, `"include_usage":true`) }
func isChat(req string) bool              { return strings.Contains(req, `"messages"`) }

// TestServerVariantsPass: each row is something a real server sends that the reference or the
// SSE specification allows.
func TestServerVariantsPass(t *testing.T) {
	created := fmt.Sprint(conformancetest.Created)
	tests := []struct {
		name     string
		edit     func(req string, h http.Header, body string) string
		editJSON func(req string, h http.Header, body string) string
	}{
		// SSE's "one optional space": llama.cpp once wrote "data:{...}", and so do hand-written
		// servers.
		{name: "data: without a space", edit: func(_ string, _ http.Header, b string) string {
			return strings.ReplaceAll(b, "data: ", "data:")
		}},
		{name: "keep-alive comments without a space", edit: func(_ string, _ http.Header, b string) string {
			return ":keepalive\n\n" + strings.ReplaceAll(b, "\n\n", "\n:\n\n")
		}},
		// A stream closed by a choice-less chunk without include_usage, which some servers send,
		// fails nothing but warns chat.stream.choices: see TestFlawedServersAreNamed.
		// "All other chunks will also include a usage field, but with a null value" (vLLM, LiteLLM).
		{name: "usage null on every chunk without include_usage", edit: func(req string, _ http.Header, b string) string {
			if !isChat(req) || !withoutIncludeUsage(req) {
				return b
			}
			return strings.ReplaceAll(b, `"object":"chat.completion.chunk"`, `"object":"chat.completion.chunk","usage":null`)
		}},
		// Ollama repeats the role on every delta; finish_reason and logprobs may be absent.
		{name: "role on every delta, finish_reason and logprobs absent until the end", edit: func(req string, _ http.Header, b string) string {
			if !isChat(req) {
				return b
			}
			b = strings.ReplaceAll(b, `"delta":{"content":" `, `"delta":{"role":"assistant","content":" `)
			b = strings.ReplaceAll(b, `"finish_reason":null,`, ``)
			return strings.ReplaceAll(b, `,"logprobs":null`, ``)
		}},
		{name: "system_fingerprint, service_tier and null optional members in chunks", edit: func(req string, _ http.Header, b string) string {
			if !isChat(req) {
				return b
			}
			b = strings.ReplaceAll(b, `"object":"chat.completion.chunk"`, `"object":"chat.completion.chunk","system_fingerprint":"b5000","service_tier":null,"timings":{"n":1}`)
			b = strings.ReplaceAll(b, `"delta":{}`, `"delta":{"refusal":null}`)
			return strings.ReplaceAll(b, `"delta":{"`, `"delta":{"refusal":null,"reasoning_content":null,"function_call":null,"`)
		}},
		// ChatCompletionMessageToolCallChunk's type is optional: null is as good as absent.
		{name: "first tool-call fragment with type null", edit: func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			return strings.ReplaceAll(b, `"type":"function"}`, `"type":null}`)
		}},
		{name: "later tool-call fragments with null id, type and name", edit: func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			return strings.ReplaceAll(b, `{"function":{"arguments":"{`, `{"id":null,"type":null,"function":{"name":null,"arguments":"{`)
		}},
		// openai-go and openai-python end a stream at data beginning with [DONE].
		{name: "[DONE] with a trailing space", edit: func(_ string, _ http.Header, b string) string {
			return strings.Replace(b, "data: [DONE]\n", "data: [DONE] \n", 1)
		}},
		// SSE joins the data lines of one event with a newline, which JSON reads as whitespace.
		{name: "a chunk's JSON over several data lines", edit: func(_ string, _ http.Header, b string) string {
			b = strings.ReplaceAll(b, `,"created":`, ",\ndata: \"created\":")
			return strings.ReplaceAll(b, `,"model":`, ",\ndata: \"model\":")
		}},
		{name: "the last token in the finish chunk", edit: func(req string, _ http.Header, b string) string {
			return strings.ReplaceAll(b, `"delta":{},"finish_reason":"`, `"delta":{"content":"."},"finish_reason":"`)
		}},
		// Ollama's ToChunk: role and content on every delta, a tool call whole in one chunk
		// beside them, and a last delta with role and empty content.
		{name: "a tool call whole in one chunk beside role and content", edit: func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			calls := regexp.MustCompile(`data: \{[^\n]*"tool_calls":\[[^\n]*\n\n`)
			first := true
			b = calls.ReplaceAllStringFunc(b, func(s string) string {
				if !first {
					return ""
				}
				first = false
				s = strings.Replace(s, `"arguments":""`, `"arguments":"{\"zone\":\"UTC\"}"`, 1)
				return strings.Replace(s, `"delta":{`, `"delta":{"role":"assistant","content":"",`, 1)
			})
			return strings.ReplaceAll(b, `"delta":{}`, `"delta":{"role":"assistant","content":""}`)
		}},
		// llama-server's diffs: reasoning_content without content, a first tool-call fragment
		// without arguments, timings on the last chunk.
		{name: "reasoning deltas without content, a first fragment without arguments", edit: func(req string, _ http.Header, b string) string {
			if !isChat(req) {
				return b
			}
			if isToolsStream(req) {
				return strings.Replace(b, `"arguments":"",`, ``, 1)
			}
			i := strings.Index(b, "\n\n") + 2
			thinking := `data: {"choices":[{"finish_reason":null,"index":0,"delta":{"reasoning_content":"Hm"}}],"created":` + created +
				`,"id":"chatcmpl-fake1","model":"` + fakeModel + `","object":"chat.completion.chunk"}` + "\n\n"
			b = b[:i] + thinking + b[i:]
			j := strings.LastIndex(b, "}\n\ndata: [DONE]")
			return b[:j] + `,"timings":{"prompt_n":7,"predicted_n":4}` + b[j:]
		}},
		{name: "whole answers with charset, no system_fingerprint and null optional members", editJSON: func(req string, h http.Header, b string) string {
			if h.Get("Content-Type") == "application/json" {
				h.Set("Content-Type", "application/json; charset=utf-8")
			}
			if !isChat(req) {
				return b
			}
			b = strings.Replace(b, `,"system_fingerprint":"fp_fake"`, ``, 1)
			return strings.ReplaceAll(b, `"refusal":null`, `"refusal":null,"audio":null,"function_call":null,"annotations":[]`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return streamRewrite{next: h, edit: tt.edit, editJSON: tt.editJSON}
			})
			rep := runAgainst(t, fakeOptions(t, srv))
			if diff := cmp.Diff(baseline(), notPassing(rep)); diff != "" {
				for _, c := range rep.Checks {
					if c.Evidence != nil {
						t.Logf("%s: expected %s; seen %s", c.ID, c.Evidence.Expected, c.Evidence.Seen)
					}
				}
				t.Errorf("non-passing checks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReasoningTokensInUsageSkipLogprobs: OpenAI's reasoning models show no reasoning text, only
// usage.completion_tokens_details.reasoning_tokens; spent on reasoning, the logprobs probe's four
// tokens leave no content, and logprobs.content is rightly empty.
func TestReasoningTokensInUsageSkipLogprobs(t *testing.T) {
	rw := streamRewrite{editJSON: func(req string, _ http.Header, b string) string {
		if !strings.Contains(req, `"logprobs":true`) {
			return b
		}
		return fmt.Sprintf(`{"id":"c","object":"chat.completion","created":%d,"model":%q,`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":""},"logprobs":{"content":[],"refusal":null},"finish_reason":"length"}],`+
			`"usage":{"prompt_tokens":7,"completion_tokens":4,"total_tokens":11,"completion_tokens_details":{"reasoning_tokens":4}}}`,
			conformancetest.Created, fakeModel)
	}}
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { rw.next = h; return rw })
	o := fakeOptions(t, srv)
	o.Only = []string{"logprobs.*"}
	rep := runAgainst(t, o)
	if c, _ := rep.Result("logprobs.content"); c.Result != Skip {
		t.Errorf("logprobs.content = %s (%s), want SKIP: the tokens went to reasoning", c.Result, c.Reason)
	}
}

// errorAnswer answers the unknown-model probe (raw and SDK) with status, Content-Type and body.
type errorAnswer struct {
	next   http.Handler
	status int
	ct     string
	body   string
}

func (e errorAnswer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req bytes.Buffer
	_, _ = req.ReadFrom(r.Body)
	r.Body.Close()
	if strings.Contains(req.String(), noSuchModel) {
		w.Header().Set("Content-Type", e.ct)
		w.WriteHeader(e.status)
		_, _ = w.Write([]byte(e.body))
		return
	}
	r2 := r.Clone(r.Context())
	r2.Body = httpBody(req.Bytes())
	e.next.ServeHTTP(w, r2)
}

// TestErrorShapeNamesTheField: an error answer that a client cannot read fails errors.shape, and
// the reason says what is wrong with it, not only the body.
func TestErrorShapeNamesTheField(t *testing.T) {
	const js = "application/json"
	tests := []struct {
		name, ct, body string
		want           string
	}{
		{"not JSON", "text/plain", "model not found", "not JSON"},
		{"empty", js, "", "empty"},
		{"a JSON array", js, `[{"message":"model not found"}]`, "array"},
		{"flat, as vLLM before 0.10.1", js, `{"object":"error","message":"model not found","type":"NotFoundError","param":null,"code":404}`, `no "error" object`},
		{"FastAPI's detail", js, `{"detail":"Not Found"}`, `no "error" object`},
		{"error a string", js, `{"error":"model not found"}`, `"error" is a string`},
		{"no message", js, `{"error":{"type":"invalid_request_error","param":null,"code":null}}`, "error.message: absent"},
		{"empty message", js, `{"error":{"message":"","type":"invalid_request_error"}}`, "error.message: empty"},
		{"message a number", js, `{"error":{"message":404,"type":"invalid_request_error"}}`, "error.message: 404"},
		{"no type", js, `{"error":{"message":"model not found","code":"model_not_found"}}`, "error.type: absent"},
		{"type null", js, `{"error":{"message":"model not found","type":null}}`, "error.type: null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return errorAnswer{next: h, status: http.StatusNotFound, ct: tt.ct, body: tt.body}
			})
			o := fakeOptions(t, srv)
			o.Only = []string{"errors.shape"}
			rep := runAgainst(t, o)
			c, _ := rep.Result("errors.shape")
			if c.Result != Fail || !strings.Contains(c.Reason, tt.want) || !strings.Contains(c.Reason, "404") {
				t.Errorf("errors.shape = %s %q, want FAIL naming the 404 and %q", c.Result, c.Reason, tt.want)
			}
			if rep.ExitCode() != 1 {
				t.Errorf("exit code %d, want 1", rep.ExitCode())
			}
		})
	}
}

// TestViolationsNameTheField: a real violation fails its MUST check, the reason naming the field,
// and the run exits 1.
func TestViolationsNameTheField(t *testing.T) {
	tests := []struct {
		name       string
		edit       func(req string, h http.Header, body string) string
		check      string
		wantReason string
	}{
		{"chunks labelled chat.completion", func(_ string, _ http.Header, b string) string {
			return strings.ReplaceAll(b, `"object":"chat.completion.chunk"`, `"object":"chat.completion"`)
		}, "chat.stream.object", `object: "chat.completion"`},
		{"no [DONE]", func(_ string, _ http.Header, b string) string {
			return strings.Replace(b, "data: [DONE]\n\n", "", 1)
		}, "chat.stream.done", "no [DONE]"},
		{"usage chunk with choices null", func(req string, _ http.Header, b string) string {
			return strings.Replace(b, `{"choices":[],"created"`, `{"choices":null,"created"`, 1)
		}, "chat.stream.usage.final", "usage"},
		{"delta.content a number", func(req string, _ http.Header, b string) string {
			if !isChat(req) || isToolsStream(req) {
				return b
			}
			return strings.Replace(b, `"content":" there"`, `"content":7`, 1)
		}, "chat.stream.delta", "delta.content: 7"},
		{"first tool-call fragment of type tool", func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			return strings.ReplaceAll(b, `"type":"function"}`, `"type":"tool"}`)
		}, "tools.stream.first_fragment", `"type":"tool"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return streamRewrite{next: h, edit: tt.edit} })
			rep := runAgainst(t, fakeOptions(t, srv))
			c, _ := rep.Result(tt.check)
			if c.Result != Fail || !strings.Contains(c.Reason, tt.wantReason) {
				t.Errorf("%s = %s %q, want FAIL naming %q", tt.check, c.Result, c.Reason, tt.wantReason)
			}
			if rep.ExitCode() != 1 {
				t.Errorf("exit code %d, want 1", rep.ExitCode())
			}
		})
	}
}

// stallMidStream answers every stream with its head and first event, then sends nothing more
// and keeps the connection open until the client leaves.
type stallMidStream struct{ next http.Handler }

func (s stallMidStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req bytes.Buffer
	_, _ = req.ReadFrom(r.Body)
	r.Body.Close()
	if !strings.Contains(req.String(), `"stream":true`) {
		r2 := r.Clone(r.Context())
		r2.Body = httpBody(req.Bytes())
		s.next.ServeHTTP(w, r2)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":%d,"model":%q,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n",
		conformancetest.Created, fakeModel)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// TestStalledStreamEndsTheRun: a server that stops sending mid-stream cannot hang the suite; each
// stream probe ends at --timeout, fails its gate saying that --timeout ran out, and the run exits 1.
func TestStalledStreamEndsTheRun(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return stallMidStream{next: h} })
	code, stdout, _ := runMain(t, "--base-url", srv.URL, "--api-key", fakeKey, "--embedding-model", fakeEmbed,
		"--timeout", "200ms", "--format", "json")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	rep := decodeReport(t, stdout)
	got := map[string]CheckResult{}
	for _, c := range rep.Checks {
		got[c.ID] = c
	}
	for _, id := range []string{"chat.stream.content_type", "chat.stream.usage.final", "tools.stream.first_fragment", "completions.stream.chunks", "sdk.stream"} {
		c := got[id]
		if c.Result != Fail || !strings.Contains(c.Reason, "--timeout 200ms") {
			t.Errorf("%s = %s %q, want FAIL saying --timeout 200ms ran out", id, c.Result, c.Reason)
		}
	}
	if rep.ExitCode != 1 {
		t.Errorf("the JSON report's exit_code is %d, want 1", rep.ExitCode)
	}
}

// TestShapeFailuresNameTheMember: a model entry or a tool call that fails its shape check is
// reported by the member at fault, not only as the whole object.
func TestShapeFailuresNameTheMember(t *testing.T) {
	tests := []struct {
		name       string
		rw         streamRewrite
		models     func(string) string
		check      string
		wantReason string
	}{
		{name: "model entry without object", models: func(b string) string {
			return strings.Replace(b, `"object":"model",`, ``, 1)
		}, check: "models.list.entries", wantReason: "data[0].object: absent"},
		{name: "model entry with a numeric id", models: func(b string) string {
			return strings.Replace(b, `"id":"`+fakeModel+`"`, `"id":7`, 1)
		}, check: "models.list.entries", wantReason: "data[0].id: 7"},
		{name: "model entry created as a string", models: func(b string) string {
			return strings.Replace(b, `"created":`+fmt.Sprint(conformancetest.Created), `"created":"2025"`, 1)
		}, check: "models.list.fields", wantReason: `data[0].created: "2025"`},
		{name: "tool call without id", rw: streamRewrite{editJSON: func(req string, _ http.Header, b string) string {
			return strings.Replace(b, `"id":"call_fake1",`, ``, 1)
		}}, check: "tools.required.shape", wantReason: "tool_calls[0].id: absent"},
		{name: "tool call of an undeclared function", rw: streamRewrite{editJSON: func(req string, _ http.Header, b string) string {
			if !strings.Contains(req, `"tool_choice":"required"`) {
				return b
			}
			return strings.Replace(b, `"name":"get_weather"`, `"name":"get_news"`, 1)
		}}, check: "tools.required.shape", wantReason: `tool_calls[0].function.name: "get_news"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				if tt.models != nil {
					return modelsRewrite{next: h, edit: tt.models}
				}
				tt.rw.next = h
				return tt.rw
			})
			o := fakeOptions(t, srv)
			o.Model = fakeModel
			rep := runAgainst(t, o)
			c, _ := rep.Result(tt.check)
			if c.Result == Pass || !strings.Contains(c.Reason, tt.wantReason) {
				t.Errorf("%s = %s %q, want it to name %q", tt.check, c.Result, c.Reason, tt.wantReason)
			}
		})
	}
}

// modelsRewrite passes GET /v1/models answers through edit.
type modelsRewrite struct {
	next http.Handler
	edit func(string) string
}

func (m modelsRewrite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/models" {
		m.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	m.next.ServeHTTP(rec, r)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(m.edit(rec.Body.String())))
}

// TestDoneLineAsTheSDKsReadIt: the stream ends where openai-go (ssestream: bytes.HasPrefix of the
// event's data) and openai-python (_streaming.py: sse.data.startswith) end it, on an event whose
// data, after the one optional space SSE strips, begins with [DONE]. Whatever they take passes
// chat.stream.done and completions.stream.done, and sdk.stream with them; what they would hand to
// their JSON decoder fails all three.
func TestDoneLineAsTheSDKsReadIt(t *testing.T) {
	tests := []struct {
		name, line string
		pass       bool
		// reason: what the failing checks must name.
		reason string
	}{
		{name: "a trailing space", line: "data: [DONE] ", pass: true},
		{name: "no space after the colon", line: "data:[DONE]", pass: true},
		{name: "no space after the colon, a trailing space", line: "data:[DONE] ", pass: true},
		{name: "a trailing tab", line: "data: [DONE]\t", pass: true},
		{name: "CRLF after it", line: "data: [DONE]\r", pass: true},
		{name: "two spaces after the colon", line: "data:  [DONE]", reason: `" [DONE]"`},
		{name: "lower case", line: "data: [done]", reason: `"[done]"`},
		{name: "without brackets", line: "data: DONE", reason: `"DONE"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return streamRewrite{next: h, edit: func(_ string, _ http.Header, b string) string {
					return strings.Replace(b, "data: [DONE]\n", tt.line+"\n", 1)
				}}
			})
			o := fakeOptions(t, srv)
			o.Only = []string{"chat.stream.done", "completions.stream.done", "sdk.stream"}
			rep := runAgainst(t, o)
			for _, id := range o.Only {
				c, _ := rep.Result(id)
				switch {
				case tt.pass && c.Result != Pass:
					t.Errorf("%s = %s (%s), want PASS: both SDKs end the stream there", id, c.Result, c.Reason)
				case !tt.pass && c.Result != Fail:
					t.Errorf("%s = %s, want FAIL: neither SDK ends the stream there", id, c.Result)
				case !tt.pass && id != "sdk.stream" && !strings.Contains(c.Reason, tt.reason):
					t.Errorf("%s reason %q does not quote the data %s", id, c.Reason, tt.reason)
				}
			}
		})
	}
}

// pathRewrite passes the answers to POST path through edit, which sees the request body.
type pathRewrite struct {
	next http.Handler
	path string
	edit func(req, body string) string
}

func (p pathRewrite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != p.path {
		p.next.ServeHTTP(w, r)
		return
	}
	req, rec := replay(p.next, r)
	w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
	w.WriteHeader(rec.Code)
	_, _ = w.Write([]byte(p.edit(req, rec.Body.String())))
}

// longEmbeddings is an embeddings answer of three vectors of a real model's 1024 dimensions,
// item 1 passed through bend.
func longEmbeddings(bend func(item map[string]any)) string {
	var data []any
	for i := range 3 {
		vec := make([]any, 1024)
		for k := range vec {
			vec[k] = 0.0123 + float64(k)/1e4
		}
		item := map[string]any{"object": "embedding", "index": i, "embedding": vec}
		if i == 1 {
			bend(item)
		}
		data = append(data, item)
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "data": data, "model": fakeEmbed,
		"usage": map[string]any{"prompt_tokens": 3, "total_tokens": 3}})
	return string(b)
}

// TestItemFailuresNameTheMember: a completion choice or an embedding item that fails its shape
// check is reported by the member at fault, with a short rendering of the item (a vector is
// summed up, never quoted number by number).
func TestItemFailuresNameTheMember(t *testing.T) {
	completion := func(from, to string) pathRewrite {
		re := regexp.MustCompile(from)
		return pathRewrite{path: "/v1/completions", edit: func(_, b string) string { return re.ReplaceAllLiteralString(b, to) }}
	}
	embedding := func(bend func(map[string]any)) pathRewrite {
		return pathRewrite{path: "/v1/embeddings", edit: func(_, _ string) string { return longEmbeddings(bend) }}
	}
	tests := []struct {
		name       string
		rw         pathRewrite
		check      string
		wantReason string
	}{
		{"completion choice without text", completion(`"text":"[^"]*"`, `"x":1`),
			"completions.choices", "choices[0].text: absent"},
		{"completion text null", completion(`"text":"[^"]*"`, `"text":null`),
			"completions.choices", "choices[0].text: null"},
		{"completion finish_reason eos", completion(`"finish_reason":"[a-z]*"`, `"finish_reason":"eos"`),
			"completions.choices", `choices[0].finish_reason: "eos"`},
		{"completion finish_reason null", completion(`"finish_reason":"[a-z]*"`, `"finish_reason":null`),
			"completions.choices", `choices[0].finish_reason: null`},
		{"embedding item of object list", embedding(func(m map[string]any) { m["object"] = "list" }),
			"embeddings.entries", `data[1].object: "list"`},
		{"embedding item without index", embedding(func(m map[string]any) { delete(m, "index") }),
			"embeddings.entries", "data[1].index: absent"},
		{"embedding item with index a string", embedding(func(m map[string]any) { m["index"] = "1" }),
			"embeddings.entries", `data[1].index: "1"`},
		{"embedding a base64 string", embedding(func(m map[string]any) { m["embedding"] = strings.Repeat("AAAA", 1024) }),
			"embeddings.entries", "data[1].embedding: a string"},
		{"embedding empty", embedding(func(m map[string]any) { m["embedding"] = []any{} }),
			"embeddings.entries", "data[1].embedding: []"},
		{"embedding holding a string", embedding(func(m map[string]any) { m["embedding"].([]any)[5] = "0.5" }),
			"embeddings.entries", `data[1].embedding[5]: "0.5"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { tt.rw.next = h; return tt.rw })
			o := fakeOptions(t, srv)
			o.Only = []string{tt.check}
			rep := runAgainst(t, o)
			c, _ := rep.Result(tt.check)
			if c.Result != Fail || !strings.HasPrefix(c.Reason, tt.wantReason) {
				t.Fatalf("%s = %s %q, want FAIL naming %q first", tt.check, c.Result, c.Reason, tt.wantReason)
			}
			// The reason is clipped at 200 bytes; what the check saw must fit whole, and
			// quote no more of a vector than a glimpse.
			if len(c.Evidence.Seen) > 200 || strings.Contains(c.Evidence.Seen, "0.0123,") || strings.Contains(c.Evidence.Seen, strings.Repeat("A", 40)) {
				t.Errorf("seen is not short (%d bytes): %s", len(c.Evidence.Seen), c.Evidence.Seen)
			}
		})
	}
}

// TestCreatedTickingWarns: a server that stamps each chunk as it writes it (Ollama, llama-server)
// sends a later created on the chunks after a second boundary. That is a SHOULD the reference
// states and no SDK reads: it warns, and the MUST, which judges each chunk's created alone,
// passes, so the grade does not depend on when the run crossed a second. Milliseconds on a
// chunk still fail the MUST (TestStreamViolationsFail).
func TestCreatedTickingWarns(t *testing.T) {
	created := fmt.Sprint(conformancetest.Created)
	later := fmt.Sprint(conformancetest.Created + 1)
	rw := streamRewrite{edit: func(req string, _ http.Header, b string) string {
		if !isChat(req) {
			return b
		}
		// Every chunk after the first crossed the second.
		first := strings.Index(b, `"created":`+created) + len(`"created":`+created)
		return b[:first] + strings.ReplaceAll(b[first:], `"created":`+created, `"created":`+later)
	}}
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { rw.next = h; return rw })
	rep := runAgainst(t, fakeOptions(t, srv))
	want := baseline()
	want["chat.stream.created.same"] = Warn
	if diff := cmp.Diff(want, notPassing(rep)); diff != "" {
		t.Errorf("non-passing checks (-want +got):\n%s", diff)
	}
}
