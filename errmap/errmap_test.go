package errmap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/lifecycle"
)

func status(code int, msg, typ, errCode string) *core.StatusError {
	return &core.StatusError{Target: "t", Status: code, Message: msg, Type: typ, Code: errCode}
}

func TestClassify(t *testing.T) {
	retrying := func(c core.Class, s int) Decision { return Decision{Class: c, Status: s, Retry: true, Penalize: true} }
	tests := []struct {
		name string
		err  error
		want Decision
	}{
		{"nil", nil, Decision{Class: core.ClassNone, Status: 200}},
		{"conn", &core.ConnError{Target: "t", Err: errors.New("connection refused")}, retrying(core.ClassConnection, 502)},
		{"conn wrapped", fmt.Errorf("attempt: %w", &core.ConnError{Target: "t", Err: io.EOF}), retrying(core.ClassConnection, 502)},
		{"timeout", &core.TimeoutError{Target: "t", After: time.Second}, retrying(core.ClassTimeout, 504)},
		{"deadline", context.DeadlineExceeded, retrying(core.ClassTimeout, 504)},
		{"deadline wrapped", fmt.Errorf("post: %w", context.DeadlineExceeded), retrying(core.ClassTimeout, 504)},
		{"canceled", context.Canceled, Decision{Class: core.ClassClientGone, Status: 499}},
		{"canceled inside stream error", &core.StreamError{Target: "t", Message: "read", Err: context.Canceled},
			Decision{Class: core.ClassClientGone, Status: 499}},
		{"deadline inside conn error", &core.ConnError{Target: "t", Err: fmt.Errorf("dial tcp: %w", context.DeadlineExceeded)},
			retrying(core.ClassConnection, 502)},
		{"canceled inside conn error", &core.ConnError{Target: "t", Err: fmt.Errorf("dial: %w", context.Canceled)},
			Decision{Class: core.ClassClientGone, Status: 499}},
		{"500", status(500, "boom", "server_error", ""), retrying(core.ClassServerError, 500)},
		{"502", status(502, "", "", ""), retrying(core.ClassServerError, 502)},
		{"504 from upstream stays server_error", status(504, "", "", ""), retrying(core.ClassServerError, 504)},
		{"408 from upstream is its timeout, server_error", status(408, "Your request timed out", "", "408"), retrying(core.ClassServerError, 408)},
		{"503 plain", &core.StatusError{Status: 503, RetryAfter: 7 * time.Second},
			Decision{Class: core.ClassServerError, Status: 503, Retry: true, Penalize: true, RetryAfter: 7 * time.Second}},
		{"503 status loading", &core.StatusError{Status: 503, Body: []byte(`{"status":"loading"}`), RetryAfter: 3 * time.Second},
			Decision{Class: core.ClassLoading, Status: 503, RetryAfter: 3 * time.Second}},
		{"503 status loading model", &core.StatusError{Status: 503, Body: []byte(`{"status": "loading model"}`)},
			Decision{Class: core.ClassLoading, Status: 503}},
		{"503 llama-server loading", &core.StatusError{Status: 503, Message: "Loading model", Type: "unavailable_error",
			Body: []byte(`{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`)},
			Decision{Class: core.ClassLoading, Status: 503}},
		{"503 SAIF loading a specialist", &core.StatusError{Status: 503, RetryAfter: 8 * time.Second,
			Body: []byte(`{"status":"loading","specialist":"malware"}`)},
			Decision{Class: core.ClassLoading, Status: 503, RetryAfter: 8 * time.Second}},
		{"400 unknown SAIF specialist stops the chain", &core.StatusError{Status: 400, Code: "unknown_specialist",
			Type: "invalid_request_error"}, Decision{Class: core.ClassRequest, Status: 400}},
		{"404 endpoint an adapter does not serve moves on", &core.StatusError{Status: 404, Code: "unsupported_endpoint",
			Type: "invalid_request_error"}, Decision{Class: core.ClassEndpoint, Status: 404}},
		{"an answer that does not meet a valid request moves on with its 400", &core.UnmetError{Err: &core.StatusError{
			Status: 400, Code: "unsupported_value", Param: "dimensions", Type: "invalid_request_error"}},
			Decision{Class: core.ClassEndpoint, Status: 400}},
		{"503 status ok is not loading", &core.StatusError{Status: 503, Body: []byte(`{"status":"ok"}`)},
			retrying(core.ClassServerError, 503)},
		{"loading on a 500 is a server error", &core.StatusError{Status: 500, Body: []byte(`{"status":"loading"}`)},
			retrying(core.ClassServerError, 500)},
		{"429", &core.StatusError{Status: 429, RetryAfter: 2 * time.Second},
			Decision{Class: core.ClassRateLimit, Status: 429, Retry: true, Penalize: true, RetryAfter: 2 * time.Second}},
		{"429 insufficient_quota is not retried, benched at once", status(429, "You exceeded your current quota", "insufficient_quota", "insufficient_quota"),
			Decision{Class: core.ClassRateLimit, Status: 429, Penalize: true, Quota: true}},
		{"413", status(413, "too big", "", ""), Decision{Class: core.ClassOverflow, Status: 413}},
		// OpenRouter's daily cap on :free models: no backoff within a request lifts it.
		{"429 openrouter free-models-per-day is not retried", status(429, "Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day", "", "429"),
			Decision{Class: core.ClassRateLimit, Status: 429, Penalize: true, Quota: true}},
		{"429 openrouter free-models-per-day-high-balance is not retried", status(429, "Rate limit exceeded: free-models-per-day-high-balance.", "rate_limit_error", "429"),
			Decision{Class: core.ClassRateLimit, Status: 429, Penalize: true, Quota: true}},
		{"429 free-models-per-day in the raw body only", &core.StatusError{Status: 429,
			Body: []byte(`{"error":{"message":"Rate limit exceeded: free-models-per-day.","code":429}}`)},
			Decision{Class: core.ClassRateLimit, Status: 429, Penalize: true, Quota: true}},
		{"429 per-minute rate limit is still retried", status(429, "Rate limit reached for gpt-4o on requests per min (RPM): Limit 3", "requests", "rate_limit_exceeded"),
			retrying(core.ClassRateLimit, 429)},
		// Groq's flex tier at capacity: a busy upstream, told to the client as a 429.
		{"498 groq capacity_exceeded", status(498, "Flex tier capacity exceeded", "capacity_exceeded", "capacity_exceeded"),
			retrying(core.ClassRateLimit, 429)},
		{"498 keeps its Retry-After", &core.StatusError{Status: 498, RetryAfter: 3 * time.Second},
			Decision{Class: core.ClassRateLimit, Status: 429, Retry: true, Penalize: true, RetryAfter: 3 * time.Second}},
		// x-should-retry: false (OpenAI's SDKs obey it): no same-target retry; class unchanged.
		{"503 x-should-retry false", &core.StatusError{Status: 503, Header: http.Header{"X-Should-Retry": {"false"}}},
			Decision{Class: core.ClassServerError, Status: 503, Penalize: true}},
		{"429 x-should-retry false", &core.StatusError{Status: 429, Header: http.Header{"X-Should-Retry": {"False"}}},
			Decision{Class: core.ClassRateLimit, Status: 429, Penalize: true}},
		{"503 x-should-retry true", &core.StatusError{Status: 503, Header: http.Header{"X-Should-Retry": {"true"}}},
			retrying(core.ClassServerError, 503)},
		// Ollama could not load the model into this machine's memory: a fact about the endpoint
		// and the model that another try in a backoff's time meets again. Not retried, still
		// counted toward the cooldown.
		{"500 ollama requires more system memory", status(500, "model requires more system memory (12.3 GiB) than is available (8.1 GiB)", "api_error", ""),
			Decision{Class: core.ClassServerError, Status: 500, Penalize: true}},
		{"500 ollama requires more system memory than is currently available", status(500, "model requires more system memory than is currently available unable to load full model on GPU", "", ""),
			Decision{Class: core.ClassServerError, Status: 500, Penalize: true}},
		{"500 ollama memory in the raw body only", &core.StatusError{Status: 500,
			Body: []byte(`{"error":"model requires more system memory (5.3 GiB) than is available (3.5 GiB)"}`)},
			Decision{Class: core.ClassServerError, Status: 500, Penalize: true}},
		{"500 ollama runner CUDA out of memory", status(500, "llama runner process has terminated: CUDA error: out of memory", "", ""),
			Decision{Class: core.ClassServerError, Status: 500, Penalize: true}},
		{"500 ollama runner unable to allocate buffer", status(500, "llama runner process has terminated: error loading model: unable to allocate CUDA_Host buffer", "", ""),
			Decision{Class: core.ClassServerError, Status: 500, Penalize: true}},
		{"500 ollama llama-server out-of-memory during startup", status(500, "llama-server startup failed before projector CPU offload retry: llama-server reported out-of-memory during startup: ggml_backend_cpu_buffer_type_alloc_buffer", "", ""),
			Decision{Class: core.ClassServerError, Status: 500, Penalize: true}},
		{"500 ollama memory layout cannot be allocated", status(500, "memory layout cannot be allocated with num_gpu = 99", "", ""),
			Decision{Class: core.ClassServerError, Status: 500, Penalize: true}},
		{"500 ollama failed to commit memory", status(500, "failed to commit memory for model", "", ""),
			Decision{Class: core.ClassServerError, Status: 500, Penalize: true}},
		{"502 proxy relaying ollama's memory refusal", status(502, "model requires more system memory (16.0 GiB) than is available (8.0 GiB)", "", ""),
			Decision{Class: core.ClassServerError, Status: 502, Penalize: true}},
		{"500 runner terminated without naming memory is still retried", status(500, "llama runner process has terminated: exit status 2", "", ""),
			retrying(core.ClassServerError, 500)},
		{"422 tgi inputs + max_new_tokens", status(422, "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 1000 `max_new_tokens`", "", ""),
			Decision{Class: core.ClassOverflow, Status: 422}},
		{"422 tgi inputs must have less than", status(422, "Input validation error: `inputs` must have less than 4096 tokens. Given: 4545", "", ""),
			Decision{Class: core.ClassOverflow, Status: 422}},
		{"424 tgi generation failed", status(424, "Request failed during generation: Server error: CUDA out of memory", "", ""),
			retrying(core.ClassServerError, 424)},
		{"400 litellm context window", status(400, "litellm.ContextWindowExceededError: litellm.BadRequestError: Context Window exceeded for given call.", "", "400"),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 lm studio", status(400, "Trying to keep the first 15857 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough.", "", ""),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 lm studio n_keep", status(400, "The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 10247 >= n_ctx: 4096).", "", ""),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 anthropic exceed context limit", status(400, "input length and `max_tokens` exceed context limit: 179413 + 32768 > 200000", "", ""),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 openai configured limit", status(400, "Input tokens exceed the configured limit of 272000 tokens.", "invalid_request_error", ""),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 gemini token count", status(400, "The input token count (2800010) exceeds the maximum number of tokens allowed (1048575).", "", ""),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 a size limit that is not the context's", status(400, "Request size exceeds the configured limit", "", ""),
			Decision{Class: core.ClassRequest, Status: 400}},
		{"400 code context_length_exceeded", status(400, "whatever", "invalid_request_error", "context_length_exceeded"),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 openai", status(400, "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", "invalid_request_error", ""),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 vllm", status(400, "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.", "BadRequestError", "400"),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 vllm v1", status(400, "The decoder prompt (length 9254) is longer than the maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number of text tokens.", "BadRequestError", "400"),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 llama-server", status(400, "request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it", "exceed_context_size_error", "400"),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 llama-server old", status(400, "the request exceeds the available context size, try increasing it", "invalid_request_error", "400"),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 llama-server by type", status(400, "", "exceed_context_size_error", ""), Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 ollama", status(400, "the input length exceeds the context length", "", ""), Decision{Class: core.ClassOverflow, Status: 400}},
		{"500 ollama", status(500, "the input length exceeds the context length", "api_error", ""), Decision{Class: core.ClassOverflow, Status: 500}},
		{"400 anthropic via aggregator", status(400, "prompt is too long: 205000 tokens > 200000 maximum", "", ""),
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"400 overflow in raw body only", &core.StatusError{Status: 400, Body: []byte("Context length exceeded")},
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"llama-server batch size is not overflow", status(500, "input (700 tokens) is too large to process. increase the physical batch size (current batch size: 512)", "server_error", ""),
			retrying(core.ClassServerError, 500)},
		{"400 other", status(400, "messages: field required", "invalid_request_error", ""), Decision{Class: core.ClassRequest, Status: 400}},
		{"422", status(422, "", "", ""), Decision{Class: core.ClassRequest, Status: 422}},
		{"401", status(401, "Invalid API key", "invalid_request_error", "invalid_api_key"), Decision{Class: core.ClassEndpoint, Status: 401}},
		{"402", status(402, "", "", ""), Decision{Class: core.ClassEndpoint, Status: 402}},
		{"403", status(403, "", "", ""), Decision{Class: core.ClassEndpoint, Status: 403}},
		{"404", status(404, "model not found", "", ""), Decision{Class: core.ClassEndpoint, Status: 404}},
		{"410", status(410, "", "", ""), Decision{Class: core.ClassEndpoint, Status: 410}},
		{"405 a URL that takes no POST", status(405, "Method Not Allowed", "", ""), Decision{Class: core.ClassEndpoint, Status: 405}},
		{"501 endpoint not served", status(501, "This server does not support embeddings. Start it with `--embeddings`", "not_supported_error", ""),
			Decision{Class: core.ClassEndpoint, Status: 501}},
		{"302", status(302, "", "", ""), retrying(core.ClassServerError, 502)},
		{"stream", &core.StreamError{Target: "t", Message: "upstream closed the stream early"}, retrying(core.ClassServerError, 502)},
		{"stream error event naming an overflow", &core.StreamError{Target: "t", Message: "request (6009 tokens) exceeds the available context size (4096 tokens), try increasing it"},
			Decision{Class: core.ClassOverflow, Status: 400}},
		{"stream broken by its connection is never an overflow", &core.StreamError{Target: "t",
			Message: "upstream broke off: maximum context length", Err: io.ErrUnexpectedEOF}, retrying(core.ClassServerError, 502)},
		{"protocol", &core.ProtocolError{Target: "t", Err: errors.New("not SSE")}, retrying(core.ClassServerError, 502)},
		{"other", errors.New("mystery"), retrying(core.ClassServerError, 502)},
		{"lifecycle load timeout", &lifecycle.LoadTimeoutError{Target: "t", After: time.Minute},
			Decision{Class: core.ClassLoading, Status: 503}},
		{"lifecycle load timeout after a failed start", &lifecycle.LoadTimeoutError{Target: "t", After: time.Minute,
			Last: &lifecycle.ProcessError{Target: "t", Err: errors.New("exit status 3")}},
			Decision{Class: core.ClassLoading, Status: 503}},
		{"lifecycle process failed", &lifecycle.ProcessError{Target: "t", Err: errors.New("exec: not found"),
			Stderr: []string{"model file is corrupt"}}, retrying(core.ClassConnection, 502)},
		{"lifecycle process wrapped", fmt.Errorf("ensure: %w", &lifecycle.ProcessError{Target: "t"}),
			retrying(core.ClassConnection, 502)},
		{"lifecycle wait canceled by the client", fmt.Errorf("ensure: %w", context.Canceled),
			Decision{Class: core.ClassClientGone, Status: 499}},
		{"lifecycle closed", lifecycle.ErrClosed, retrying(core.ClassServerError, 502)},
		{"lifecycle stopping", fmt.Errorf("ensure: %w", lifecycle.ErrStopping),
			Decision{Class: core.ClassLoading, Status: 503}},
		{"lifecycle target removed by a reload", lifecycle.ErrRemoved, Decision{Class: core.ClassLoading, Status: 503}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Classify(tt.err)); diff != "" {
				t.Errorf("Classify(%v) mismatch (-want +got):\n%s", tt.err, diff)
			}
		})
	}
}

func attempt(target string, err error) Attempt {
	return Attempt{Target: target, Decision: Classify(err), Err: err}
}

func stopped(a Attempt) Attempt {
	a.Stopped = true
	return a
}

func TestRestore(t *testing.T) {
	unauthorized := &core.StatusError{Target: "a", Status: 401, Message: "Incorrect API key provided",
		Type: "invalid_request_error", Code: "invalid_api_key"}
	badParam := &core.StatusError{Target: "a", Status: 400, Message: "temperature must be <= 2",
		Type: "invalid_request_error", Param: "temperature"}
	refused := &core.ConnError{Target: "a", Err: errors.New("dial tcp 127.0.0.1:9: connect: connection refused")}
	tests := []struct {
		name     string
		attempts []Attempt
		want     ClientError
	}{
		{"empty", nil, ClientError{Status: 503, Message: "no target could serve", Type: "upstream_error", Code: "no_target"}},
		{"only target 401 stays 401", []Attempt{attempt("a", unauthorized)},
			ClientError{Status: 401, Message: "Incorrect API key provided", Type: "invalid_request_error", Code: "invalid_api_key"}},
		{"request error keeps param", []Attempt{attempt("a", badParam)},
			ClientError{Status: 400, Message: "temperature must be <= 2", Type: "invalid_request_error", Param: "temperature"}},
		{"an unmet request is its 400", []Attempt{attempt("a", &core.UnmetError{Err: &core.StatusError{Target: "a", Status: 400,
			Message: "Invalid 'dimensions': 4 cannot be given", Type: "invalid_request_error", Code: "unsupported_value", Param: "dimensions"}})},
			ClientError{Status: 400, Message: "Invalid 'dimensions': 4 cannot be given", Type: "invalid_request_error",
				Code: "unsupported_value", Param: "dimensions"}},
		{"same class and status restores the first", []Attempt{
			attempt("a", &core.StatusError{Status: 500, Message: "first", Type: "server_error"}),
			attempt("b", &core.StatusError{Status: 500, Message: "second", Type: "server_error"})},
			ClientError{Status: 500, Message: "first", Type: "server_error"}},
		{"overflow said inside a stream", []Attempt{attempt("a", &core.StreamError{Target: "a", Message: "prompt is too long: 205000 tokens > 200000 maximum"})},
			ClientError{Status: 400, Message: "prompt is too long: 205000 tokens > 200000 maximum",
				Type: "invalid_request_error", Code: "context_length_exceeded"}},
		{"connection", []Attempt{attempt("a", refused), attempt("b", &core.ConnError{Target: "b", Err: io.EOF})},
			ClientError{Status: 502, Message: "upstream a unreachable: connection failed",
				Type: "upstream_error", Code: "upstream_unreachable"}},
		{"timeout", []Attempt{attempt("a", &core.TimeoutError{Target: "a", After: 30 * time.Second})},
			ClientError{Status: 504, Message: "upstream a did not answer within 30s", Type: "upstream_error", Code: "upstream_timeout"}},
		{"an answer's body silent for idle_timeout: its head had come", []Attempt{attempt("a", &core.TimeoutError{Target: "a", After: 2 * time.Minute, Idle: true})},
			ClientError{Status: 504, Message: "upstream a sent nothing of its answer for 2m0s (idle_timeout)", Type: "upstream_error", Code: "upstream_timeout"}},
		{"deadline", []Attempt{attempt("a", context.DeadlineExceeded)},
			ClientError{Status: 504, Message: "upstream a timed out", Type: "upstream_error", Code: "upstream_timeout"}},
		{"a process that would not start", []Attempt{attempt("a", &lifecycle.ProcessError{Target: "a", Err: errors.New("exec: no such file")})},
			ClientError{Status: 502, Message: "upstream a unreachable: the target's process could not start",
				Type: "upstream_error", Code: "upstream_unreachable"}},
		{"a process still loading at load_timeout", []Attempt{attempt("a", &lifecycle.LoadTimeoutError{Target: "a", After: time.Minute,
			Last: &lifecycle.ProcessError{Target: "a", Err: errors.New(`exec: "/opt/llm/bin/llama-server": no such file`)}})},
			ClientError{Status: 503, Message: "upstream a is still loading: not ready within 1m0s",
				Type: "upstream_error", Code: "model_loading"}},
		{"no slot of its group came free by load_timeout", []Attempt{attempt("a", &lifecycle.LoadTimeoutError{Target: "a", After: time.Minute,
			Group: "gpu"})},
			ClientError{Status: 503, Message: "upstream a is not running: no slot of its group gpu came free within 1m0s",
				Type: "upstream_error", Code: "model_loading"}},
		{"a target a reload removed while a request waited for it", []Attempt{attempt("a", lifecycle.ErrRemoved)},
			ClientError{Status: 503, Message: "upstream a is not running, and a reload removed it",
				Type: "upstream_error", Code: "model_loading"}},
		{"loading keeps retry-after", []Attempt{attempt("a", &core.StatusError{Status: 503, RetryAfter: 5 * time.Second,
			Body: []byte(`{"status":"loading"}`)})},
			ClientError{Status: 503, Message: "upstream a is loading the model", Type: "upstream_error", Code: "model_loading",
				RetryAfter: 5 * time.Second}},
		{"llama-server loading keeps its words", []Attempt{attempt("a", &core.StatusError{Status: 503, Message: "Loading model",
			Type: "unavailable_error", Code: "503"})},
			ClientError{Status: 503, Message: "Loading model", Type: "unavailable_error", Code: "503"}},
		{"client gone", []Attempt{attempt("a", context.Canceled)},
			ClientError{Status: 499, Message: "client closed the request", Type: "request_canceled", Code: "client_closed_request"}},
		{"rate limit alone", []Attempt{attempt("a", &core.StatusError{Status: 429, Message: "slow down", RetryAfter: time.Second})},
			ClientError{Status: 429, Message: "slow down", Type: "rate_limit_error", Code: "rate_limit_exceeded", RetryAfter: time.Second}},
		{"bare status gets a message", []Attempt{attempt("a", &core.StatusError{Status: 502})},
			ClientError{Status: 502, Message: "upstream a answered 502 Bad Gateway", Type: "upstream_error"}},
		{"stream error", []Attempt{attempt("a", &core.StreamError{Target: "a", Message: "upstream closed the stream early"})},
			ClientError{Status: 502, Message: "upstream a broke off: upstream closed the stream early", Type: "upstream_error",
				Code: "upstream_stream_error"}},
		{"protocol error", []Attempt{attempt("a", &core.ProtocolError{Target: "a", Err: errors.New("want text/event-stream, got application/json")})},
			ClientError{Status: 502, Message: "upstream a gave an answer the gateway could not read: want text/event-stream, got application/json",
				Type: "upstream_error", Code: "bad_upstream_response"}},
		{"mixed lists every attempt", []Attempt{
			attempt("a", refused),
			attempt("b", &core.StatusError{Status: 429, RetryAfter: 20 * time.Second}),
			attempt("c", &core.StatusError{Status: 503, Body: []byte(`{"status":"loading"}`), RetryAfter: 4 * time.Second}),
			attempt("d", &core.TimeoutError{Target: "d", After: time.Second})},
			ClientError{Status: 503, Type: "upstream_error", Code: "all_targets_failed", RetryAfter: 4 * time.Second,
				Message: "all targets failed: a: connection (502); b: rate_limit (429); c: loading (503); d: timeout (504)"}},
		{"rate limits everywhere: the soonest wait", []Attempt{
			attempt("a", &core.StatusError{Status: 429, Message: "slow down"}),
			attempt("b", &core.StatusError{Status: 429, Message: "later", RetryAfter: 9 * time.Second}),
			attempt("c", &core.StatusError{Status: 429, Message: "later", RetryAfter: 3 * time.Second})},
			ClientError{Status: 429, Message: "slow down", Type: "rate_limit_error", Code: "rate_limit_exceeded", RetryAfter: 3 * time.Second}},
		{"a stopping failure is answered as it is", []Attempt{
			attempt("a", &core.StatusError{Status: 500}), stopped(attempt("b", badParam))},
			ClientError{Status: 400, Message: "temperature must be <= 2", Type: "invalid_request_error", Param: "temperature"}},
		{"same class different status is mixed", []Attempt{
			attempt("a", &core.StatusError{Status: 500}), attempt("b", &core.StatusError{Status: 502})},
			ClientError{Status: 503, Type: "upstream_error", Code: "all_targets_failed",
				Message: "all targets failed: a: server_error (500); b: server_error (502)"}},
		{"overflow everywhere restores the first", []Attempt{
			attempt("small", &core.StatusError{Status: 400, Message: "This model's maximum context length is 4096 tokens.", Type: "invalid_request_error"}),
			attempt("big", &core.StatusError{Status: 400, Message: "request (9000 tokens) exceeds the available context size (8192 tokens)", Type: "exceed_context_size_error"})},
			ClientError{Status: 400, Message: "This model's maximum context length is 4096 tokens.", Type: "invalid_request_error",
				Code: "context_length_exceeded"}},
		{"overflows of any status are one 400", []Attempt{
			attempt("vllm", &core.StatusError{Status: 413, Message: "This model's maximum context length is 4096 tokens.", Type: "PayloadTooLarge", Code: "413"}),
			attempt("ollama", &core.StatusError{Status: 500, Message: "the input length exceeds the context length"})},
			ClientError{Status: 400, Message: "This model's maximum context length is 4096 tokens.", Type: "invalid_request_error",
				Code: "context_length_exceeded"}},
		{"out of credit everywhere: no retry helps", []Attempt{
			attempt("a", &core.StatusError{Status: 429, Message: "You exceeded your current quota", Code: "insufficient_quota"}),
			attempt("b", &core.StatusError{Status: 429, Message: "You exceeded your current quota", Code: "insufficient_quota"})},
			ClientError{Status: 429, Message: "You exceeded your current quota", Type: "rate_limit_error", Code: "insufficient_quota",
				ShouldRetry: RetryNo}},
		{"endpoints and a bill: no retry helps, and the codes are said", []Attempt{
			attempt("a", &core.StatusError{Status: 404, Message: "model not found", Code: "model_not_found"}),
			attempt("b", &core.StatusError{Status: 429, Message: "You exceeded your current quota", Code: "insufficient_quota"})},
			ClientError{Status: 503, Type: "upstream_error", Code: "all_targets_failed", ShouldRetry: RetryNo,
				Message: "all targets failed: a: endpoint (404 model_not_found); b: rate_limit (429 insufficient_quota)"}},
		{"a code that is not an identifier is not said", []Attempt{
			attempt("a", &core.StatusError{Status: 500, Code: "see the prompt: secret words"}),
			attempt("b", &core.StatusError{Status: 429, Code: "rate_limit_exceeded"})},
			ClientError{Status: 503, Type: "upstream_error", Code: "all_targets_failed",
				Message: "all targets failed: a: server_error (500); b: rate_limit (429 rate_limit_exceeded)"}},
		{"a code that only repeats the status is not said twice", []Attempt{
			attempt("a", &core.StatusError{Status: 413, Code: "413"}),
			attempt("b", &core.StatusError{Status: 500, Code: "500"})},
			ClientError{Status: 503, Type: "upstream_error", Code: "all_targets_failed",
				Message: "all targets failed: a: overflow (413); b: server_error (500)"}},
		{"a bill beside a timeout: a retry may help", []Attempt{
			attempt("a", &core.StatusError{Status: 429, Code: "insufficient_quota"}),
			attempt("b", &core.TimeoutError{Target: "b", After: time.Second})},
			ClientError{Status: 503, Type: "upstream_error", Code: "all_targets_failed",
				Message: "all targets failed: a: rate_limit (429 insufficient_quota); b: timeout (504)"}},
		{"the upstream's own x-should-retry is passed on", []Attempt{
			attempt("a", &core.StatusError{Status: 500, Message: "overloaded", Header: http.Header{"X-Should-Retry": {"true"}}})},
			ClientError{Status: 500, Message: "overloaded", Type: "upstream_error", ShouldRetry: RetryYes}},
		{"an upstream's x-should-retry: false everywhere", []Attempt{
			attempt("a", &core.StatusError{Status: 500, Message: "no", Header: http.Header{"X-Should-Retry": {"false"}}}),
			attempt("b", &core.StatusError{Status: 502, Message: "no", Header: http.Header{"X-Should-Retry": {" False "}}})},
			ClientError{Status: 503, Type: "upstream_error", Code: "all_targets_failed", ShouldRetry: RetryNo,
				Message: "all targets failed: a: server_error (500); b: server_error (502)"}},
		{"an overflow's x-should-retry was said of its 500, not of the 400 it is answered as", []Attempt{
			attempt("ollama", &core.StatusError{Status: 500, Message: "the input length exceeds the context length",
				Header: http.Header{"X-Should-Retry": {"true"}}})},
			ClientError{Status: 400, Message: "the input length exceeds the context length", Type: "invalid_request_error",
				Code: "context_length_exceeded"}},
		{"overflows of two statuses: neither x-should-retry is the 400's", []Attempt{
			attempt("a", &core.StatusError{Status: 413, Message: "too long", Header: http.Header{"X-Should-Retry": {"false"}}}),
			attempt("b", &core.StatusError{Status: 500, Message: "the input length exceeds the context length"})},
			ClientError{Status: 400, Message: "too long", Type: "invalid_request_error", Code: "context_length_exceeded"}},
		{"a 401 is not retried by SDKs: nothing added", []Attempt{
			attempt("a", &core.StatusError{Status: 401, Message: "bad key", Code: "invalid_api_key"})},
			ClientError{Status: 401, Message: "bad key", Type: "invalid_request_error", Code: "invalid_api_key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Restore(tt.attempts)); diff != "" {
				t.Errorf("Restore mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientErrorJSON(t *testing.T) {
	tests := []struct {
		name string
		e    ClientError
		want string
	}{
		{"nulls", ClientError{Status: 503, Message: "m", Type: "upstream_error"},
			`{"error":{"message":"m","type":"upstream_error","param":null,"code":null}}`},
		{"all fields", ClientError{Status: 400, Message: "bad \"t\"", Type: "invalid_request_error", Code: "c", Param: "temperature"},
			`{"error":{"message":"bad \"t\"","type":"invalid_request_error","param":"temperature","code":"c"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, string(tt.e.JSON())); diff != "" {
				t.Errorf("JSON mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A cancellation is the client's only while the request's context is done; with the context
// live it is the target failing as a refused connection does. Other errors classify as Classify.
func TestClassifyFor(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	wrapped := fmt.Errorf("upstream saif: %w", context.Canceled)
	conn := Decision{Class: core.ClassConnection, Status: http.StatusBadGateway, Retry: true, Penalize: true}
	gone := Decision{Class: core.ClassClientGone, Status: StatusClientClosedRequest}
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want Decision
	}{
		{"canceled, client here", live, wrapped, conn},
		{"canceled, client gone", done, wrapped, gone},
		{"timeout, client here", live, &core.TimeoutError{Target: "saif"}, Classify(&core.TimeoutError{Target: "saif"})},
		{"nil", live, nil, Decision{Class: core.ClassNone, Status: http.StatusOK}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ClassifyFor(tt.ctx, tt.err)); diff != "" {
				t.Errorf("ClassifyFor (-want +got):\n%s", diff)
			}
		})
	}
}
