package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// gzipBodies is an SDK middleware that compresses every request body, as a client that turns on
// request compression does.
func gzipBodies(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	if req.Body != nil {
		raw, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		req.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
		req.ContentLength = int64(buf.Len())
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil }
		req.Header.Set("Content-Encoding", "gzip")
	}
	return next(req)
}

// A body in a content coding the gateway does not decode is refused 415 with Accept-Encoding
// naming what it takes (RFC 9110 §15.5.16), not read as JSON (a gzip body was a 400
// "invalid character '\x1f'", and any coding of a body that happened to be JSON was served as if
// there were none); identity, the absence of a coding, is served.
func TestContentEncodingRefused(t *testing.T) {
	g, up := keyed(t)
	auth := []string{"Authorization", "Bearer " + laptopKey}
	body := `{"model":"saif","messages":[{"role":"user","content":"x"}]}`

	t.Run("gzip from the SDK", func(t *testing.T) {
		c := openai.NewClient(option.WithBaseURL(g.ts.URL+"/v1/"), option.WithAPIKey(laptopKey),
			option.WithHTTPClient(g.ts.Client()), option.WithMaxRetries(0), option.WithMiddleware(gzipBodies))
		_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "saif", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("error %T %v is not *openai.Error", err, err)
		}
		if apiErr.StatusCode != http.StatusUnsupportedMediaType || apiErr.Code != "unsupported_content_encoding" ||
			apiErr.Type != "invalid_request_error" || !strings.Contains(apiErr.Message, "gzip") {
			t.Fatalf("error %d %+v", apiErr.StatusCode, apiErr)
		}
		if got := apiErr.Response.Header.Get("Accept-Encoding"); got != "identity" {
			t.Errorf("Accept-Encoding %q, want identity", got)
		}
	})
	for _, ce := range []string{"br", "deflate", "gzip, identity", "x-unknown"} {
		t.Run(ce, func(t *testing.T) {
			// The body is plain JSON: read as it is, it would be served.
			rep := g.post(t, "/v1/chat/completions", body, append([]string{"Content-Encoding", ce}, auth...)...)
			if rep.status != http.StatusUnsupportedMediaType || rep.errorField(t, "code") != "unsupported_content_encoding" {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
		})
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("the upstream was asked %d times", n)
	}
	for _, ce := range []string{"identity", "Identity", ""} {
		t.Run("served with "+ce, func(t *testing.T) {
			rep := g.post(t, "/v1/chat/completions", body, append([]string{"Content-Encoding", ce}, auth...)...)
			if rep.status != http.StatusOK {
				t.Fatalf("status %d: %s", rep.status, rep.body)
			}
		})
	}
}

// rawTransport sends raw on a new connection to addr, whatever the request it is given, and
// reads the answer: the HTTP server's answers to requests no client library would send, read
// by the SDK as any other.
type rawTransport struct{ addr, raw string }

func (rt rawTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, err := net.Dial("tcp", rt.addr)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, rt.raw); err != nil {
		c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		c.Close()
		return nil, err
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{resp.Body, c}
	return resp, nil
}

// Every error the gateway answers, the HTTP server's own included (a request it could not
// parse), is one the official SDK reads into *openai.Error with its status, type and code.
func TestSDKReadsEveryErrorAnswer(t *testing.T) {
	g, _ := keyed(t)
	addr := strings.TrimPrefix(g.ts.URL, "http://")
	const head = "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + laptopKey + "\r\n"
	const body = `{"model":"saif","messages":[{"role":"user","content":"x"}]}`
	cl := "Content-Length: " + strconv.Itoa(len(body)) + "\r\n"
	for _, tc := range []struct {
		name, raw string
		status    int
		code      string
	}{
		{"malformed request line", "POST  /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n\r\n", 400, "malformed_http_request"},
		{"folded header", head + "X-A: 1\r\n 2\r\n" + cl + "\r\n" + body, 400, "malformed_http_request"},
		{"length and chunked", head + cl + "Transfer-Encoding: chunked\r\n\r\n" + body, 400, "malformed_http_request"},
		{"request line too long", "POST /" + strings.Repeat("a", 70<<10) + " HTTP/1.1\r\nHost: localhost\r\n\r\n", 414, "uri_too_long"},
		{"headers too large", head + "X-A: " + strings.Repeat("a", 70<<10) + "\r\n\r\n", 431, "header_too_large"},
		{"gzip transfer coding", head + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, "unsupported_transfer_encoding"},
		{"HTTP/2.0", "POST /v1/chat/completions HTTP/2.0\r\nHost: localhost\r\n\r\n", 505, "http_version_not_supported"},
		{"bad expectation", head + "Expect: 200-ok\r\n" + cl + "\r\n" + body, 417, "expectation_failed"},
		{"body too large", head + "Content-Length: 999999\r\n\r\n", 413, "request_too_large"},
		{"gzip content coding", head + "Content-Encoding: gzip\r\n" + cl + "\r\n" + body, 415, "unsupported_content_encoding"},
		{"bad chunk size", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "invalid_body"},
		{"null body", head + "Content-Length: 4\r\n\r\nnull", 400, "invalid_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := openai.NewClient(option.WithBaseURL(g.ts.URL+"/v1/"), option.WithAPIKey(laptopKey), option.WithMaxRetries(0),
				option.WithHTTPClient(&http.Client{Transport: rawTransport{addr, tc.raw}}))
			_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: "saif", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %T %v is not *openai.Error", err, err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Code != tc.code || apiErr.Type != "invalid_request_error" || apiErr.Message == "" {
				t.Fatalf("%d type %q code %q message %q, want %d invalid_request_error %s", apiErr.StatusCode, apiErr.Type,
					apiErr.Code, apiErr.Message, tc.status, tc.code)
			}
		})
	}
}
