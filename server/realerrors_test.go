package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hayula/gateway/server"
)

// realError is one error answer as a real upstream sends it: its status, Content-Type and body,
// copied from the server's source or from a report of it, and what the gateway must make of it.
type realError struct {
	name    string
	adapter string // "openai" (default) or "ollama"
	status  int
	ctype   string // default application/json
	header  map[string]string
	body    string
	// class is the failure class the attempt must be counted as.
	class string
	// message is what the client's error message must say when nothing else answered; empty
	// for overflow, which the guarded tail serves.
	message string
	// streamOnly: the answer is a stream's (a 200 event stream that carries the error), sent
	// only to a stream request.
	streamOnly bool
	// once: a failure of a retried class (server_error, rate_limit) that is still not retried
	// on the same target, because another try within the request meets it again.
	once bool
	// clientStatus is the client's status when it is not the upstream's (a status clients do
	// not know); 0: the upstream's.
	clientStatus int
}

// realErrors are the error answers of the servers a gateway sits in front of. Each was checked
// against the server's source or an issue quoting its wire answer.
var realErrors = []realError{
	// vLLM, OpenAI server. Before 0.6: a top-level error object with a numeric code.
	{name: "vllm old maximum context length", status: 400,
		body:  `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
		class: "overflow"},
	// vLLM, {"error":{…}} with the newer wording (vllm-project/vllm#34340).
	{name: "vllm max_tokens too large", status: 400,
		body:  `{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 65536. This model's maximum context length is 262144 tokens and your request has 203462 input tokens (65536 > 262144 - 203462). None","type":"BadRequestError","param":null,"code":400}}`,
		class: "overflow"},
	// vLLM V1 input processing (vllm-project/vllm#12600).
	{name: "vllm v1 longer than the maximum model length", status: 400,
		body:  "{\"error\":{\"message\":\"The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number of text tokens.\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}",
		class: "overflow"},
	// vLLM as proposed in #34363/#34721: 413 PayloadTooLarge; and #37011's string code.
	{name: "vllm 413 payload too large", status: 413,
		body:  `{"error":{"message":"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.","type":"PayloadTooLarge","param":null,"code":413}}`,
		class: "overflow"},
	{name: "vllm context_length_exceeded code", status: 400,
		body:  `{"error":{"message":"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens.","type":"BadRequestError","param":null,"code":"context_length_exceeded"}}`,
		class: "overflow"},
	// KServe's vLLM runtime before kserve/kserve#3886 answered the overflow with a 500.
	{name: "kserve vllm overflow as 500", status: 500,
		body:  `{"error":{"code":"500","message":"This model's maximum context length is 8192 tokens. However, you requested 50014 tokens (14 in the messages, 50000 in the completion). Please reduce the length of the messages or completion.","param":"","type":"OpenAIError"}}`,
		class: "overflow"},
	{name: "vllm model does not exist", status: 404,
		body:  "{\"error\":{\"message\":\"The model `qwen-72b` does not exist.\",\"type\":\"NotFoundError\",\"param\":\"model\",\"code\":404}}",
		class: "endpoint", message: "The model `qwen-72b` does not exist."},

	// llama.cpp llama-server.
	{name: "llama-server exceed_context_size_error", status: 400,
		body:  `{"error":{"code":400,"message":"request (25837 tokens) exceeds the available context size (25088 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":25837,"n_ctx":25088}}`,
		class: "overflow"},
	{name: "llama-server exceed_context_size_error as 500 (ggml-org/llama.cpp#15780)", status: 500,
		body:  `{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":1407,"n_ctx":256}}`,
		class: "overflow"},
	{name: "llama-server older invalid_request_error", status: 400,
		body:  `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing the context size or enable context shift","type":"invalid_request_error"}}`,
		class: "overflow"},
	{name: "llama-server loading model", status: 503,
		body:  `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`,
		class: "loading", message: "Loading model"},
	{name: "llama-server physical batch", status: 500,
		body:  `{"error":{"code":500,"message":"input is too large to process. increase the physical batch size","type":"server_error"}}`,
		class: "server_error", message: "input is too large to process. increase the physical batch size"},

	// llama-server's stream answers 200 at once and says the error inside it. Builds through
	// 2025 used a field of their own, "error:", which SSE parsers ignore (ggml-org/llama.cpp
	// #16109, coddy-project/coddy-agent#106); later builds send it as data.
	{name: "llama-server 2025 stream error field", status: 200, ctype: "text/event-stream", streamOnly: true,
		body:  "error: {\"code\":400,\"message\":\"the request exceeds the available context size. try increasing the context size or enable context shift\",\"type\":\"invalid_request_error\"}\n\ndata: [DONE]\n\n",
		class: "overflow"},
	{name: "llama-server stream error data", status: 200, ctype: "text/event-stream", streamOnly: true,
		body:  "data: {\"error\":{\"code\":400,\"message\":\"request (6009 tokens) exceeds the available context size (4096 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":6009,\"n_ctx\":4096}}\n\n",
		class: "overflow"},
	// A proxy that answers every call 200, the error in the body (LiteLLM's pass-through, some
	// hosted gateways): an overflow said there is an overflow too.
	{name: "overflow in a 200 answer's error", status: 200,
		body:  `{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`,
		class: "overflow"},
	// A provider's failure said in a 200's body, not an overflow (OpenRouter's docs: an error
	// while the model produces the output comes in the body once the 200 is sent).
	{name: "openrouter 200 answer that is an error", status: 200,
		body:  `{"error":{"message":"Provider returned error","code":502,"metadata":{"raw":"upstream connect error","provider_name":"Chutes"}},"user_id":"user_1"}`,
		class: "server_error", message: "upstream a gave an answer the gateway could not read: a 2xx answer that is an error: Provider returned error"},
	{name: "openrouter stream error before the first chunk", status: 200, ctype: "text/event-stream", streamOnly: true,
		body:  ": OPENROUTER PROCESSING\n\ndata: {\"error\":{\"message\":\"Provider returned error\",\"code\":502}}\n\n",
		class: "server_error", message: "upstream a broke off: Provider returned error"},

	// Ollama, native /api/chat: {"error":"…"}.
	{name: "ollama native model not found", adapter: "ollama", status: 404,
		body:  `{"error":"model \"llama9\" not found, try pulling it first"}`,
		class: "endpoint", message: `model "llama9" not found, try pulling it first`},
	{name: "ollama native requires more system memory", adapter: "ollama", status: 500,
		body:  `{"error":"model requires more system memory (5.3 GiB) than is available (3.5 GiB)"}`,
		class: "server_error", message: "model requires more system memory (5.3 GiB) than is available (3.5 GiB)", once: true},
	// Newer builds, when the model does not fit even after evicting the others (llm/server.go's
	// verifyLayout wraps ErrLoadRequiredFull).
	{name: "ollama native requires more system memory than is currently available", adapter: "ollama", status: 500,
		body:  `{"error":"model requires more system memory than is currently available unable to load full model on GPU"}`,
		class: "server_error", message: "model requires more system memory than is currently available unable to load full model on GPU", once: true},
	// The runner died loading the model into memory it could not get (ollama/ollama#9782;
	// continuedev/continue#11223 quotes the 500's body).
	{name: "ollama native runner CUDA out of memory", adapter: "ollama", status: 500,
		body:  `{"error":"llama runner process has terminated: CUDA error: out of memory"}`,
		class: "server_error", message: "llama runner process has terminated: CUDA error: out of memory", once: true},
	{name: "ollama native runner unable to allocate buffer", adapter: "ollama", status: 500,
		body:  `{"error":"llama runner process has terminated: error loading model: unable to allocate CUDA_Host buffer"}`,
		class: "server_error", message: "llama runner process has terminated: error loading model: unable to allocate CUDA_Host buffer", once: true},
	// A runner that died of something else may be a passing crash: still retried.
	{name: "ollama native runner terminated", adapter: "ollama", status: 500,
		body:  `{"error":"llama runner process has terminated: exit status 2"}`,
		class: "server_error", message: "llama runner process has terminated: exit status 2"},
	{name: "ollama native input exceeds context", adapter: "ollama", status: 400,
		body:  `{"error":"the input length exceeds the context length"}`,
		class: "overflow"},
	// Ollama, OpenAI-compatible /v1.
	{name: "ollama openai model not found", status: 404,
		body:  `{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`,
		class: "endpoint", message: `model "llama9" not found, try pulling it first`},
	{name: "ollama openai requires more system memory", status: 500,
		body:  `{"error":{"message":"model requires more system memory (16.0 GiB) than is available (8.0 GiB)","type":"api_error","param":null,"code":null}}`,
		class: "server_error", message: "model requires more system memory (16.0 GiB) than is available (8.0 GiB)", once: true},

	// OpenAI.
	{name: "openai context_length_exceeded", status: 400,
		body:  `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		class: "overflow"},
	{name: "openai configured limit (BerriAI/litellm#15968)", status: 400,
		body:  `{"error":{"message":"Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 509178 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":null}}`,
		class: "overflow"},
	{name: "openai insufficient_quota", status: 429,
		body:  `{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		class: "rate_limit", message: "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.", once: true},
	{name: "openai rate limit", status: 429, header: map[string]string{"Retry-After": "2"},
		body:  `{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
		class: "rate_limit", message: "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s."},
	{name: "openai model_not_found", status: 404,
		body:  "{\"error\":{\"message\":\"The model `gpt-9` does not exist or you do not have access to it.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}",
		class: "endpoint", message: "The model `gpt-9` does not exist or you do not have access to it."},
	{name: "openai invalid_api_key", status: 401,
		body:  `{"error":{"message":"Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
		class: "endpoint", message: "Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys."},
	{name: "openai invalid parameter", status: 400,
		body:  `{"error":{"message":"Invalid value for 'temperature': must be between 0 and 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`,
		class: "request", message: "Invalid value for 'temperature': must be between 0 and 2."},

	// OpenRouter.
	{name: "openrouter 402 credits", status: 402,
		body:  `{"error":{"code":402,"message":"This request requires more credits, or fewer max_tokens. You requested up to 4096 tokens, but can only afford 1000. To increase, visit https://openrouter.ai/settings/credits and upgrade to a paid account","metadata":{"provider_name":null}},"user_id":"user_1"}`,
		class: "endpoint", message: "This request requires more credits, or fewer max_tokens. You requested up to 4096 tokens, but can only afford 1000. To increase, visit https://openrouter.ai/settings/credits and upgrade to a paid account"},
	{name: "openrouter 400 context", status: 400,
		body:  `{"error":{"message":"This endpoint's maximum context length is 131072 tokens. However, you requested about 200000 tokens (199000 of text input, 1000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":null}}}`,
		class: "overflow"},
	{name: "openrouter 429 free per day", status: 429,
		body:  `{"error":{"message":"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day","code":429,"metadata":{"headers":{"X-RateLimit-Limit":"50","X-RateLimit-Remaining":"0","X-RateLimit-Reset":"1741305600000"},"provider_name":null}},"user_id":"user_1"}`,
		class: "rate_limit", message: "Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day", once: true},
	// The same cap as relayed with a type and a string code (Gitlawb/openclaude#1549).
	{name: "openrouter 429 free per day high balance", status: 429,
		body:  `{"error":{"message":"Rate limit exceeded: free-models-per-day-high-balance.","type":"rate_limit_error","code":"429"}}`,
		class: "rate_limit", message: "Rate limit exceeded: free-models-per-day-high-balance.", once: true},
	// OpenRouter's 408, "Your request timed out" (its errors page; the body as its SDKs'
	// RequestTimeoutResponseErrorData example gives it): its own timeout, not the request's fault.
	{name: "openrouter 408 timed out", status: 408,
		body:  `{"error":{"code":408,"message":"Operation timed out. Please try again later."}}`,
		class: "server_error", message: "Operation timed out. Please try again later."},
	{name: "openrouter 404 no endpoints", status: 404,
		body:  `{"error":{"message":"No endpoints found that support tool use. To learn more about provider routing, visit: https://openrouter.ai/docs/provider-routing","code":404}}`,
		class: "endpoint", message: "No endpoints found that support tool use. To learn more about provider routing, visit: https://openrouter.ai/docs/provider-routing"},
	{name: "openrouter 502 provider returned error", status: 502,
		body:  `{"error":{"message":"Provider returned error","code":502,"metadata":{"raw":"upstream connect error","provider_name":"Chutes"}},"user_id":"user_1"}`,
		class: "server_error", message: "Provider returned error"},

	// LiteLLM proxy.
	{name: "litellm ContextWindowExceededError wrapping anthropic", status: 400,
		body:  `{"error":{"message":"litellm.BadRequestError: litellm.ContextWindowExceededError: AnthropicError - {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 200480 tokens > 200000 maximum\"}}\nReceived Model Group=anthropic/claude-3-5-sonnet-20241022\nAvailable Model Group Fallbacks=None","type":null,"param":null,"code":"400"}}`,
		class: "overflow"},
	{name: "litellm context window exceeded for given call", status: 400,
		body:  `{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: Context Window exceeded for given call. No models have context window large enough for this call.","type":null,"param":null,"code":"400"}}`,
		class: "overflow"},
	{name: "litellm anthropic exceed context limit", status: 400,
		body:  "{\"error\":{\"message\":\"litellm.BadRequestError: AnthropicException - b'{\\\"type\\\":\\\"error\\\",\\\"error\\\":{\\\"type\\\":\\\"invalid_request_error\\\",\\\"message\\\":\\\"input length and `max_tokens` exceed context limit: 179413 + 32768 > 200000, decrease input length or `max_tokens` and try again\\\"}}'.\",\"type\":null,\"param\":null,\"code\":\"400\"}}",
		class: "overflow"},
	{name: "litellm invalid proxy token", status: 401,
		body:  "{\"error\":{\"message\":\"Authentication Error, Invalid proxy server token passed. Received API Key = sk-...8aSP, Key Hash (Token) =569909a9. Unable to find token in cache or `LiteLLM_VerificationTokenTable`\",\"type\":\"token_not_found_in_db\",\"param\":\"key\",\"code\":\"401\"}}",
		class: "endpoint", message: "Authentication Error, Invalid proxy server token passed. Received API Key = sk-...8aSP, Key Hash (Token) =569909a9. Unable to find token in cache or `LiteLLM_VerificationTokenTable`"},

	// Hugging Face TGI: validation errors are 422, generation errors 424.
	{name: "tgi inputs + max_new_tokens", status: 422,
		body:  "{\"error\":\"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 1000 `max_new_tokens`\",\"error_type\":\"validation\"}",
		class: "overflow"},
	{name: "tgi inputs must have less than", status: 422,
		body:  "{\"error\":\"Input validation error: `inputs` must have less than 4096 tokens. Given: 4545\",\"error_type\":\"validation\"}",
		class: "overflow"},
	{name: "tgi other validation error", status: 422,
		body:  "{\"error\":\"Input validation error: `temperature` must be strictly positive\",\"error_type\":\"validation\"}",
		class: "request", message: "Input validation error: `temperature` must be strictly positive"},
	{name: "tgi generation failed", status: 424,
		body:  `{"error":"Request failed during generation: Server error: index 1 is out of bounds for dimension 0 with size 1","error_type":"generation"}`,
		class: "server_error", message: "Request failed during generation: Server error: index 1 is out of bounds for dimension 0 with size 1"},
	{name: "tgi overloaded", status: 429,
		body:  `{"error":"Model is overloaded","error_type":"overloaded"}`,
		class: "rate_limit", message: "Model is overloaded"},

	// LM Studio (lmstudio-ai/lmstudio-bug-tracker#237, #546, openhuman#3550).
	{name: "lm studio context the overflows", status: 400,
		body:  `{"error":"Trying to keep the first 15857 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}`,
		class: "overflow"},
	{name: "lm studio n_keep", status: 400,
		body:  `{"error":"The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 10247 >= n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter prompt."}`,
		class: "overflow"},

	// Groq: a context overflow by code; a request over the tier's tokens per minute is a 413.
	{name: "groq context_length_exceeded", status: 400,
		body:  `{"error":{"message":"Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		class: "overflow"},
	{name: "groq 413 request too large for TPM", status: 413,
		body:  "{\"error\":{\"message\":\"Request too large for model `llama3-70b-8192` in organization `org_1` on tokens per minute (TPM): Limit 6000, Requested 7000, please reduce your message size and try again.\",\"type\":\"tokens\",\"code\":\"rate_limit_exceeded\"}}",
		class: "overflow"},

	// Groq's flex tier at capacity: its own 498, code capacity_exceeded, which its docs say to
	// back off and retry (console.groq.com/docs/flex-processing). A busy upstream, as a 429 is:
	// the client, when nothing else answers, gets a 429, which SDKs know to retry.
	{name: "groq 498 flex capacity exceeded", status: 498,
		body:  `{"error":{"message":"Flex tier capacity exceeded. Please try again later.","type":"capacity_exceeded","code":"capacity_exceeded"}}`,
		class: "rate_limit", message: "Flex tier capacity exceeded. Please try again later.", clientStatus: 429},

	// Mistral: its API gateway's 429 has a top-level message only; its own, the vLLM-like
	// top-level error object with a string code (raycast/extensions#31107, cline/cline#9085,
	// pydantic/pydantic-ai#1885).
	{name: "mistral 429 requests rate limit", status: 429,
		body:  `{"message":"Requests rate limit exceeded"}`,
		class: "rate_limit", message: "Requests rate limit exceeded"},
	{name: "mistral 429 rate_limited 1300", status: 429,
		body:  `{"object":"error","message":"Rate limit exceeded","type":"rate_limited","param":null,"code":"1300","raw_status_code":429}`,
		class: "rate_limit", message: "Rate limit exceeded"},

	// Together, whose inference servers speak TGI's validation text with a 400.
	{name: "together inputs + max_new_tokens", status: 400,
		body:  "{\"error\":{\"message\":\"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 32769. Given: 40000 `inputs` tokens and 2048 `max_new_tokens`\",\"type\":\"invalid_request_error\",\"param\":\"max_tokens\",\"code\":null}}",
		class: "overflow"},

	// Bodies that say nothing a parser can use: the status alone classifies them.
	{name: "html 502 from a proxy", status: 502, ctype: "text/html",
		body:  "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
		class: "server_error", message: "upstream a answered 502 Bad Gateway"},
	{name: "html 401 from a proxy", status: 401, ctype: "text/html",
		body:  "<html><head><title>401 Authorization Required</title></head><body><h1>401</h1></body></html>",
		class: "endpoint", message: "upstream a answered 401 Unauthorized"},
	{name: "empty 500", status: 500, body: "", class: "server_error", message: "upstream a answered 500 Internal Server Error"},
	{name: "empty 400", status: 400, body: "", class: "request", message: "upstream a answered 400 Bad Request"},
	{name: "plain text 429", status: 429, ctype: "text/plain", body: "Too Many Requests\n",
		class: "rate_limit", message: "upstream a answered 429 Too Many Requests"},
	{name: "plain text 413", status: 413, ctype: "text/plain", body: "request entity too large", class: "overflow"},
	{name: "json array 400", status: 400, body: `["bad"]`, class: "request", message: "upstream a answered 400 Bad Request"},
	{name: "huge 503", status: 503, ctype: "text/plain", body: strings.Repeat("x", 1<<20),
		class: "server_error", message: "upstream a answered 503 Service Unavailable"},
}

// realGateway is a route a → b → tail over upstreams that all answer e (the tail answers), with
// the tail guarded for overflow as the demo's paid openrouter is.
func realGateway(t *testing.T, e realError, extra string) (g *gateway, a, b, tail *fake) {
	t.Helper()
	a, b, tail = newFake(t, "a"), newFake(t, "b"), newFake(t, "tail")
	h := realHandler(e)
	a.set(h)
	b.set(h)
	adapter := e.adapter
	if adapter == "" {
		adapter = "openai"
	}
	tgt := func(name string, f *fake) string {
		url := f.url()
		if adapter == "ollama" {
			url = f.srv.URL
		}
		return fmt.Sprintf("[targets.%s]\nadapter = %q\nurl = %q\nclass = \"private\"\nmodel = \"m\"\n%s\n", name, adapter, url, extra)
	}
	cfg := tgt("a", a) + tgt("b", b) + target("tail", tail.url(), "public") + `
[routes.r]
targets = ["a", "b", "tail"]
guard = { tail = ["overflow"] }
`
	return newGateway(t, cfg, nil), a, b, tail
}

func realHandler(e realError) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		ct := e.ctype
		if ct == "" {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		for k, v := range e.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(e.status)
		_, _ = w.Write([]byte(e.body))
	}
}

// TestRealUpstreamErrors feeds each real error answer through the gateway: the adapter reads it,
// errmap classifies it, the chain moves on or stops, and the client gets either the guarded
// tail's answer (an overflow) or the upstream's own error, OpenAI-shaped, with its status.
func TestRealUpstreamErrors(t *testing.T) {
	t.Parallel()
	for _, e := range realErrors {
		for _, stream := range []bool{false, true} {
			if e.streamOnly && !stream {
				continue
			}
			name := e.name
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				g, a, b, tail := realGateway(t, e, "")
				body := `{"model":"r","messages":[{"role":"user","content":"hi there"}]}`
				if stream {
					body = `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi there"}]}`
				}
				rep := g.post(t, "/v1/chat/completions", body)
				chain := rep.header.Get("x-hayula-chain")

				_, lines := scrape(t, g)
				if want := fmt.Sprintf(`hayula_upstream_attempts_total{target="a",result=%q} 1`, e.class); !lines[want] {
					t.Errorf("a's attempt is not counted as %s (want %s); chain %q, reply %d %.300s", e.class, want, chain, rep.status, rep.body)
				}

				switch e.class {
				case "overflow":
					if rep.status != 200 || chain != "a→b→tail (served by tail)" {
						t.Fatalf("an overflow must reach the guarded tail: status %d chain %q: %.300s", rep.status, chain, rep.body)
					}
					return
				case "request":
					if b.hits.Load() != 0 {
						t.Errorf("a request error moved the chain on (b asked %d times)", b.hits.Load())
					}
					if chain != "a" {
						t.Errorf("chain %q, want a", chain)
					}
				default:
					if b.hits.Load() != 1 || tail.hits.Load() != 0 {
						t.Errorf("a %s must move on to b and not enter the overflow-guarded tail: b %d, tail %d; chain %q",
							e.class, b.hits.Load(), tail.hits.Load(), chain)
					}
				}
				if a.hits.Load() != 1 {
					t.Errorf("a asked %d times, want once (max_retries is 0)", a.hits.Load())
				}
				want := e.status
				if want < 400 || want > 599 {
					want = 502
				}
				if e.clientStatus != 0 {
					want = e.clientStatus
				}
				if rep.status != want {
					t.Errorf("status %d, want %d: %.300s", rep.status, want, rep.body)
				}
				if ct := rep.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Errorf("Content-Type %q", ct)
				}
				if got := rep.errorField(t, "message"); got != e.message {
					t.Errorf("message %q, want %q", got, e.message)
				}
				if typ, _ := rep.errorField(t, "type").(string); typ == "" {
					t.Errorf("no error type: %s", rep.body)
				}
			})
		}
	}
}

// TestInsufficientQuotaNotRetried: OpenAI's 429 insufficient_quota is a bill that will not clear
// in a backoff's time. A target with max_retries must not be asked again for it within the
// request; the chain moves on at once. A rate limit's 429 is still retried.
func TestInsufficientQuotaNotRetried(t *testing.T) {
	var quota realError
	for _, e := range realErrors {
		if e.name == "openai insufficient_quota" {
			quota = e
		}
	}
	g, a, b, _ := realGateway(t, quota, "max_retries = 3")
	rep := g.chat(t, "r")
	if got := a.hits.Load(); got != 1 {
		t.Errorf("a asked %d times for an insufficient_quota 429, want 1", got)
	}
	if b.hits.Load() != 1 {
		t.Errorf("b asked %d times, want 1", b.hits.Load())
	}
	if rep.status != 429 || rep.errorField(t, "code") != "insufficient_quota" {
		t.Errorf("client got %d %s, want the upstream's 429 insufficient_quota", rep.status, rep.body)
	}

	// The control: a plain rate limit is retried max_retries times.
	limited := realError{status: 429, body: `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`}
	g, a, _, _ = realGateway(t, limited, "max_retries = 3")
	g.chat(t, "r")
	if got := a.hits.Load(); got != 4 {
		t.Errorf("a asked %d times for a rate limit with max_retries 3, want 4", got)
	}
}

// TestRetryAfterWithinCaps: a 429's Retry-After is honoured for the same-target retry when it
// fits the retry cap (the wait asked for is the one slept), and the chain moves on at once when it
// does not; the cooldown it starts is capped by cooldown.max.
func TestRetryAfterWithinCaps(t *testing.T) {
	var (
		mu     sync.Mutex
		slept  []time.Duration
		record = func(o *server.Options) {
			o.Sleep = func(ctx context.Context, d time.Duration) error {
				mu.Lock()
				slept = append(slept, d)
				mu.Unlock()
				return ctx.Err()
			}
		}
	)
	a, b := newFake(t, "a"), newFake(t, "b")
	cfg := target("a", a.url(), "private", "max_retries = 1") + target("b", b.url(), "private") +
		"[cooldown]\nmax = \"60s\"\n\n[routes.r]\ntargets = [\"a\", \"b\"]\n"
	g := newGateway(t, cfg, nil, record) // the harness caps retry waits at 50ms

	limited := func(ra string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", ra)
			errHandler(429, "rate_limit_exceeded", "slow down")(w, r)
		}
	}

	// Within the cap: one retry, after the 40ms asked for.
	a.set(limited("0.04"))
	g.chat(t, "r")
	if got := a.hits.Load(); got != 2 {
		t.Fatalf("a asked %d times with Retry-After 0.04 and max_retries 1, want 2", got)
	}
	mu.Lock()
	if len(slept) != 1 || slept[0] != 40*time.Millisecond {
		t.Errorf("slept %v before the retry, want [40ms]", slept)
	}
	slept = nil
	mu.Unlock()

	// Past the cap (and past cooldown.max): no retry, the chain moves on, a cools for 60s.
	g.clock.Advance(time.Minute) // the cooldown the first 429s began
	g2a, g2b := a.hits.Load(), b.hits.Load()
	a.set(limited("3600"))
	rep := g.chat(t, "r")
	if a.hits.Load() != g2a+1 || b.hits.Load() != g2b+1 {
		t.Fatalf("Retry-After 3600: a asked %d more times, b %d; chain %q", a.hits.Load()-g2a, b.hits.Load()-g2b, rep.header.Get("x-hayula-chain"))
	}
	mu.Lock()
	if len(slept) != 0 {
		t.Errorf("slept %v for a Retry-After past the retry cap", slept)
	}
	mu.Unlock()
	st := g.srv.Health().Snapshot(mustTarget(t, g, "a"))
	if !st.Cooling || st.Until.Sub(g.clock.Now()) != time.Minute {
		t.Errorf("a Retry-After of an hour should cool a for cooldown.max (60s): %+v", st)
	}
}

// TestRealErrorsSameTargetRetries feeds each real error answer to a target with max_retries = 2:
// a failure of a retried class (server_error, rate_limit) is asked three times, unless the row
// says once (a bill, a daily cap, a model that does not fit the machine's memory), which the
// chain leaves at once for the next target. Other classes are never retried. A 429 whose
// Retry-After is past the retry cap is TestRetryAfterWithinCaps's.
func TestRealErrorsSameTargetRetries(t *testing.T) {
	t.Parallel()
	for _, e := range realErrors {
		if _, ok := e.header["Retry-After"]; ok {
			continue
		}
		t.Run(e.name, func(t *testing.T) {
			g, a, b, _ := realGateway(t, e, "max_retries = 2")
			body := `{"model":"r","messages":[{"role":"user","content":"hi there"}]}`
			if e.streamOnly {
				body = `{"model":"r","stream":true,"messages":[{"role":"user","content":"hi there"}]}`
			}
			rep := g.post(t, "/v1/chat/completions", body)
			want := int64(1)
			if (e.class == "server_error" || e.class == "rate_limit") && !e.once {
				want = 3
			}
			if got := a.hits.Load(); got != want {
				t.Errorf("a asked %d times for a %s with max_retries 2, want %d; chain %q", got, e.class, want, rep.header.Get("x-hayula-chain"))
			}
			if e.once && b.hits.Load() != 1 {
				// The chain moved on to b, which answers the same and is not retried either.
				t.Errorf("b asked %d times, want 1", b.hits.Load())
			}
		})
	}
}
