package conformance

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/conformance/conformancetest"
)

// streamRewrite serves the reference fake but passes every event-stream
// answer to /v1/chat/completions and /v1/completions through edit, which sees the request body
// (to tell the plain, usage and tools streams apart) and the whole answer.
// It lets one test bend the wire format in ways a Fault does not.
type streamRewrite struct {
	next http.Handler
	edit func(req string, h http.Header, body string) string
	// editJSON does the same for the other answers.
	editJSON func(req string, h http.Header, body string) string
	// hang, when set, keeps every event stream open after its last byte
	// until the client gives up.
	hang bool
	// pieces, when set, writes the answer in pieces of this many bytes,
	// flushing after each, so events straddle TCP writes.
	pieces int
}

// replay has next answer r into a recorder, and returns r's body as read.
func replay(next http.Handler, r *http.Request) (string, *httptest.ResponseRecorder) {
	var req bytes.Buffer
	_, _ = req.ReadFrom(r.Body)
	r.Body.Close()
	r2 := r.Clone(r.Context())
	r2.Body = httpBody(req.Bytes())
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r2)
	return req.String(), rec
}

func (s streamRewrite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/v1/completions" {
		s.next.ServeHTTP(w, r)
		return
	}
	req, rec := replay(s.next, r)
	body := rec.Body.String()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	switch {
	case strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") && s.edit != nil:
		body = s.edit(req, w.Header(), body)
	case !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") && s.editJSON != nil:
		body = s.editJSON(req, w.Header(), body)
	}
	w.WriteHeader(rec.Code)
	if s.hang && strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		_, _ = w.Write([]byte(body))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	if s.pieces == 0 {
		_, _ = w.Write([]byte(body))
		return
	}
	for len(body) > 0 {
		n := min(s.pieces, len(body))
		_, _ = w.Write([]byte(body[:n]))
		w.(http.Flusher).Flush()
		body = body[n:]
	}
}

func httpBody(b []byte) *bodyReader { return &bodyReader{Reader: bytes.NewReader(b)} }

type bodyReader struct{ *bytes.Reader }

func (bodyReader) Close() error { return nil }

func isToolsStream(req string) bool { return strings.Contains(req, `"tools"`) }

// TestLegitimateStreamVariantsPass: what the SSE specification and the
// OpenAI reference allow must not fail a check. Each row bends the fake's
// otherwise conforming streams one way.
func TestLegitimateStreamVariantsPass(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(req string, h http.Header, body string) string
		pieces int
		// sdkFails: openai-go itself cannot read this legitimate variant,
		// and sdk.stream says so.
		sdkFails bool
	}{
		{"CRLF line endings", func(_ string, _ http.Header, b string) string {
			return strings.ReplaceAll(b, "\n", "\r\n")
		}, 0, false},
		// openai-go's decoder splits lines on LF only, so it sees no event.
		{"CR line endings", func(_ string, _ http.Header, b string) string {
			return strings.ReplaceAll(b, "\n", "\r")
		}, 0, true},
		{"comments and keep-alives everywhere", func(_ string, _ http.Header, b string) string {
			return ": ping\n\n" + strings.ReplaceAll(b, "\n\n", "\n: keep-alive\n\n: ping\n\n")
		}, 0, false},
		{"id and retry fields, blocks without data", func(_ string, _ http.Header, b string) string {
			return "retry: 1000\n\n" + strings.ReplaceAll(b, "\n\n", "\nid: 7\n\nevent: ping\n\n")
		}, 0, false},
		{"byte order mark", func(_ string, _ http.Header, b string) string {
			return "\ufeff" + b
		}, 0, false},
		{"charset on the Content-Type", func(_ string, h http.Header, b string) string {
			h.Set("Content-Type", "text/event-stream; charset=utf-8")
			return b
		}, 0, false},
		{"unknown fields and null system_fingerprint", func(_ string, _ http.Header, b string) string {
			return strings.ReplaceAll(b, `"object":"chat.completion.chunk"`,
				`"object":"chat.completion.chunk","system_fingerprint":null,"x_vendor":{"timings":[1,2]}`)
		}, 0, false},
		// The reference's tool-call chunk requires only index; type has
		// one possible value.
		{"streamed tool call without type", func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			return strings.ReplaceAll(b, `,"type":"function"}`, `}`)
		}, 0, false},
		{"events split across writes", nil, 7, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return streamRewrite{next: h, edit: tt.edit, pieces: tt.pieces}
			})
			rep := runAgainst(t, fakeOptions(t, srv))
			want := baseline()
			if tt.sdkFails {
				want["sdk.stream"] = Fail
			}
			if diff := cmp.Diff(want, notPassing(rep)); diff != "" {
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

// TestStreamViolationsFail: each row breaks what a MUST check claims to
// verify, and that check must not pass.
func TestStreamViolationsFail(t *testing.T) {
	created := fmt.Sprint(conformancetest.Created)
	tests := []struct {
		name string
		edit func(req string, h http.Header, body string) string
		want map[string]Result
	}{
		{"[DONE] twice", func(_ string, _ http.Header, b string) string {
			return b + "data: [DONE]\n\n"
		}, map[string]Result{"chat.stream.done": Fail}},
		{"[DONE] without the blank line that dispatches it", func(_ string, _ http.Header, b string) string {
			return strings.TrimSuffix(b, "\n\n")
		}, map[string]Result{"chat.stream.done": Fail}},
		{"an empty data line", func(req string, _ http.Header, b string) string {
			if isToolsStream(req) {
				return b
			}
			i := strings.Index(b, "\n\n") + 2
			return b[:i] + "data:\n\n" + b[i:]
		}, map[string]Result{"chat.stream.json": Fail}},
		{"a completions chunk whose choices is an object", func(req string, _ http.Header, b string) string {
			if !strings.Contains(req, `"prompt"`) {
				return b
			}
			return strings.Replace(b, `"choices":[{"finish_reason":null,"index":0,"logprobs":null,"text":" there"}]`,
				`"choices":{"finish_reason":null,"index":0,"logprobs":null,"text":" there"}`, 1)
		}, map[string]Result{"completions.stream.chunks": Fail}},
		// The check read choices[0].text alone, so a second entry of any shape passed.
		{"a completions chunk whose second choice's text is a number", func(req string, _ http.Header, b string) string {
			if !strings.Contains(req, `"prompt"`) {
				return b
			}
			return strings.Replace(b, `"text":" there"}]`, `"text":" there"},{"finish_reason":null,"index":1,"logprobs":null,"text":7}]`, 1)
		}, map[string]Result{"completions.stream.chunks": Fail}},
		{"no Content-Type (Go sniffs text/plain)", func(_ string, h http.Header, b string) string {
			h.Del("Content-Type")
			return b
		}, map[string]Result{"chat.stream.content_type": Fail}},
		{"choice index 1 when n is 1", func(req string, _ http.Header, b string) string {
			if isToolsStream(req) {
				return b
			}
			return strings.ReplaceAll(b, `"index":0`, `"index":1`)
		}, map[string]Result{"chat.stream.delta": Fail}},
		{"choice index jumps", func(req string, _ http.Header, b string) string {
			if isToolsStream(req) {
				return b
			}
			return strings.Replace(b, `"content":" there"},"finish_reason":null,"index":0`, `"content":" there"},"finish_reason":null,"index":3`, 1)
		}, map[string]Result{"chat.stream.delta": Fail}},
		{"choices an object in one chunk", func(req string, _ http.Header, b string) string {
			if isToolsStream(req) {
				return b
			}
			return strings.Replace(b, `"choices":[{"delta":{"content":" there"},"finish_reason":null,"index":0,"logprobs":null}]`,
				`"choices":{"delta":{"content":" there"},"finish_reason":null,"index":0,"logprobs":null}`, 1)
		}, map[string]Result{"chat.stream.delta": Fail}},
		{"choices absent from one chunk", func(req string, _ http.Header, b string) string {
			if isToolsStream(req) {
				return b
			}
			return strings.Replace(b, `"choices":[{"delta":{"content":" there"},"finish_reason":null,"index":0,"logprobs":null}],`, ``, 1)
		}, map[string]Result{"chat.stream.delta": Fail}},
		{"created in milliseconds", func(req string, _ http.Header, b string) string {
			if isToolsStream(req) {
				return b
			}
			return strings.ReplaceAll(b, `"created":`+created, `"created":`+created+`000`)
		}, map[string]Result{"chat.stream.created": Fail}},
		{"streamed call to a function tool_choice does not name", func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			return strings.ReplaceAll(b, `"name":"get_time"`, `"name":"get_weather"`)
		}, map[string]Result{"tools.stream.first_fragment": Fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return streamRewrite{next: h, edit: tt.edit}
			})
			rep := runAgainst(t, fakeOptions(t, srv))
			got := notPassing(rep)
			for id, want := range tt.want {
				if got[id] != want {
					t.Errorf("%s = %s, want %s (not passing: %v)", id, orPass(got[id]), want, got)
				}
			}
			if rep.ExitCode() != 1 {
				t.Errorf("exit code %d, want 1", rep.ExitCode())
			}
		})
	}
}

func orPass(r Result) Result {
	if r == "" {
		return Pass
	}
	return r
}

// hostileErrors answers the unknown-model probe with an error whose
// message holds terminal escapes, a NUL and bytes that are not UTF-8.
type hostileErrors struct{ next http.Handler }

const hostileMessage = "\x1b[2J\x1b[32mall checks PASS\x00\xff\xfe\x9b\uffff"

func (h hostileErrors) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req bytes.Buffer
	_, _ = req.ReadFrom(r.Body)
	r.Body.Close()
	if strings.Contains(req.String(), noSuchModel) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"` + hostileMessage + `","type":"x"}}`))
		return
	}
	r2 := r.Clone(r.Context())
	r2.Body = httpBody(req.Bytes())
	h.next.ServeHTTP(w, r2)
}

// TestReportsDoNotPassServerControlBytes: a report for a terminal quotes
// the server, and the server must not be able to drive that terminal.
func TestReportsDoNotPassServerControlBytes(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return hostileErrors{next: h} })
	for _, f := range []Format{FormatTable, FormatMarkdown, FormatJSON, FormatJUnit} {
		t.Run(string(f), func(t *testing.T) {
			code, stdout, stderr := runMain(t, "--base-url", srv.URL, "--api-key", fakeKey,
				"--embedding-model", fakeEmbed, "--strict", "--format", string(f))
			if code != 1 {
				t.Fatalf("exit code %d, want 1 (errors.strict.code fails on the error without code)", code)
			}
			if f == FormatTable && !strings.Contains(stdout, `\u001b[32mall checks PASS`) {
				t.Errorf("the table does not quote the hostile message escaped:\n%s", stdout)
			}
			if f == FormatJUnit {
				if err := xml.Unmarshal([]byte(stdout), new(struct{})); err != nil {
					t.Errorf("the JUnit report is not XML: %v", err)
				}
			}
			for name, s := range map[string]string{"stdout": stdout, "stderr": stderr} {
				if !utf8.ValidString(s) {
					t.Errorf("%s is not valid UTF-8", name)
				}
				if i := strings.IndexFunc(s, terminalControl); i >= 0 {
					t.Errorf("%s carries control character %q: …%q…", name, s[i], s[max(0, i-40):min(len(s), i+40)])
				}
			}
		})
	}
}

// terminalControl is what a terminal acts on: C0 (but newline and tab), DEL
// and C1.
func terminalControl(r rune) bool {
	return r != '\n' && r != '\t' && (r < 0x20 || (r >= 0x7f && r < 0xa0))
}

// TestInvalidUTF8Fails: JSON exchanged between systems must be UTF-8 (RFC
// 8259 section 8.1); Go's decoder would quietly turn a stray byte into
// U+FFFD, but a client that decodes strictly (Python's json on the raw
// bytes) throws the answer away.
func TestInvalidUTF8Fails(t *testing.T) {
	tests := []struct {
		name string
		rw   streamRewrite
		want map[string]Result
	}{
		{"in a completion", streamRewrite{editJSON: func(req string, _ http.Header, b string) string {
			if !strings.Contains(req, `"max_tokens":16`) {
				return b
			}
			return strings.Replace(b, `"content":"Hello`, "\"content\":\"\xffHello", 1)
		}}, map[string]Result{"chat.status": Fail}},
		{"in a chunk", streamRewrite{edit: func(req string, _ http.Header, b string) string {
			if isToolsStream(req) {
				return b
			}
			return strings.Replace(b, `"content":" there"`, "\"content\":\" \xc3there\"", 1)
		}}, map[string]Result{"chat.stream.json": Fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { tt.rw.next = h; return tt.rw })
			rep := runAgainst(t, fakeOptions(t, srv))
			got := notPassing(rep)
			for id, want := range tt.want {
				if c, _ := rep.Result(id); got[id] != want || !strings.Contains(c.Reason, "UTF-8") {
					t.Errorf("%s = %s (%s), want %s naming UTF-8", id, orPass(got[id]), c.Reason, want)
				}
			}
		})
	}
}

// bigAnswers answers chat completions with far more than any probe asks
// for: the raw client's with a valid JSON completion just over the cap, the
// SDK's with an endless stream of chunks. It counts what it managed to send.
type bigAnswers struct {
	next http.Handler
	sent *atomic.Int64
}

func (b bigAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		b.next.ServeHTTP(w, r)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	if !strings.HasPrefix(r.UserAgent(), "OpenAI/Go") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":"chatcmpl-big","object":"chat.completion","created":%d,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
			conformancetest.Created, fakeModel, strings.Repeat("x", maxBody))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := []byte(`data: {"id":"c","object":"chat.completion.chunk","created":1750000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"` + strings.Repeat("x", 4000) + `"},"finish_reason":null}]}` + "\n\n")
	for r.Context().Err() == nil {
		n, err := w.Write(chunk)
		b.sent.Add(int64(n))
		if err != nil {
			return
		}
	}
}

// TestAnswersAreCapped: an answer longer than the cap fails its probe
// naming the cap (not "not JSON"), and the SDK probes read no more than the
// raw ones, however long the server keeps sending.
func TestAnswersAreCapped(t *testing.T) {
	var sent atomic.Int64
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return bigAnswers{next: h, sent: &sent} })
	o := fakeOptions(t, srv)
	o.Only = []string{"chat.status", "sdk.stream"}
	rep := runAgainst(t, o)
	if c, _ := rep.Result("chat.status"); c.Result != Fail || !strings.Contains(c.Reason, "longer than 8 MiB") {
		t.Errorf("chat.status = %s (%s), want FAIL naming the 8 MiB cap", c.Result, c.Reason)
	}
	if c, _ := rep.Result("sdk.stream"); c.Result != Fail || !strings.Contains(c.Reason, "longer than 8 MiB") {
		t.Errorf("sdk.stream = %s (%s), want FAIL naming the 8 MiB cap", c.Result, c.Reason)
	}
	// What the kernel buffers on loopback comes on top of the 8 MiB read.
	if got := sent.Load(); got > 4*maxBody {
		t.Errorf("the server sent the SDK %d MiB before it stopped reading", got>>20)
	}
}

// TestBrokenOffAnswerKeepsItsEvidence: a stream that sends [DONE] and never
// ends fails its gate, and the evidence shows the status and what came
// before the read gave up, not "no response".
func TestBrokenOffAnswerKeepsItsEvidence(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return streamRewrite{next: h, hang: true} })
	rep, timeout := runWithin(t, func(d time.Duration) (*Report, bool) {
		o := fakeOptions(t, srv)
		o.Only = []string{"chat.stream.content_type"}
		o.Timeout = d
		rep, err := Run(context.Background(), o)
		if err != nil {
			return nil, false // the /v1/models probe itself ran out of time
		}
		c, _ := rep.Result("chat.stream.content_type")
		return rep, !strings.Contains(c.Reason, "before the answer began")
	})
	c, _ := rep.Result("chat.stream.content_type")
	if c.Result != Fail || !strings.Contains(c.Reason, "HTTP 200, then reading body") {
		t.Fatalf("chat.stream.content_type = %s (%s), want FAIL naming the 200 and the broken read", c.Result, c.Reason)
	}
	broken := fmt.Sprintf("(answer broken off: reading body: --timeout %v ran out before the answer ended (context deadline exceeded))", timeout)
	for _, want := range []string{"< HTTP 200", "data: [DONE]", broken} {
		if !strings.Contains(c.Evidence.Excerpt, want) {
			t.Errorf("excerpt lacks %q:\n%s", want, c.Evidence.Excerpt)
		}
	}
}

// TestReasoningOnlyLogprobsSkip: a reasoning model asked for 4 tokens spends them on its
// reasoning, so its answer has no content and logprobs.content is rightly empty: a skip, not a
// failure. An empty logprobs.content beside content is still a failure.
func TestReasoningOnlyLogprobsSkip(t *testing.T) {
	reasoningOnly := func(content string) streamRewrite {
		return streamRewrite{editJSON: func(req string, _ http.Header, b string) string {
			if !strings.Contains(req, `"logprobs":true`) {
				return b
			}
			return fmt.Sprintf(`{"id":"c","object":"chat.completion","created":%d,"model":%q,`+
				`"choices":[{"index":0,"message":{"role":"assistant","content":%q,"reasoning_content":"Let me"},`+
				`"logprobs":{"content":[],"refusal":null},"finish_reason":"length"}],`+
				`"usage":{"prompt_tokens":7,"completion_tokens":4,"total_tokens":11}}`, conformancetest.Created, fakeModel, content)
		}}
	}
	for _, tt := range []struct {
		content string
		want    Result
	}{{"", Skip}, {"Hi", Fail}} {
		t.Run(fmt.Sprintf("content %q", tt.content), func(t *testing.T) {
			rw := reasoningOnly(tt.content)
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { rw.next = h; return rw })
			rep := runAgainst(t, fakeOptions(t, srv))
			if c, _ := rep.Result("logprobs.content"); c.Result != tt.want {
				t.Errorf("logprobs.content = %s (%s), want %s", c.Result, c.Reason, tt.want)
			}
		})
	}
}

// TestNoContentLogprobsFail: an empty logprobs.content is a skip only for an answer whose tokens
// went to reasoning; one with no message, an empty message with no reasoning, or a tool call in
// place of content, still fails.
func TestNoContentLogprobsFail(t *testing.T) {
	for _, tt := range []struct {
		name, choice string
		want         Result
	}{
		{"reasoning", `"message":{"role":"assistant","content":null,"reasoning":"Let me"}`, Skip},
		{"no message", `"delta":{}`, Fail},
		{"nothing", `"message":{"role":"assistant","content":null}`, Fail},
		{"empty reasoning", `"message":{"role":"assistant","content":"","reasoning_content":""}`, Fail},
		{"tool call", `"message":{"role":"assistant","content":null,"reasoning_content":"x","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}`, Fail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rw := streamRewrite{editJSON: func(req string, _ http.Header, b string) string {
				if !strings.Contains(req, `"logprobs":true`) {
					return b
				}
				return fmt.Sprintf(`{"id":"c","object":"chat.completion","created":%d,"model":%q,`+
					`"choices":[{"index":0,%s,"logprobs":{"content":[],"refusal":null},"finish_reason":"length"}],`+
					`"usage":{"prompt_tokens":7,"completion_tokens":4,"total_tokens":11}}`, conformancetest.Created, fakeModel, tt.choice)
			}}
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { rw.next = h; return rw })
			rep := runAgainst(t, fakeOptions(t, srv))
			if c, _ := rep.Result("logprobs.content"); c.Result != tt.want {
				t.Errorf("logprobs.content = %s (%s), want %s", c.Result, c.Reason, tt.want)
			}
		})
	}
}
