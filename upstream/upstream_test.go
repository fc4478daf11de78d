package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/jsonx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixedNow is the injected clock for Retry-After dates.
var fixedNow = func() time.Time { return time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC) }

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// hang returns a handler that answers nothing until the client goes away or the test ends. It
// reads the body first: only then does net/http watch the connection and cancel r.Context().
func hang(t *testing.T, started chan<- struct{}) http.HandlerFunc {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if started != nil {
			close(started)
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
}

func target(url string) *core.Target {
	return &core.Target{Name: "local", Adapter: core.AdapterOpenAI, URL: url + "/v1", Model: "qwen2.5-7b",
		Timeout: 5 * time.Second, Stats: &core.Stats{}}
}

func newSet(t *testing.T, targets ...*core.Target) *Set {
	t.Helper()
	n := 0
	s := NewSet(targets, Options{Now: fixedNow, DialTimeout: 2 * time.Second,
		NewID: func() string { n++; return fmt.Sprintf("id%d", n) }})
	t.Cleanup(s.Close)
	return s
}

func chatReq(stream bool) *core.Request {
	body := `{"model":"auto","messages":[{"role":"user","content":"hi"}]}`
	if stream {
		body = `{"model":"auto","messages":[{"role":"user","content":"hi"}],"stream":true}`
	}
	return &core.Request{Model: "auto", Stream: stream, Body: []byte(body)}
}

// ignoreHeader drops the parts of a StatusError that depend on the test server.
var ignoreHeader = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Header" }, cmp.Ignore())

func TestChatStatusErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		wantErr *core.StatusError
	}{
		{"500 openai shape", 500, nil,
			`{"error":{"message":"CUDA out of memory","type":"server_error","param":null,"code":null}}`,
			&core.StatusError{Status: 500, Message: "CUDA out of memory", Type: "server_error"}},
		{"429 retry-after seconds", 429, map[string]string{"Retry-After": "12"},
			`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`,
			&core.StatusError{Status: 429, Message: "Rate limit reached", Type: "requests", Code: "rate_limit_exceeded",
				RetryAfter: 12 * time.Second}},
		{"503 retry-after date", 503, map[string]string{"Retry-After": "Fri, 02 Jan 2026 15:04:35 GMT"},
			`{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`,
			&core.StatusError{Status: 503, Message: "Loading model", Type: "unavailable_error", Code: "503",
				RetryAfter: 30 * time.Second}},
		{"401 with param", 401, nil,
			`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":"key","code":"invalid_api_key"}}`,
			&core.StatusError{Status: 401, Message: "Incorrect API key provided", Type: "invalid_request_error",
				Param: "key", Code: "invalid_api_key"}},
		{"400 numeric code (vLLM)", 400, nil,
			`{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`,
			&core.StatusError{Status: 400, Message: "This model's maximum context length is 4096 tokens.", Type: "BadRequestError", Code: "400"}},
		{"404 ollama string error", 404, nil, `{"error":"model \"llama9\" not found, try pulling it first"}`,
			&core.StatusError{Status: 404, Message: `model "llama9" not found, try pulling it first`}},
		{"422 fastapi detail", 422, nil, `{"detail":"Field required"}`,
			&core.StatusError{Status: 422, Message: "Field required"}},
		{"502 html", 502, nil, `<html>Bad Gateway</html>`, &core.StatusError{Status: 502}},
		{"302 not followed", 302, map[string]string{"Location": "/elsewhere"}, ``, &core.StatusError{Status: 302}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			tg := target(srv.URL)
			_, err := newSet(t, tg).Chat(context.Background(), tg, chatReq(false))
			var se *core.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("Chat error = %v (%T), want *core.StatusError", err, err)
			}
			want := *tt.wantErr
			want.Target, want.Body = "local", []byte(tt.body)
			if diff := cmp.Diff(&want, se, ignoreHeader); diff != "" {
				t.Errorf("StatusError mismatch (-want +got):\n%s", diff)
			}
			if se.Header == nil {
				t.Error("StatusError.Header is nil")
			}
		})
	}
}

func TestChatErrorBodyCapped(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		_, _ = io.WriteString(w, strings.Repeat("x", 200<<10))
	})
	tg := target(srv.URL)
	_, err := newSet(t, tg).Chat(context.Background(), tg, chatReq(false))
	var se *core.StatusError
	if !errors.As(err, &se) || len(se.Body) != 64<<10 {
		t.Fatalf("err = %v, body len = %d, want a StatusError with 64 KiB", err, len(se.Body))
	}
}

func TestChatConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	tg := target("http://" + addr)
	_, err = newSet(t, tg).Chat(context.Background(), tg, chatReq(false))
	var ce *core.ConnError
	if !errors.As(err, &ce) || ce.Target != "local" {
		t.Fatalf("Chat error = %v (%T), want *core.ConnError", err, err)
	}
	if !strings.Contains(ce.Error(), "refused") {
		t.Errorf("ConnError = %q, want it to say the connection was refused", ce)
	}
}

// TestChatMalformedAnswerHead: a server that answers with something other than HTTP/1.1 gave an
// answer the gateway could not read (a ProtocolError, server_error), not a connection failure,
// and the line quoted in the error never carries the target's key.
func TestChatMalformedAnswerHead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Read(make([]byte, 64<<10))
		_, _ = io.WriteString(c, "HTTP/1.1 OK sk-hunter2\r\n\r\n")
	}()
	tg := target("http://" + ln.Addr().String())
	tg.APIKey = "sk-hunter2"
	_, err = newSet(t, tg).Chat(context.Background(), tg, chatReq(false))
	pe, ok := errors.AsType[*core.ProtocolError](err)
	if !ok || pe.Target != "local" {
		t.Fatalf("Chat error = %v (%T), want *core.ProtocolError", err, err)
	}
	if msg := pe.Err.Error(); !strings.Contains(msg, "malformed HTTP answer: status line") ||
		strings.Contains(msg, "hunter2") || !strings.Contains(msg, "[redacted]") {
		t.Errorf("ProtocolError = %q, want the status line quoted with the key redacted", msg)
	}
}

func TestChatConnectionDroppedBeforeAnswer(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) })
	tg := target(srv.URL)
	_, err := newSet(t, tg).Chat(context.Background(), tg, chatReq(false))
	var ce *core.ConnError
	if !errors.As(err, &ce) {
		t.Fatalf("Chat error = %v (%T), want *core.ConnError", err, err)
	}
}

func TestChatSlowHeadersTimeout(t *testing.T) {
	srv := serve(t, hang(t, nil))
	tg := target(srv.URL)
	tg.Timeout = 50 * time.Millisecond
	_, err := newSet(t, tg).Chat(context.Background(), tg, chatReq(true))
	var te *core.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("Chat error = %v (%T), want *core.TimeoutError", err, err)
	}
	if diff := cmp.Diff(&core.TimeoutError{Target: "local", After: 50 * time.Millisecond}, te); diff != "" {
		t.Errorf("TimeoutError mismatch (-want +got):\n%s", diff)
	}
}

func TestChatCallerCancels(t *testing.T) {
	started := make(chan struct{})
	srv := serve(t, hang(t, started))
	tg := target(srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := newSet(t, tg).Chat(ctx, tg, chatReq(false))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Chat error = %v (%T), want context.Canceled", err, err)
	}
}

func TestChatStreamAnsweredWithJSON(t *testing.T) {
	const body = `{"id":"x","object":"chat.completion","choices":[]}`
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	})
	tg := target(srv.URL)
	_, err := newSet(t, tg).Chat(context.Background(), tg, chatReq(true))
	var pe *core.ProtocolError
	var ns *NotSSEError
	if !errors.As(err, &pe) || !errors.As(err, &ns) {
		t.Fatalf("Chat error = %v (%T), want *core.ProtocolError with *NotSSEError", err, err)
	}
	if diff := cmp.Diff(&NotSSEError{ContentType: "application/json", Body: []byte(body)}, ns); diff != "" {
		t.Errorf("NotSSEError mismatch (-want +got):\n%s", diff)
	}
}

func TestChatNonStreamNotJSON(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html>captive portal</html>")
	})
	tg := target(srv.URL)
	_, err := newSet(t, tg).Chat(context.Background(), tg, chatReq(false))
	var nj *NotJSONError
	if !errors.As(err, &nj) || !errors.As(err, new(*core.ProtocolError)) {
		t.Fatalf("Chat error = %v (%T), want *core.ProtocolError with *NotJSONError", err, err)
	}
}

// A 200 that carries an error object is a failure of the target, not a completion; a completion
// with "error": null, or with the word in its content, is a completion.
func TestChatNonStreamErrorIn200(t *testing.T) {
	tests := []struct {
		name, body string
		wantErr    string // the upstream's message; "" for a completion
	}{
		{"error object", `{"error":{"message":"model overloaded","type":"server_error","code":null}}`, "model overloaded"},
		{"error string", ` {"error":"upstream timed out"} `, "upstream timed out"},
		{"error null beside choices", `{"id":"c","object":"chat.completion","error":null,"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`, ""},
		{"the word in content", `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"an \"error\": none"},"finish_reason":"stop"}]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tt.body)
			})
			tg := target(srv.URL)
			resp, err := newSet(t, tg).Chat(context.Background(), tg, chatReq(false))
			if tt.wantErr == "" {
				if err != nil || string(resp.Body) != tt.body {
					t.Fatalf("Chat = %v, want the completion passed through", err)
				}
				return
			}
			var ea *ErrorAnswerError
			if !errors.As(err, &ea) || !errors.As(err, new(*core.ProtocolError)) || ea.Message != tt.wantErr {
				t.Fatalf("Chat error = %v (%T), want *core.ProtocolError with *ErrorAnswerError %q", err, err, tt.wantErr)
			}
		})
	}
}

func TestChatNonStreamBodyPassedThrough(t *testing.T) {
	const body = `{"id":"chatcmpl-1","object":"chat.completion","model":"qwen2.5-7b","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"vendor_extra":{"a":1}}`
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	})
	tg := target(srv.URL)
	resp, err := newSet(t, tg).Chat(context.Background(), tg, chatReq(false))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Stream != nil || string(resp.Body) != body {
		t.Fatalf("Response = %+v, want the body as-is and no stream", resp)
	}
}

// upstreamRequest is what a test upstream saw.
type upstreamRequest struct {
	Method, Path                       string
	Authorization, ContentType, Accept string
	HasAuthorization                   bool
	Body                               string
}

func recordRequest(t *testing.T, got chan<- upstreamRequest, stream bool) *httptest.Server {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, hasAuth := r.Header["Authorization"]
		got <- upstreamRequest{Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"),
			HasAuthorization: hasAuth, ContentType: r.Header.Get("Content-Type"), Accept: r.Header.Get("Accept"), Body: string(b)}
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"index":0}]}`)
	})
}

func TestChatRequestShape(t *testing.T) {
	// Formatting, key order, unknown and vendor fields must reach the upstream byte for byte;
	// only the model is spliced.
	const client = `{ "model" : "auto",
  "messages":[{"role":"user","content":"x-route-hint: \"model\""}],
  "x-vendor": {"model": "nested stays"}, "temperature": 0.70, "stream": true }`
	const upstream = `{ "model" : "qwen2.5-7b",
  "messages":[{"role":"user","content":"x-route-hint: \"model\""}],
  "x-vendor": {"model": "nested stays"}, "temperature": 0.70, "stream": true }`
	at := strings.Index(client, `"auto"`)
	plain := upstreamRequest{Method: "POST", Path: "/v1/chat/completions",
		ContentType: "application/json", Accept: "application/json", Body: upstream}
	tests := []struct {
		name    string
		apiKey  core.Secret
		stream  bool
		modelAt [2]int // the server's note of where the model is
		want    upstreamRequest
	}{
		{"stream with key", "sk-local-123", true, [2]int{}, upstreamRequest{Method: "POST", Path: "/v1/chat/completions",
			Authorization: "Bearer sk-local-123", HasAuthorization: true, ContentType: "application/json",
			Accept: "text/event-stream", Body: upstream}},
		{"no key no header", "", false, [2]int{}, plain},
		{"spliced where the decode found the model", "", false, [2]int{at, at + len(`"auto"`)}, plain},
		// A note that does not point at a string is not trusted: jsonx finds the model.
		{"a wrong note is ignored", "", false, [2]int{at + 1, at + 4}, plain},
		{"a note past the body is ignored", "", false, [2]int{at, len(client) + 10}, plain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan upstreamRequest, 1)
			srv := recordRequest(t, got, tt.stream)
			tg := target(srv.URL)
			tg.APIKey = tt.apiKey
			req := &core.Request{Model: "auto", Stream: tt.stream, Body: []byte(client), ModelAt: tt.modelAt}
			resp, err := newSet(t, tg).Chat(context.Background(), tg, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Stream != nil {
				_ = resp.Stream.Close()
			}
			if diff := cmp.Diff(tt.want, <-got); diff != "" {
				t.Errorf("upstream request mismatch (-want +got):\n%s", diff)
			}
			if string(req.Body) != client {
				t.Errorf("the client's body was modified: %s", req.Body)
			}
		})
	}
}

func TestSetDispatch(t *testing.T) {
	future := &core.Target{Name: "future", Adapter: core.AdapterSAIF + 1, URL: "http://127.0.0.1:1"}
	s := newSet(t, future)
	_, err := s.Chat(context.Background(), future, chatReq(false))
	var ua *UnsupportedAdapterError
	if !errors.As(err, &ua) || ua.Adapter != core.AdapterSAIF+1 {
		t.Errorf("Chat(future) error = %v, want *UnsupportedAdapterError", err)
	}
	stranger := &core.Target{Name: "stranger", Adapter: core.AdapterOpenAI}
	_, err = s.Chat(context.Background(), stranger, chatReq(false))
	var ut *UnknownTargetError
	if !errors.As(err, &ut) || ut.Target != "stranger" {
		t.Errorf("Chat(stranger) error = %v, want *UnknownTargetError", err)
	}
}

func TestNewSetTransport(t *testing.T) {
	tmpl := &http.Transport{MaxIdleConnsPerHost: 7}
	a := &core.Target{Name: "a", Timeout: 3 * time.Second}
	b := &core.Target{Name: "b", Index: 1}
	s := NewSet([]*core.Target{a, b}, Options{Transport: tmpl})
	defer s.Close()
	// a's has a timeout, which headTransport bounds the write and the head by.
	ta, tb := s.clients[a.Index].Transport.(*headTransport).next.(*http.Transport), s.clients[b.Index].Transport.(*http.Transport)
	if ta == tb || ta == tmpl {
		t.Fatal("targets share a transport (or use the template itself); each needs its own pool")
	}
	got := []any{ta.ResponseHeaderTimeout, tb.ResponseHeaderTimeout, ta.MaxIdleConnsPerHost, ta.DialContext != nil,
		tmpl.ResponseHeaderTimeout}
	want := []any{3 * time.Second, time.Duration(0), 7, true, time.Duration(0)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transport settings mismatch (-want +got):\n%s", diff)
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"5", 5 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"1.5", 1500 * time.Millisecond},
		{"-3", 0},
		{"Fri, 02 Jan 2026 15:05:05 GMT", time.Minute},
		{"Fri, 02 Jan 2026 15:00:00 GMT", 0},
		{"Friday, 02-Jan-26 15:04:15 GMT", 10 * time.Second},
		{"Fri, 31 Dec 9999 23:59:59 GMT", 0}, // absurd
		{"soon", 0},
		// strconv.ParseFloat reads these too: NaN passed both bounds and became a wait of
		// about -292 years.
		{"NaN", 0},
		{"Inf", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := retryAfter(tt.in, fixedNow); got != tt.want {
				t.Errorf("retryAfter(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// The server's note is taken as it is (the point is not to walk the body again): a note at
// another string member puts the model there, which shows the note, not a walk, placed it.
func TestWithModelTakesTheNote(t *testing.T) {
	a := &openaiOpenAI{t: &core.Target{Model: "m"}, model: jsonx.Quote("m")}
	body := []byte(`{"model":"a","other":"b"}`)
	at := bytes.Index(body, []byte(`"b"`))
	for _, tt := range []struct {
		at   [2]int
		want string
	}{
		{[2]int{at, at + 3}, `{"model":"a","other":"m"}`},
		{[2]int{}, `{"model":"m","other":"b"}`},
	} {
		p := a.withModel(&core.Request{Body: body, ModelAt: tt.at})
		if got := string(p.owned()); got != tt.want {
			t.Errorf("ModelAt %v: %s, want %s", tt.at, got, tt.want)
		}
	}
}
