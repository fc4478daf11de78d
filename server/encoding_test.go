package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
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
