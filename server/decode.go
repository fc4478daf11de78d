package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/internal/jsonx"
)

// Hayula request options. Each is read from a header and, under the same name, from a top-level
// body field, which is stripped before the body goes upstream.
const (
	optFallback = "x-fallback-on"
	optHint     = "x-route-hint"
	optPrivacy  = "x-hayula-privacy"
)

// wireRequest is the part of a chat request the gateway reads. Everything else passes through in
// the raw body untouched.
type wireRequest struct {
	Model         *string         `json:"model"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	Messages      []core.Message  `json:"messages"`
	Functions     json.RawMessage `json:"functions"`
	MaxTokens     *int            `json:"max_tokens"`
	MaxCompletion *int            `json:"max_completion_tokens"`
	Fallback      json.RawMessage `json:"x-fallback-on"`
	Hint          *string         `json:"x-route-hint"`
	Privacy       *string         `json:"x-hayula-privacy"`
	core.Params
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// readBody reads the whole body within the limit.
func readBody(r *http.Request, limit int64) ([]byte, *apiError) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		// ReadFrom wants MinRead bytes spare even when the body fits: ask for them up front, so
		// the buffer is allocated once.
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	} else {
		buf.Grow(4096)
	}
	n, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, badRequest("", "invalid_body", "could not read the request body: "+err.Error())
	}
	if n > limit {
		return nil, tooLarge(limit)
	}
	return buf.Bytes(), nil
}

func tooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalidRequest, Code: "request_too_large",
		Message: fmt.Sprintf("request body is larger than the gateway's limit of %d bytes", limit)}
}

// decodeChat turns the raw body and headers into the request view. It decodes the JSON once.
func decodeChat(r *http.Request, body []byte) (*core.Request, *apiError) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, jsonError(err)
	}
	if w.Model == nil || *w.Model == "" {
		return nil, badRequest("model", "missing_required_parameter", "you must provide a model parameter")
	}
	if len(w.Messages) == 0 {
		return nil, badRequest("messages", "missing_required_parameter", "Missing required parameter: 'messages'.")
	}
	req := &core.Request{
		Model:    *w.Model,
		Stream:   w.Stream,
		Messages: w.Messages,
		Params:   w.Params,
	}
	for i := range w.Messages {
		if w.Messages[i].Role == "" {
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "missing_required_parameter",
				fmt.Sprintf("Missing required parameter: 'messages[%d].role'.", i))
		}
	}
	if w.StreamOptions != nil {
		req.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	req.Tools = hasArray(w.Params.ToolsRaw) || hasArray(w.Functions)
	req.Images = hasImages(w.Messages)
	if w.MaxCompletion != nil {
		req.MaxTokens = *w.MaxCompletion
	} else if w.MaxTokens != nil {
		req.MaxTokens = *w.MaxTokens
	}
	if req.MaxTokens < 0 {
		return nil, badRequest("max_tokens", "invalid_value", "max_tokens must not be negative")
	}
	req.PromptTokensMin = filter.PromptTokensMin(w.Messages)

	if e := readOptions(r, &w, req); e != nil {
		return nil, e
	}
	req.Body = body
	if w.Fallback != nil || w.Hint != nil || w.Privacy != nil {
		req.Body = jsonx.Delete(body, optFallback, optHint, optPrivacy)
	}
	return req, nil
}

// readOptions applies the Hayula options. A request can make itself stricter, never looser:
// x-fallback-on can only turn fallback off, x-hayula-privacy can only turn strictness on.
func readOptions(r *http.Request, w *wireRequest, req *core.Request) *apiError {
	fallback := r.Header.Get(optFallback)
	if len(w.Fallback) > 0 && string(w.Fallback) != "null" {
		var b bool
		var s string
		switch {
		case json.Unmarshal(w.Fallback, &b) == nil:
			if !b {
				fallback = "false"
			}
		case json.Unmarshal(w.Fallback, &s) == nil:
			if fallback == "" || strings.EqualFold(s, "false") {
				fallback = s
			}
		default:
			return badRequest(optFallback, "invalid_value", "x-fallback-on must be true or false")
		}
	}
	switch strings.ToLower(strings.TrimSpace(fallback)) {
	case "", "true", "1", "yes":
	case "false", "0", "no":
		req.NoFallback = true
	default:
		return badRequest(optFallback, "invalid_value", "x-fallback-on must be true or false")
	}

	privacy := []string{r.Header.Get(optPrivacy)}
	if w.Privacy != nil {
		privacy = append(privacy, *w.Privacy)
	}
	for _, p := range privacy {
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "":
		case "strict":
			req.Strict = true
		case "default", "none":
			// Asking for the default never loosens a strict route or key.
		default:
			return badRequest(optPrivacy, "invalid_value", "x-hayula-privacy must be \"strict\" (or \"default\")")
		}
	}

	req.RouteHint = strings.TrimSpace(r.Header.Get(optHint))
	if w.Hint != nil && strings.TrimSpace(*w.Hint) != "" {
		req.RouteHint = strings.TrimSpace(*w.Hint)
	}
	return nil
}

func hasArray(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 2 && raw[0] == '[' && !bytes.Equal(raw, []byte("[]"))
}

// hasImages reports whether any message has an image part.
func hasImages(msgs []core.Message) bool {
	for i := range msgs {
		c := bytes.TrimSpace(msgs[i].Content)
		if len(c) == 0 || c[0] != '[' {
			continue
		}
		if !bytes.Contains(c, []byte("image")) {
			continue
		}
		var parts []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(c, &parts) != nil {
			continue
		}
		for _, p := range parts {
			if p.Type == "image_url" || p.Type == "input_image" || p.Type == "image" {
				return true
			}
		}
	}
	return false
}

// bearer returns the API key from Authorization: Bearer or x-api-key.
func bearer(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			return strings.TrimSpace(a[7:])
		}
		return ""
	}
	return strings.TrimSpace(r.Header.Get("x-api-key"))
}

// wireOther is the part of a /v1/completions or /v1/embeddings request the gateway reads.
type wireOther struct {
	Model         *string         `json:"model"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	Prompt        json.RawMessage `json:"prompt"`
	Input         json.RawMessage `json:"input"`
	MaxTokens     *int            `json:"max_tokens"`
	Fallback      json.RawMessage `json:"x-fallback-on"`
	Hint          *string         `json:"x-route-hint"`
	Privacy       *string         `json:"x-hayula-privacy"`
}

// decodeOther decodes a completions or embeddings request. Its body passes through untouched but
// for the Hayula fields; eligibility sees no messages, so only privacy and health filter it.
func decodeOther(r *http.Request, body []byte, op core.Op) (*core.Request, *apiError) {
	var w wireOther
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, jsonError(err)
	}
	if w.Model == nil || *w.Model == "" {
		return nil, badRequest("model", "missing_required_parameter", "you must provide a model parameter")
	}
	field, raw := "prompt", w.Prompt
	if op == core.OpEmbeddings {
		field, raw = "input", w.Input
		if w.Stream {
			return nil, badRequest("stream", "invalid_value", "embeddings cannot be streamed")
		}
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, badRequest(field, "missing_required_parameter", fmt.Sprintf("Missing required parameter: '%s'.", field))
	}
	req := &core.Request{Op: op, Model: *w.Model, Stream: w.Stream}
	if w.StreamOptions != nil {
		req.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	if w.MaxTokens != nil {
		req.MaxTokens = max(*w.MaxTokens, 0)
	}
	opts := wireRequest{Fallback: w.Fallback, Hint: w.Hint, Privacy: w.Privacy}
	if e := readOptions(r, &opts, req); e != nil {
		return nil, e
	}
	req.Body = body
	if w.Fallback != nil || w.Hint != nil || w.Privacy != nil {
		req.Body = jsonx.Delete(body, optFallback, optHint, optPrivacy)
	}
	return req, nil
}

// jsonError answers a body encoding/json would not decode: not JSON at all, or a field of the
// wrong type.
func jsonError(err error) *apiError {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		if ute.Field == "" {
			return badRequest("", "invalid_type", "the request body must be a JSON object")
		}
		return badRequest(ute.Field, "invalid_type",
			fmt.Sprintf("invalid type for '%s': expected %s", ute.Field, ute.Type))
	}
	return badRequest("", "invalid_json", "the request body is not valid JSON: "+err.Error())
}
