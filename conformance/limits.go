package conformance

import (
	"context"
	"errors"
	"maps"

	"github.com/openai/openai-go/v3"
)

// OpenAI's reasoning models (o1, o3, o4-mini, the gpt-5 family) refuse max_tokens, which the
// reference deprecates for max_completion_tokens and calls incompatible with them:
//
//	400 {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this
//	model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error",
//	"param": "max_tokens", "code": "unsupported_parameter"}}
//
// Ollama's /v1 reads max_tokens alone, so the probes send max_tokens until the server refuses
// it so; from then on (runner.mct) every chat request names its limit max_completion_tokens,
// and one refused before that is sent once more with it. vLLM, SGLang and llama-server read
// either. chat.length alone keeps max_tokens: its checks are about that field, and skip when it
// is refused (TestReasoningModelServerHasNoFail).
const (
	maxTokens           = "max_tokens"
	maxCompletionTokens = "max_completion_tokens"
)

// refusedParam finds in x, and names, the 400 OpenAI answers to a parameter the model does not take: param
// names it, code is "unsupported_parameter" (or "unsupported_value", as for a temperature other
// than 1). Only one of params counts. Any other 400 is no such refusal: its request is judged
// as a failure as before (TestUnclearRefusalStillFails).
func refusedParam(x *exchange, params ...string) (string, bool) {
	if x.err != nil {
		return "", false
	}
	param, _ := at(x.json, "error", "param")
	code, _ := at(x.json, "error", "code")
	for _, p := range params {
		if refuses(x.status, param, code, p) {
			return p, true
		}
	}
	return "", false
}

// refuses reports whether an error answer (its status, error.param and error.code) is OpenAI's
// refusal of the parameter p that the model does not take, raw (refusedParam) or as openai-go
// reads it (sdkLimited).
func refuses(status int, param, code any, p string) bool {
	return status == 400 && param == p && (code == "unsupported_parameter" || code == "unsupported_value")
}

// send is r.c.do for a probe's chat request, its token limit named as the server takes it (see
// maxCompletionTokens). Other requests, and bodies without max_tokens, go as they are.
func (r *runner) send(ctx context.Context, req request) *exchange {
	body, ok := req.body.(map[string]any)
	if !ok || req.path != "/chat/completions" || !hasKey(body, maxTokens) {
		return r.c.do(ctx, req)
	}
	if r.mct.Load() {
		return r.c.do(ctx, withMCT(req, body))
	}
	x := r.c.do(ctx, req)
	if _, refused := refusedParam(x, maxTokens); !refused {
		return x
	}
	r.mct.Store(true)
	return r.c.do(ctx, withMCT(req, body))
}

// sendAsIs is r.c.do for a request whose max_tokens is what is judged; a refusal of it still
// tells the other requests to name their limit max_completion_tokens.
func (r *runner) sendAsIs(ctx context.Context, req request) *exchange {
	x := r.c.do(ctx, req)
	if _, refused := refusedParam(x, maxTokens); refused {
		r.mct.Store(true)
	}
	return x
}

// withMCT is req with its body's max_tokens renamed max_completion_tokens, in a copy: probes'
// bodies are built once and may be sent again.
func withMCT(req request, body map[string]any) request {
	b := maps.Clone(body)
	b[maxCompletionTokens] = b[maxTokens]
	delete(b, maxTokens)
	req.body = b
	return req
}

// sdkLimited runs an SDK chat call with r.sdkParams(model) the way send sends a raw one: with
// max_completion_tokens once the server refused max_tokens, and once more with it when this call
// is the one refused.
func (r *runner) sdkLimited(ctx context.Context, rec *recorder, model string, call func(ctx context.Context, p openai.ChatCompletionNewParams) error) (*exchange, error) {
	mct := r.mct.Load()
	x, err := r.sdkCall(ctx, rec, func(ctx context.Context) error { return call(ctx, r.sdkParams(model, mct)) })
	var apiErr *openai.Error
	if mct || !errors.As(err, &apiErr) || !refuses(apiErr.StatusCode, apiErr.Param, apiErr.Code, maxTokens) {
		return x, err
	}
	r.mct.Store(true)
	return r.sdkCall(ctx, rec, func(ctx context.Context) error { return call(ctx, r.sdkParams(model, true)) })
}
