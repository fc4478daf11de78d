package server_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// codedErrHandler answers status with body in the content coding named ("gzip", "x-gzip",
// "deflate": zlib), whatever the request's Accept-Encoding said, as a reverse proxy that
// compresses every answer does.
func codedErrHandler(t *testing.T, coding string, status int, body string, hdr ...string) http.HandlerFunc {
	var b bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
		Close() error
	}
	switch coding {
	case "gzip", "x-gzip":
		w = gzip.NewWriter(&b)
	case "deflate":
		w = zlib.NewWriter(&b)
	default:
		t.Fatalf("no coding %q", coding)
	}
	_, _ = w.Write([]byte(body))
	_ = w.Close()
	return func(rw http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			rw.Header().Set(hdr[i], hdr[i+1])
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Content-Encoding", coding)
		rw.WriteHeader(status)
		_, _ = rw.Write(b.Bytes())
	}
}

// TestCodedErrorSDK: an upstream's error answer in gzip, x-gzip or deflate (a compressing
// reverse proxy in front of vLLM or Ollama sends one whatever the gateway's Accept-Encoding:
// identity asked) is read as the same body plain, as the OpenAI SDK sees it through the gateway:
// a vLLM overflow moves the chain on to the next target, or, everywhere, is the client's 400
// context_length_exceeded with the upstream's words; a 401's and an Ollama 404's message reach
// the client; a 429's wait is read from its body. Each was a bare "answered 400 Bad Request, its
// body in Content-Encoding gzip": the overflow ended the chain as a request error, and every
// message was lost. Ollama's 400 saying its model cannot serve the request moves the chain on as
// plain, where it ended it.
func TestCodedErrorSDK(t *testing.T) {
	const overflow = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4900 in the messages, 100 in the completion). Please reduce the length of the messages or completion."
	vllmOverflow := fmt.Sprintf(`{"object":"error","message":%q,"type":"BadRequestError","param":null,"code":400}`, overflow)
	const badKey = "Incorrect API key provided: sk-...abcd. You can find your API key at https://platform.openai.com/account/api-keys."
	badKeyBody := fmt.Sprintf(`{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, badKey)
	const missing = `model "llama9" not found, try pulling it first`
	openAI := func(f *fake) string { return target(f.name, f.url(), "private") }
	ollama := func(f *fake) string {
		return fmt.Sprintf("[targets.%s]\nadapter = \"ollama\"\nurl = %q\nclass = \"private\"\nmodel = \"llama9\"\n\n", f.name, f.srv.URL)
	}
	type want struct {
		status             int
		content            string // the answer's, when it is served
		typ, code, message string
		chain, retryAfter  string
	}
	tests := []struct {
		name  string
		onlyA bool // the route is a alone
		kind  func(*fake) string
		kindB func(*fake) string // b's, when not kind's
		a, b  func(g *gateway) http.HandlerFunc
		want  want
	}{
		{name: "vLLM overflow moves on", kind: openAI,
			a:    func(*gateway) http.HandlerFunc { return codedErrHandler(t, "gzip", 400, vllmOverflow) },
			b:    func(*gateway) http.HandlerFunc { return okHandler("b") },
			want: want{status: 200, content: "hello from b", chain: "a→b (served by b)"}},
		{name: "overflow everywhere", kind: openAI,
			a:    func(*gateway) http.HandlerFunc { return codedErrHandler(t, "gzip", 400, vllmOverflow) },
			b:    func(*gateway) http.HandlerFunc { return codedErrHandler(t, "deflate", 400, vllmOverflow) },
			want: want{status: 400, typ: "invalid_request_error", code: "context_length_exceeded", message: overflow, chain: "a→b"}},
		{name: "401", kind: openAI,
			a:    func(*gateway) http.HandlerFunc { return codedErrHandler(t, "gzip", 401, badKeyBody) },
			b:    func(*gateway) http.HandlerFunc { return codedErrHandler(t, "x-gzip", 401, badKeyBody) },
			want: want{status: 401, typ: "invalid_request_error", code: "invalid_api_key", message: badKey, chain: "a→b"}},
		{name: "429 wait in its body", kind: openAI, onlyA: true,
			a: func(g *gateway) http.HandlerFunc {
				return codedErrHandler(t, "gzip", 429, fmt.Sprintf(`{"error":{"message":"Rate limit exceeded: free-models-per-min.","code":429,"metadata":{"headers":{"X-RateLimit-Limit":"20","X-RateLimit-Remaining":"0","X-RateLimit-Reset":"%d"}}}}`,
					g.clock.Now().Add(7*time.Second).UnixMilli()))
			},
			want: want{status: 429, typ: "rate_limit_error", code: "429", message: "Rate limit exceeded: free-models-per-min.", chain: "a", retryAfter: "7"}},
		{name: "Ollama 404", kind: ollama, onlyA: true,
			a: func(*gateway) http.HandlerFunc {
				return codedErrHandler(t, "gzip", 404, fmt.Sprintf(`{"error":%q}`, missing))
			},
			want: want{status: 404, typ: "invalid_request_error", message: missing, chain: "a"}},
		{name: "Ollama's model cannot moves on", kind: ollama, kindB: openAI,
			a: func(*gateway) http.HandlerFunc {
				return codedErrHandler(t, "gzip", 400, `{"error":"\"llama9\" does not support chat"}`)
			},
			b:    func(*gateway) http.HandlerFunc { return okHandler("b") },
			want: want{status: 200, content: "hello from b", chain: "a→b (served by b)"}},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				a, b := newFake(t, "a"), newFake(t, "b")
				route := "[routes.r]\ntargets = [\"a\", \"b\"]\n"
				if tt.onlyA {
					route = "[routes.r]\ntargets = [\"a\"]\n"
				}
				kindB := tt.kind
				if tt.kindB != nil {
					kindB = tt.kindB
				}
				g := newGateway(t, tt.kind(a)+kindB(b)+route, nil)
				a.set(tt.a(g))
				if tt.b != nil {
					b.set(tt.b(g))
				}
				c := sdkClient(g, "unused")
				params := openai.ChatCompletionNewParams{Model: "r",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}
				var got want
				var resp *http.Response
				var err error
				if stream {
					st := c.Chat.Completions.NewStreaming(context.Background(), params, option.WithResponseInto(&resp))
					var acc openai.ChatCompletionAccumulator
					for st.Next() {
						acc.AddChunk(st.Current())
					}
					if err = st.Err(); err == nil && len(acc.Choices) == 1 {
						got.content = acc.Choices[0].Message.Content
					}
				} else {
					var cc *openai.ChatCompletion
					cc, err = c.Chat.Completions.New(context.Background(), params, option.WithResponseInto(&resp))
					if err == nil && len(cc.Choices) == 1 {
						got.content = cc.Choices[0].Message.Content
					}
				}
				if apiErr, ok := errors.AsType[*openai.Error](err); ok {
					got.status, got.typ, got.code, got.message = apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message
					resp = apiErr.Response
				} else if err != nil {
					t.Fatalf("error %T %v is not *openai.Error", err, err)
				} else {
					got.status = resp.StatusCode
				}
				got.chain, got.retryAfter = resp.Header.Get("X-Hayula-Chain"), resp.Header.Get("Retry-After")
				if got != tt.want {
					t.Errorf("got  %+v\nwant %+v", got, tt.want)
				}
			})
		}
	}
}

// TestCodedStreamOptionsRefusal: a strict server's 400 refusing the stream_options the gateway
// added, in gzip, has the request sent again without them, as the plain 400 has
// (TestStreamUsageRefusedOptions): the client's stream is served. It was the client's 400, its
// words unread.
func TestCodedStreamOptionsRefusal(t *testing.T) {
	up := newFake(t, "up")
	refuse := codedErrHandler(t, "gzip", 400, `{"error":{"message":"Unrecognized request argument supplied: stream_options","type":"invalid_request_error"}}`)
	up.set(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(`"stream_options"`)) {
			refuse(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		okHandler("up")(w, r)
	})
	g := newGateway(t, usageKeyConfig(1000, target("up", up.url(), "private")), nil)
	c := sdkClient(g, "hk-k")
	st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "r",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "hello from up" {
		t.Errorf("accumulated %+v", acc.Choices)
	}
	if n := up.hits.Load(); n != 2 {
		t.Errorf("upstream got %d requests, want 2: with stream_options, then without", n)
	}
}
