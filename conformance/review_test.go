package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rawProbe tells the suite's own requests (json.Marshal sorts the keys) from
// the SDK's, so a row can break one probe and leave sdk.* alone.
func rawProbe(req, suffix string) bool {
	return strings.HasPrefix(req, `{"max_tokens":16,"messages"`) && strings.HasSuffix(req, suffix)
}

// TestErrorInsideA200FailsOnce: a server that answers HTTP 200 and puts an
// error where the result belongs (an "error" envelope, vLLM's flat
// {"object": "error"}, an error event mid-stream) failed that request; its
// gate says so, quoting the error, and the checks on it skip instead of each
// reporting a field as absent.
func TestErrorInsideA200FailsOnce(t *testing.T) {
	const envelope = `{"error":{"message":"model overloaded","type":"server_error","param":null,"code":null}}`
	tests := []struct {
		name     string
		edit     func(req string, h http.Header, body string) string
		editJSON func(req string, h http.Header, body string) string
		gate     string
	}{
		{"an error envelope", nil, func(req string, _ http.Header, b string) string {
			if rawProbe(req, `"model":"`+fakeModel+`"}`) {
				return envelope
			}
			return b
		}, "chat.status"},
		{"a flat error object", nil, func(req string, _ http.Header, b string) string {
			if rawProbe(req, `"model":"`+fakeModel+`"}`) {
				return `{"object":"error","message":"model overloaded","type":"InternalServerError","param":null,"code":500}`
			}
			return b
		}, "chat.status"},
		{"an error event mid-stream", func(req string, _ http.Header, b string) string {
			if !rawProbe(req, `"stream":true}`) {
				return b
			}
			i := strings.Index(b, "\n\n") + 2
			return b[:i] + "data: " + envelope + "\n\ndata: [DONE]\n\n"
		}, nil, "chat.stream.content_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return streamRewrite{next: h, edit: tt.edit, editJSON: tt.editJSON}
			})
			rep := runAgainst(t, fakeOptions(t, srv))
			got := notPassing(rep)
			for id, r := range got {
				if r == Fail && id != tt.gate {
					t.Errorf("%s failed too: one broken request is one failure", id)
				}
			}
			c, _ := rep.Result(tt.gate)
			if c.Result != Fail || !strings.Contains(c.Reason, "model overloaded") || !strings.Contains(c.Reason, "error") {
				t.Errorf("%s = %s %q, want FAIL quoting the error", tt.gate, c.Result, c.Reason)
			}
			if c.Evidence == nil || !strings.Contains(c.Evidence.Excerpt, "model overloaded") {
				t.Errorf("%s excerpt does not quote the error: %+v", tt.gate, c.Evidence)
			}
			want := baseline()
			want[tt.gate] = Fail
			var skips []string
			for id, r := range got {
				if r == Skip && want[id] == "" {
					skips = append(skips, id)
				}
			}
			if len(skips) == 0 {
				t.Errorf("no check skipped behind %s: %s", tt.gate, cmp.Diff(want, got))
			}
		})
	}
}

// acceptsAnyModel serves every request as if it named the fake's model, as
// llama-server does outside router mode.
type acceptsAnyModel struct{ next http.Handler }

func (a acceptsAnyModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		req.Write(buf[:n])
		if err != nil {
			break
		}
	}
	r.Body.Close()
	body := strings.ReplaceAll(req.String(), noSuchModel, fakeModel)
	r2 := r.Clone(r.Context())
	r2.Body = httpBody([]byte(body))
	r2.ContentLength = int64(len(body))
	a.next.ServeHTTP(w, r2)
}

// TestServerThatIgnoresTheModelFailsOnce: sdk.error provokes its error with
// an unknown model. A server that serves any model name gives no error to
// judge, which errors.unknown_model already reports; sdk.error skips
// pointing at it, and fails only when --only left that check out.
func TestServerThatIgnoresTheModelFailsOnce(t *testing.T) {
	tests := []struct {
		name string
		only []string
		want map[string]Result
	}{
		{"whole suite", nil, map[string]Result{"errors.unknown_model": Fail, "sdk.error": Skip}},
		{"--only sdk.error", []string{"sdk.error"}, map[string]Result{"sdk.error": Fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return acceptsAnyModel{h} })
			o := fakeOptions(t, srv)
			o.Only = tt.only
			rep := runAgainst(t, o)
			want := tt.want
			if tt.only == nil {
				want = baseline()
				for id, r := range tt.want {
					want[id] = r
				}
			}
			if diff := cmp.Diff(want, notPassing(rep)); diff != "" {
				t.Errorf("non-passing checks (-want +got):\n%s", diff)
			}
			if c, _ := rep.Result("sdk.error"); c.Result == Skip && !strings.Contains(c.Reason, "errors.unknown_model") {
				t.Errorf("sdk.error skip reason %q does not point at errors.unknown_model", c.Reason)
			}
		})
	}
}

// keyPolicy serves the fake with another authentication policy: open
// serves any request, key or none (Ollama, vLLM without --api-key); any
// serves requests with any key but refuses those without one.
type keyPolicy struct {
	next http.Handler
	open bool
}

func (k keyPolicy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" && !k.open {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
			"message": "missing key", "type": "invalid_request_error", "param": nil, "code": "invalid_api_key"}})
		return
	}
	r.Header.Set("Authorization", "Bearer "+fakeKey)
	k.next.ServeHTTP(w, r)
}

// TestBadKeyOnServerWithoutKeys: --api-key is often given to a server that
// checks no keys at all, because SDKs insist on one. errors.bad_key then
// has nothing to judge and skips; a server that refuses a request without a
// key but serves one with the wrong key still fails.
func TestBadKeyOnServerWithoutKeys(t *testing.T) {
	tests := []struct {
		name string
		open bool
		want Result
	}{
		{"checks no keys", true, Skip},
		{"accepts any key", false, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return keyPolicy{next: h, open: tt.open} })
			rep := runAgainst(t, fakeOptions(t, srv))
			want := baseline()
			want["errors.bad_key"] = tt.want
			if diff := cmp.Diff(want, notPassing(rep)); diff != "" {
				t.Errorf("non-passing checks (-want +got):\n%s", diff)
			}
			if c, _ := rep.Result("errors.bad_key"); c.Result == Skip && !strings.Contains(c.Reason, "without") {
				t.Errorf("skip reason %q does not say the server serves requests without a key", c.Reason)
			}
		})
	}
}

// throttle answers 429 to the first try of every distinct request (to every
// try with always), the way a rate-limited OpenAI, LiteLLM or vLLM behind a
// proxy answers a burst.
type throttle struct {
	next       http.Handler
	retryAfter string
	always     bool
	// status is the answer in place of 429, when set.
	status int
	mu     sync.Mutex
	seen   map[string]bool
}

func (th *throttle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req bytes.Buffer
	_, _ = req.ReadFrom(r.Body)
	r.Body.Close()
	key := r.Method + " " + r.URL.Path + " " + r.Header.Get("Authorization") + " " + req.String()
	th.mu.Lock()
	first := !th.seen[key]
	th.seen[key] = true
	th.mu.Unlock()
	if first || th.always {
		if th.retryAfter != "" {
			w.Header().Set("Retry-After", th.retryAfter)
		}
		status := http.StatusTooManyRequests
		if th.status != 0 {
			status = th.status
		}
		writeJSON(w, status, map[string]any{"error": map[string]any{
			"message": "Rate limit reached", "type": "requests", "param": nil, "code": "rate_limit_exceeded"}})
		return
	}
	r2 := r.Clone(r.Context())
	r2.Body = httpBody(req.Bytes())
	th.next.ServeHTTP(w, r2)
}

// TestRateLimitedRequestsAreRetriedOnce: a 429 is an answer the reference
// allows on any endpoint, not a conformance failure. Each request answered
// 429 is sent once more after the Retry-After wait (through Options.Sleep,
// so no test waits), and errors.retry_after judges the 429s seen; a server
// that answers 429 again fails as before.
func TestRateLimitedRequestsAreRetriedOnce(t *testing.T) {
	tests := []struct {
		name       string
		retryAfter string
		always     bool
		want       map[string]Result
		wait       time.Duration
	}{
		{"Retry-After 3", "3", false, map[string]Result{}, 3 * time.Second},
		{"no Retry-After", "", false, map[string]Result{"errors.retry_after": Warn}, time.Second},
		{"Retry-After longer than the cap", "600", false, map[string]Result{}, 10 * time.Second},
		{"429 every time", "3", true, nil, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				return &throttle{next: h, retryAfter: tt.retryAfter, always: tt.always, seen: map[string]bool{}}
			})
			o := fakeOptions(t, srv)
			// /v1/models is throttled too, so the model cannot be found.
			o.Model = fakeModel
			var mu sync.Mutex
			var waits []time.Duration
			o.Sleep = func(_ context.Context, d time.Duration) error {
				mu.Lock()
				defer mu.Unlock()
				waits = append(waits, d)
				return nil
			}
			rep := runAgainst(t, o)
			got := notPassing(rep)
			if tt.want != nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("non-passing checks (-want +got):\n%s", diff)
				}
			} else if c, _ := rep.Result("chat.status"); c.Result != Fail || !strings.Contains(c.Reason, "429") {
				t.Errorf("chat.status = %s %q, want FAIL naming the 429", c.Result, c.Reason)
			}
			if len(waits) < 25 {
				t.Errorf("%d waits, want one per request (about 30)", len(waits))
			}
			for _, d := range waits {
				if d != tt.wait {
					t.Fatalf("waited %v, want %v", d, tt.wait)
				}
			}
		})
	}
}

// TestUsageOnTheFinishChunkIsExplained: llama-server and others put the
// usage on the chunk that finishes the choice. The failure must say where
// the usage went and quote that chunk, not clip the chunk's JSON before its
// usage and quote the stream's first chunks.
func TestUsageOnTheFinishChunkIsExplained(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
		return streamRewrite{next: h, edit: func(req string, _ http.Header, b string) string {
			if !strings.Contains(req, "include_usage") {
				return b
			}
			b = strings.Replace(b, `"finish_reason":"stop","index":0,"logprobs":null}],"created":1750000000,"id":"chatcmpl-fake1","model":"fake-model","object":"chat.completion.chunk","usage":null`,
				`"finish_reason":"stop","index":0,"logprobs":null}],"created":1750000000,"id":"chatcmpl-fake1","model":"fake-model","object":"chat.completion.chunk","usage":{"completion_tokens":10,"prompt_tokens":7,"total_tokens":17}`, 1)
			i := strings.Index(b, `data: {"choices":[],`)
			j := strings.Index(b, "data: [DONE]")
			return b[:i] + b[j:]
		}}
	})
	rep := runAgainst(t, fakeOptions(t, srv))
	c, _ := rep.Result("chat.stream.usage.final")
	if c.Result != Fail {
		t.Fatalf("chat.stream.usage.final = %s, want FAIL", c.Result)
	}
	for _, s := range []string{"1 choice", `"total_tokens":17`} {
		if !strings.Contains(c.Reason, s) {
			t.Errorf("reason %q does not say %s", c.Reason, s)
		}
	}
	if !strings.Contains(c.Evidence.Excerpt, `"finish_reason":"stop"`) {
		t.Errorf("excerpt does not quote the last chunk:\n%s", c.Evidence.Excerpt)
	}
}

// reasoningOnly answers the tools requests the way a reasoning model behind
// vLLM or llama-server does when max_tokens runs out while it thinks:
// finish_reason "length", reasoning, and no content or tool call yet. With
// prose, it answers in words instead, without reasoning: a server that
// ignores tool_choice.
func reasoningOnly(prose bool) streamRewrite {
	msg := `"content":null,"reasoning_content":"The user wants the weather, so I should call"`
	delta := `{"reasoning_content":"The user wants"}`
	if prose {
		msg = `"content":"The weather in Paris is usually mild in spring, with"`
		delta = `{"content":"The weather in Paris is"}`
	}
	chunk := func(d, finish string) string {
		return `data: {"id":"chatcmpl-r","object":"chat.completion.chunk","created":1750000000,"model":"fake-model","choices":[{"index":0,"delta":` + d + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	return streamRewrite{
		edit: func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			return chunk(`{"role":"assistant","content":null}`, "null") + chunk(delta, "null") + chunk(`{}`, `"length"`) + "data: [DONE]\n\n"
		},
		editJSON: func(req string, _ http.Header, b string) string {
			if !isToolsStream(req) {
				return b
			}
			return `{"id":"chatcmpl-r","object":"chat.completion","created":1750000000,"model":"fake-model","choices":[{"index":0,"message":{"role":"assistant",` +
				msg + `},"finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":64,"total_tokens":73}}`
		},
	}
}

// TestToolsCutWhileReasoningSkip: the tools probes ask for 64 tokens, which
// a reasoning model can spend before its call; that is the probe's budget,
// not the server's fault, so the tools gates skip as logprobs.content does.
// An answer in words without reasoning is still no tool call, and fails.
func TestToolsCutWhileReasoningSkip(t *testing.T) {
	gates := []string{"tools.required.calls", "tools.named.calls", "tools.stream.first_fragment"}
	for _, prose := range []bool{false, true} {
		t.Run(map[bool]string{false: "reasoning", true: "prose"}[prose], func(t *testing.T) {
			_, srv := newWrappedFake(t, func(h http.Handler) http.Handler {
				rw := reasoningOnly(prose)
				rw.next = h
				return rw
			})
			rep := runAgainst(t, fakeOptions(t, srv))
			want := Skip
			if prose {
				want = Fail
			}
			for _, id := range gates {
				if c, _ := rep.Result(id); c.Result != want {
					t.Errorf("%s = %s (%s), want %s", id, c.Result, c.Reason, want)
				} else if want == Skip && !strings.Contains(c.Reason, "reasoning") {
					t.Errorf("%s skip reason %q does not say why", id, c.Reason)
				}
			}
		})
	}
}

// TestSilentServerIsNotCalledUnreachable: a server that takes the request
// and never answers is not unreachable, and "context deadline exceeded"
// does not tell the user that --timeout ran out; the error says so.
func TestSilentServerIsNotCalledUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	o := fakeOptions(t, srv)
	o.Timeout = 50 * time.Millisecond
	_, err := Run(context.Background(), o)
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("Run: %v, want an *UnreachableError (exit 2)", err)
	}
	msg := err.Error()
	for _, s := range []string{"no answer", "within --timeout 50ms", "/v1/models"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q does not say %q", msg, s)
		}
	}
	if strings.Contains(msg, "unreachable") {
		t.Errorf("error %q calls a server that took the request unreachable", msg)
	}
}

// noUsage drops usage from whole chat and completions answers (a server the reference allows:
// usage is not a required member of either).
type noUsage struct{ next http.Handler }

func (n noUsage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/v1/completions" {
		n.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	n.next.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	var m map[string]any
	if rec.Header().Get("Content-Type") == "application/json" && json.Unmarshal(body, &m) == nil {
		delete(m, "usage")
		body, _ = json.Marshal(m)
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// TestUsageAbsentWarnsOnly: a whole answer without usage is a SHOULD warning, not a failure of
// the run; a usage that is there and does not add up still fails (the .total checks, MUST).
func TestUsageAbsentWarnsOnly(t *testing.T) {
	_, srv := newWrappedFake(t, func(h http.Handler) http.Handler { return noUsage{next: h} })
	o := fakeOptions(t, srv)
	o.Only = []string{"chat.usage*", "completions.usage*"}
	rep := runAgainst(t, o)
	want := map[string]Result{"chat.usage": Warn, "chat.usage.total": Skip, "completions.usage": Warn, "completions.usage.total": Skip}
	if diff := cmp.Diff(want, notPassing(rep)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if rep.ExitCode() != 0 {
		t.Errorf("exit code %d: a missing usage failed the run", rep.ExitCode())
	}
}
