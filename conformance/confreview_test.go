package conformance

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeJSONRejectsTrailingData: one JSON value and JSON whitespace (RFC 8259: space, tab, LF,
// CR) is JSON; anything after the value is not, a stray "}" or "]" included, which Go's
// Decoder.More does not report. Python's json.loads rejects all of them ("Extra data").
func TestDecodeJSONRejectsTrailingData(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{`{"a":1}`, true},
		{" \t\r\n{\"a\":1} \t\r\n", true},
		{`{"a":1}}`, false},
		{`{"a":1}]`, false},
		{`{"a":1} }`, false},
		{`[1]]`, false},
		{`{"a":1}{"b":2}`, false},
		{`{"a":1} x`, false},
		{"{\"a\":1}\v", false},
		{"\u00a0{\"a\":1}", false},
	} {
		if _, err := decodeJSON([]byte(tt.in)); (err == nil) != tt.ok {
			t.Errorf("decodeJSON(%q) error %v, want ok %v", tt.in, err, tt.ok)
		}
	}
}

// TestTrailingBraceIsNotJSON: an answer, a chunk, arguments or structured content with one
// closing brace too many is not JSON to a client (openai-python's json.loads raises "Extra
// data"), and the check that reads it must not pass.
func TestTrailingBraceIsNotJSON(t *testing.T) {
	tests := []struct {
		name  string
		rw    streamRewrite
		check string
		want  Result
	}{
		{"after a chunk", streamRewrite{edit: func(req string, _ http.Header, b string) string {
			if isToolsStream(req) {
				return b
			}
			return strings.Replace(b, "}\n\n", "}}\n\n", 1)
		}}, "chat.stream.json", Fail},
		{"after a completion", streamRewrite{editJSON: func(req string, _ http.Header, b string) string {
			if !rawProbe(req, `"model":"`+fakeModel+`"}`) {
				return b
			}
			return strings.TrimSpace(b) + "]"
		}}, "chat.status", Fail},
		{"after tool-call arguments", streamRewrite{editJSON: func(req string, _ http.Header, b string) string {
			return strings.ReplaceAll(b, `"arguments":"{\"city\":\"Paris\"}"`, `"arguments":"{\"city\":\"Paris\"}}"`)
		}}, "tools.required.arguments", Fail},
		{"after structured content", streamRewrite{editJSON: func(req string, _ http.Header, b string) string {
			return strings.Replace(b, `"content":"{\"ok\": true}"`, `"content":"{\"ok\": true}}"`, 1)
		}}, "format.json_object", Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { tt.rw.next = h; return tt.rw })
			rep := runAgainst(t, fakeOptions(t, srv))
			if c, _ := rep.Result(tt.check); c.Result != tt.want {
				t.Errorf("%s = %s (%s), want %s", tt.check, c.Result, c.Reason, tt.want)
			}
			if rep.ExitCode() != 1 {
				t.Errorf("exit code %d, want 1", rep.ExitCode())
			}
		})
	}
}

// TestFilteredGateFailureIsNotAWarning: with --only leaving out a request's gate, the checks
// that remain report its failure, and a SHOULD check among them stands in for the MUST gate: a
// stream answered 500 must fail the run, not warn and exit 0.
func TestFilteredGateFailureIsNotAWarning(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return fail500{next: h} })
	for _, tt := range []struct {
		only string
		want Result
	}{
		{"chat.stream.usage.absent", Fail}, // gate chat.stream.content_type, a MUST
		{"chat.content_type", Fail},        // gate chat.status, a MUST
		{"logprobs.top_count", Fail},       // gate logprobs.content, a MUST
		{"chat.n.choices", Warn},           // its own gate, a SHOULD
	} {
		t.Run(tt.only, func(t *testing.T) {
			o := fakeOptions(t, srv)
			o.Only = []string{tt.only}
			rep := runAgainst(t, o)
			c, _ := rep.Result(tt.only)
			if c.Result != tt.want || !strings.Contains(c.Reason, "500") {
				t.Errorf("%s = %s (%s), want %s naming the 500", tt.only, c.Result, c.Reason, tt.want)
			}
			if wantCode := map[Result]int{Fail: 1, Warn: 0}[tt.want]; rep.ExitCode() != wantCode {
				t.Errorf("exit code %d, want %d", rep.ExitCode(), wantCode)
			}
		})
	}
}

// TestStreamModelMayChange: the reference says each chunk has the same id and the same created,
// but of model only "the model to generate the completion". A server that names the alias on the
// first chunk and the resolved model after it (a router) breaks no client, openai-go's
// accumulator included: a warning, not a failure. An empty model is still one.
func TestStreamModelMayChange(t *testing.T) {
	for _, tt := range []struct {
		name, to string
		want     map[string]Result
	}{
		{"renamed after the first chunk", "fake-model-2026-01", map[string]Result{"chat.stream.model.same": Warn}},
		{"empty after the first chunk", "", map[string]Result{"chat.stream.model": Fail, "chat.stream.model.same": Skip}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rw := streamRewrite{edit: func(req string, _ http.Header, b string) string {
				first := strings.Index(b, "\n\n") + 2
				return b[:first] + strings.ReplaceAll(b[first:], `"model":"`+fakeModel+`"`, `"model":"`+tt.to+`"`)
			}}
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { rw.next = h; return rw })
			o := fakeOptions(t, srv)
			o.Only = []string{"chat.stream.*", "sdk.stream"}
			rep := runAgainst(t, o)
			want := map[string]Result{}
			for id, r := range tt.want {
				want[id] = r
			}
			if diff := cmp.Diff(want, notPassing(rep)); diff != "" {
				t.Errorf("non-passing checks (-want +got):\n%s", diff)
			}
		})
	}
}

// dropPosts closes the connection on every POST without an answer.
type dropPosts struct{ next http.Handler }

func (d dropPosts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		d.next.ServeHTTP(w, r)
		return
	}
	panic(http.ErrAbortHandler)
}

// TestFilteredGatesOfErrorChecks: errors.shape and its kin judge whichever error request got an
// answer; with --only leaving out those requests' gates and no request answered at all, the run
// must not pass on a SKIP.
func TestFilteredGatesOfErrorChecks(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return dropPosts{next: h} })
	o := fakeOptions(t, srv)
	o.Only = []string{"errors.shape"}
	rep := runAgainst(t, o)
	if c, _ := rep.Result("errors.shape"); c.Result != Fail {
		t.Errorf("errors.shape = %s (%s), want FAIL: no error request got an answer", c.Result, c.Reason)
	}
	if rep.ExitCode() != 1 {
		t.Errorf("exit code %d, want 1", rep.ExitCode())
	}
	// With the gates selected (logprobs.top_requires_logprobs is the gate of the top_logprobs
	// request) they report it, and errors.shape has nothing to judge.
	o.Only = []string{"errors.*", "logprobs.top_requires_logprobs"}
	rep = runAgainst(t, o)
	if c, _ := rep.Result("errors.shape"); c.Result != Skip {
		t.Errorf("errors.shape = %s (%s), want SKIP beside the gates' failures", c.Result, c.Reason)
	}
	if c, _ := rep.Result("errors.invalid_json"); c.Result != Fail {
		t.Errorf("errors.invalid_json = %s (%s), want FAIL", c.Result, c.Reason)
	}
}

// headerLog records the headers of every request that reaches next.
type headerLog struct {
	next http.Handler
	mu   *sync.Mutex
	seen *[]http.Header
}

func (l headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	*l.seen = append(*l.seen, r.Header.Clone())
	l.mu.Unlock()
	l.next.ServeHTTP(w, r)
}

// TestSDKProbesIgnoreTheEnvironment: openai-go reads OPENAI_API_KEY, OPENAI_ADMIN_KEY,
// OPENAI_CUSTOM_HEADERS and more from the environment; they belong to the user's real OpenAI
// account, not to the server under test. The SDK probes must send what the raw ones send, the
// key given and nothing else, or they leak a secret and judge another request than the run's.
func TestSDKProbesIgnoreTheEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-ambient-api-key")
	t.Setenv("OPENAI_ADMIN_KEY", "sk-ambient-admin-key")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "Authorization: Bearer sk-ambient-custom\nX-Ambient-Secret: s3cret")
	t.Setenv("OPENAI_ORG_ID", "org-ambient")
	t.Setenv("OPENAI_PROJECT_ID", "proj-ambient")
	for _, key := range []string{fakeKey, ""} {
		t.Run("key "+key, func(t *testing.T) {
			var mu sync.Mutex
			var seen []http.Header
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return headerLog{next: h, mu: &mu, seen: &seen} })
			o := fakeOptions(t, srv)
			o.APIKey = key
			if key == "" {
				o.Model = fakeModel
			}
			o.Only = []string{"sdk.*"}
			runAgainst(t, o)
			mu.Lock()
			defer mu.Unlock()
			for _, h := range seen {
				for name, vs := range h {
					for _, v := range vs {
						if strings.Contains(v, "ambient") || strings.Contains(v, "s3cret") {
							t.Errorf("a request carried %s: %s", name, v)
						}
					}
				}
				if got, want := h.Get("Authorization"), map[bool]string{true: "", false: "Bearer " + key}[key == ""]; got != want {
					t.Errorf("Authorization %q, want %q", got, want)
				}
			}
		})
	}
}

// TestStreamRoleOfAnotherAuthor: a stream's delta naming a role other than "assistant" fails
// chat.stream.role, a MUST, while a first delta without a role only warns
// (chat.stream.role.first; FaultNoRole in TestFaults): the reference makes delta.role optional.
func TestStreamRoleOfAnotherAuthor(t *testing.T) {
	rw := streamRewrite{edit: func(req string, _ http.Header, b string) string {
		return strings.Replace(b, `"role":"assistant"`, `"role":"user"`, 1)
	}}
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { rw.next = h; return rw })
	rep := runAgainst(t, fakeOptions(t, srv))
	for id, want := range map[string]Result{"chat.stream.role": Fail, "chat.stream.role.first": Warn} {
		if c, _ := rep.Result(id); c.Result != want {
			t.Errorf("%s = %s (%s), want %s", id, c.Result, c.Reason, want)
		}
	}
	if rep.ExitCode() != 1 {
		t.Errorf("exit code %d, want 1", rep.ExitCode())
	}
}

// TestBaseURLRoots: --base-url is the server's root or its /v1 root, either with a trailing
// slash; one with a query or fragment is refused, since the suite appends each request's path
// to it (a query kept would land before the path).
func TestBaseURLRoots(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":         "http://127.0.0.1:8080/v1",
		"http://127.0.0.1:8080/":        "http://127.0.0.1:8080/v1",
		"http://127.0.0.1:8080/v1/":     "http://127.0.0.1:8080/v1",
		"https://example.com/api/v1":    "https://example.com/api/v1",
		"http://127.0.0.1:8080/prefix/": "http://127.0.0.1:8080/prefix/v1",
	} {
		o := Options{BaseURL: in}
		if got, err := o.apiRoot(); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"http://127.0.0.1:8080/v1?api-version=1", "http://127.0.0.1:8080/v1#x", "ftp://h/v1", "http:///v1"} {
		o := Options{BaseURL: in}
		var ue *UsageError
		if got, err := o.apiRoot(); !errors.As(err, &ue) {
			t.Errorf("%s: %q, %v; want a usage error", in, got, err)
		}
	}
}

// TestBaseURLPasswordNotReported: a password given in --base-url (a server behind basic auth)
// is in no report, nor in the usage error of a URL refused for its query.
func TestBaseURLPasswordNotReported(t *testing.T) {
	_, srv := newFake(t)
	o := fakeOptions(t, srv)
	o.BaseURL = strings.Replace(srv.URL, "http://", "http://tester:s3cret-pw@", 1)
	rep := runAgainst(t, o)
	var out bytes.Buffer
	for _, f := range []Format{FormatTable, FormatJSON, FormatJUnit, FormatMarkdown} {
		if err := rep.Write(&out, f); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(out.String(), "s3cret-pw") {
		t.Errorf("the report holds the base URL's password:\n%s", out.String())
	}
	if !strings.Contains(rep.BaseURL, "tester") {
		t.Errorf("report's base_url %q: want the user kept, the password hidden", rep.BaseURL)
	}
	o.BaseURL += "/?a=1"
	if _, err := Run(context.Background(), o); err == nil || strings.Contains(err.Error(), "s3cret-pw") {
		t.Errorf("usage error %v: want one without the password", err)
	}
	for in, want := range map[string]string{
		"http://u:s3cret-pw@host:8080/v1": "http://u:xxxxx@host:8080/v1",
		"http://u:s3cret pw@ho st/v1":     "http://xxxxx@ho st/v1", // does not parse
		"http://host/a@b":                 "http://host/a@b",
		"http://u:s3/cret@host:8080/v1":   "http://xxxxx@host:8080/v1", // a slash in the password: does not parse
		"no scheme":                       "no scheme",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
