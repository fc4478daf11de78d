package errmap

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/lifecycle"
)

// StatusClientClosedRequest is nginx's 499, the conventional status for a client that went away.
const StatusClientClosedRequest = 499

// statusCapacityExceeded is Groq's own status for its flex tier at capacity.
const statusCapacityExceeded = 498

// Decision is what one failed attempt means.
type Decision struct {
	Class core.Class
	// Status is the HTTP status this failure would give the client if it were the final answer.
	Status int
	// Retry is true when a same-target retry may help: connection, timeout, server_error,
	// rate_limit; not a 429 that is a bill or a daily cap (isQuota), nor a 5xx saying the model
	// does not fit the upstream's memory (outOfMemory).
	Retry bool
	// Penalize is true when the failure counts toward the target's cooldown: connection, timeout,
	// server_error, rate_limit.
	Penalize bool
	// RetryAfter is a 429's or 503's core.StatusError.RetryAfter (its Retry-After; a 429's
	// body's reset without one; without either, a 429's LimitReset unless Quota); 0 when absent.
	RetryAfter time.Duration
	// Quota is true for a 429 that is a bill or a daily cap (isQuota): no wait within minutes
	// clears it, so health benches the target at once for as long as a cooldown may last
	// (cooldown.max), rather than after Failures of them.
	Quota bool
}

// ClassifyFor is Classify for an attempt made on behalf of a request whose context is ctx. A
// cancellation is the client's only while ctx is done. An error that wraps context.Canceled while
// ctx is live comes from a context of the upstream's own side: a managed process's start
// cancelled under the request, a transport shut down. That is the target failing as a refused
// connection does. Taken for the client gone (499), the gateway would write nothing, and a
// client still there would read an empty answer.
func ClassifyFor(ctx context.Context, err error) Decision {
	d := Classify(err)
	if d.Class == core.ClassClientGone && ctx.Err() == nil {
		return failing(core.ClassConnection, http.StatusBadGateway)
	}
	return d
}

// Classify maps an adapter's error to a Decision. A nil error is ClassNone with status 200.
func Classify(err error) Decision {
	if err == nil {
		return Decision{Class: core.ClassNone, Status: http.StatusOK}
	}
	if errors.Is(err, context.Canceled) {
		return Decision{Class: core.ClassClientGone, Status: StatusClientClosedRequest}
	}
	// errors.AsType rather than errors.As: the target of As escapes, which cost an allocation per
	// type tried on every failed attempt.
	//
	// Before the core types: a load timeout wraps the start failure that preceded it, and the
	// timeout is what the request met.
	if _, ok := errors.AsType[*lifecycle.LoadTimeoutError](err); ok {
		return Decision{Class: core.ClassLoading, Status: http.StatusServiceUnavailable}
	}
	if errors.Is(err, lifecycle.ErrStopping) || errors.Is(err, lifecycle.ErrRemoved) {
		// The gateway is stopping, or a reload removed the target: its process will not start,
		// through no fault of its.
		return Decision{Class: core.ClassLoading, Status: http.StatusServiceUnavailable}
	}
	if _, ok := errors.AsType[*lifecycle.ProcessError](err); ok {
		return failing(core.ClassConnection, http.StatusBadGateway)
	}
	if _, ok := errors.AsType[*core.TimeoutError](err); ok {
		return failing(core.ClassTimeout, http.StatusGatewayTimeout)
	}
	if ue, ok := errors.AsType[*core.UnmetError](err); ok {
		// Before StatusError, which it wraps for the client's answer: its 400 is not the
		// request's fault, only this target's.
		return Decision{Class: core.ClassEndpoint, Status: ue.Err.Status}
	}
	if se, ok := errors.AsType[*core.StatusError](err); ok {
		d := classifyStatus(se)
		if d.Retry && strings.EqualFold(strings.TrimSpace(se.Header.Get("X-Should-Retry")), "false") {
			// The upstream says another try will not help, as OpenAI's SDKs read it (and a
			// proxy that has spent its own retries says): none on this target; the chain still
			// moves on as the class says (TestShouldRetryFalse).
			d.Retry = false
		}
		return d
	}
	if _, ok := errors.AsType[*core.ConnError](err); ok {
		return failing(core.ClassConnection, http.StatusBadGateway)
	}
	// A bare deadline after the adapter's own verdicts, not before them: a connect that did not
	// complete within the dial's own bound (Options.DialTimeout, nearer than the target's
	// timeout) is a *core.ConnError, a connection that could not be made (CONFIG.md's classes),
	// whose inner error is a context.DeadlineExceeded when the dial's context ended it and not
	// one when the poller's deadline did: tested first, the deadline made the class timeout or
	// connection by turns (TestConnectWithinDialTimeout).
	if errors.Is(err, context.DeadlineExceeded) {
		return failing(core.ClassTimeout, http.StatusGatewayTimeout)
	}
	if se, ok := errors.AsType[*core.StreamError](err); ok && se.Err == nil && overflowText(se.Message) {
		// An error the upstream sent inside a stream it had answered 200 (llama-server, vLLM, a
		// proxy in front of them): its words, not a broken connection's, say the prompt does not
		// fit. Before the first event that is the same failure as a 400 would have been.
		return Decision{Class: core.ClassOverflow, Status: http.StatusBadRequest}
	}
	if w, ok := errors.AsType[upstreamWords](err); ok && overflowText(w.UpstreamMessage()) {
		// The same said in a 2xx answer's "error" (a proxy that answers every call 200).
		return Decision{Class: core.ClassOverflow, Status: http.StatusBadRequest}
	}
	// StreamError, ProtocolError and anything unforeseen: the upstream gave no usable answer.
	return failing(core.ClassServerError, http.StatusBadGateway)
}

// upstreamWords is an error that carries what the upstream itself said where an answer should
// have been (upstream.ErrorAnswerError: a 2xx answer that is an error object).
type upstreamWords interface {
	error
	UpstreamMessage() string
}

// failing is a Decision for the classes that are retried and penalized.
func failing(c core.Class, status int) Decision {
	return Decision{Class: c, Status: status, Retry: true, Penalize: true}
}

func classifyStatus(e *core.StatusError) Decision {
	s := e.Status
	switch {
	case s == http.StatusServiceUnavailable && isLoading(e):
		return Decision{Class: core.ClassLoading, Status: s, RetryAfter: e.RetryAfter}
	case s == http.StatusTooManyRequests:
		d := failing(core.ClassRateLimit, s)
		d.RetryAfter = e.RetryAfter
		if isQuota(e) {
			// A bill or a daily cap, not a burst: another try within the request meets the same
			// refusal. It still counts toward the cooldown, which keeps the next requests off
			// the target, at once and for cooldown.max (Quota): each request after it would pay
			// the same failing round trip (TestInsufficientQuotaBenchesAtOnce).
			d.Retry, d.Quota = false, true
		} else if d.RetryAfter <= 0 {
			// OpenAI's and Groq's x-ratelimit-reset-* (TestOpenAIRateLimitHeaders). Not a
			// quota's: its per-minute limits are not what refused it.
			d.RetryAfter = e.LimitReset
		}
		return d
	case s == statusCapacityExceeded:
		// Groq's flex tier at capacity ("capacity_exceeded"; its docs say to back off and try
		// again): a busy upstream, as a 429 is. As a 4xx it was a request error, which ended
		// the chain. The client, when nothing else answers, gets a 429, which SDKs retry; a 498
		// they do not know.
		d := failing(core.ClassRateLimit, http.StatusTooManyRequests)
		d.RetryAfter = e.RetryAfter
		return d
	case s == http.StatusRequestEntityTooLarge:
		return Decision{Class: core.ClassOverflow, Status: s}
	case (s == http.StatusBadRequest || s == http.StatusUnprocessableEntity ||
		s == http.StatusInternalServerError) && isOverflow(e):
		return Decision{Class: core.ClassOverflow, Status: s}
	case s == http.StatusFailedDependency:
		// TGI's "Request failed during generation": the server's own failure, not the request's.
		return failing(core.ClassServerError, s)
	case s == http.StatusRequestTimeout:
		// The upstream's own timeout (OpenRouter's "Your request timed out", LiteLLM's Timeout:
		// its provider did not answer in time), as an upstream's 504 is: not the request's fault,
		// so another try or target may answer it. As a request error it ended the chain
		// (TestInvRestoreEveryDoor, "408 then ok").
		return failing(core.ClassServerError, s)
	case s == http.StatusNotImplemented:
		// The server does not serve what was asked (llama-server without --embeddings answers
		// /v1/embeddings so): that endpoint's failure, as a 404 is, never the server's health.
		// As a server_error it was retried, and benched a chat target for everyone after a few
		// embeddings requests sent to its route by mistake (TestNotImplementedBenchesNothing).
		return Decision{Class: core.ClassEndpoint, Status: s}
	case s >= 500 && s <= 599:
		d := failing(core.ClassServerError, s)
		if s == http.StatusServiceUnavailable {
			d.RetryAfter = e.RetryAfter
		}
		if outOfMemory(e) {
			// The upstream cannot fit this model in its memory, and has already done what a
			// retry could: Ollama evicts its idle models to make room (newer builds also retry
			// the load with a smaller context) before it answers so. What is missing is held by
			// models kept loaded for their keep_alive, or was never there: not a backoff's
			// matter, so the chain moves on at once. It still counts toward
			// the cooldown: the next requests would each pay the same failed load.
			d.Retry = false
		}
		return d
	case s == http.StatusUnauthorized, s == http.StatusPaymentRequired, s == http.StatusForbidden,
		s == http.StatusNotFound, s == http.StatusGone:
		return Decision{Class: core.ClassEndpoint, Status: s}
	case s == http.StatusMethodNotAllowed:
		// The gateway only POSTs to the paths every OpenAI-compatible server serves: a 405 says
		// the target's URL is not such a server (a base URL that reaches a web page, a proxy
		// route that takes GET only), the endpoint's failure as a 404 is, never the client's.
		// As a request error it ended the chain.
		return Decision{Class: core.ClassEndpoint, Status: s}
	case s >= 400 && s <= 499:
		return Decision{Class: core.ClassRequest, Status: s}
	}
	return failing(core.ClassServerError, http.StatusBadGateway)
}

// overflowPhrases are what servers say when a prompt does not fit the context, lower-cased and
// matched as substrings of the error message. Each was checked against the servers' sources:
//
//   - OpenAI and vLLM's OpenAI server: "This model's maximum context length is N tokens. However,
//     you requested M tokens (…)"; newer vLLM "… maximum context length is N tokens and your
//     request has M input tokens"; OpenAI's code context_length_exceeded.
//   - vLLM V1 input processing: "The decoder prompt (length N) is longer than the maximum model
//     length of M."
//   - llama.cpp llama-server: "request (N tokens) exceeds the available context size (M tokens),
//     try increasing it" with type exceed_context_size_error (older builds: "the request exceeds
//     the available context size, try increasing it").
//   - Ollama's runners: "the input length exceeds the context length" (seen as 400 and as 500).
//   - Anthropic, as relayed by OpenAI-compatible aggregators: "prompt is too long: N tokens > M
//     maximum"; "input length and `max_tokens` exceed context limit: N + M > L".
//   - OpenAI's (and Azure's) newer models: "Input tokens exceed the configured limit of N tokens".
//   - Gemini, as relayed: "The input token count (N) exceeds the maximum number of tokens allowed".
//   - LiteLLM's proxy: its ContextWindowExceededError named in the message ("litellm.
//     ContextWindowExceededError: …", "Context Window exceeded for given call"), whatever the
//     provider's own words underneath.
//   - Hugging Face TGI (and Together, which relays its text), as a 422 from TGI: "Input
//     validation error: `inputs` tokens + `max_new_tokens` must be <= N", "`inputs` must have
//     less than N tokens".
//   - LM Studio: "Trying to keep the first N tokens when context the overflows. However, the
//     model is loaded with context length of only M tokens", "The number of tokens to keep from
//     the initial prompt is greater than the context length (n_keep: N >= n_ctx: M)".
//
// llama-server's "input is too large to process. increase the physical batch size" is left out on
// purpose: it is a 500 about the physical batch of embedding and rerank tasks, not the context.
var overflowPhrases = [...]string{
	"maximum context length",
	"context_length_exceeded",
	"context length exceeded",
	"is longer than the maximum model length",
	"exceeds the available context size",
	"exceed_context_size_error",
	"input length exceeds the context length",
	"prompt is too long",
	"exceed context limit",
	"tokens exceed the configured limit",
	"exceeds the maximum number of tokens allowed",
	"contextwindowexceedederror",
	"context window exceeded",
	"`inputs` tokens + `max_new_tokens` must be",
	"`inputs` must have less than",
	"is loaded with context length of only",
	"greater than the context length",
}

// isQuota recognises a 429 that no backoff within a request clears: OpenAI's insufficient_quota
// (the account is out of credit), and OpenRouter's daily cap on :free models, "Rate limit
// exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day"
// (relayed also as "free-models-per-day-high-balance"), which lifts at the next UTC day.
func isQuota(e *core.StatusError) bool {
	if e.Code == "insufficient_quota" || e.Type == "insufficient_quota" {
		return true
	}
	return strings.Contains(errorText(e), "free-models-per-day")
}

// memoryPhrases are what a server says when the model does not fit its memory, lower-cased and
// matched as substrings of a 5xx's error message. Each is Ollama's, which answers a failed load
// 500 {"error": "…"} (server/routes.go, handleScheduleError), checked against its source or an
// issue quoting the answer:
//
//   - llm/server.go: "model requires more system memory (12.3 GiB) than is available (8.1 GiB)";
//     newer builds, when evicting the other models did not make room, "model requires more
//     system memory than is currently available unable to load full model on GPU".
//   - llm/server.go, the Ollama engine's load: "memory layout cannot be allocated" (with
//     num_gpu = N when num_gpu was set), "failed to allocate memory for model", "failed to
//     commit memory for model".
//   - The runner dying while it loads, llama.cpp's words after Ollama's: "llama runner process
//     has terminated: CUDA error: out of memory" (ollama/ollama#9782), "llama runner process has
//     terminated: error loading model: unable to allocate CUDA_Host buffer"
//     (continuedev/continue#11223); builds that run llama-server: "llama-server reported
//     out-of-memory during startup: …" (ollama/ollama#16968).
//
// "out of memory" alone is left out on purpose: TGI's 424 "CUDA out of memory" is one batch's,
// and a runner that died of something else ("llama runner process has terminated: exit status
// 2") may be a passing crash; both stay retried.
var memoryPhrases = [...]string{
	"model requires more system memory",
	"memory layout cannot be allocated",
	"failed to allocate memory for model",
	"failed to commit memory for model",
	"llama runner process has terminated: cuda error: out of memory",
	"error loading model: unable to allocate",
	"reported out-of-memory during startup",
}

// outOfMemory reports whether a 5xx says the upstream could not load the model into its memory.
func outOfMemory(e *core.StatusError) bool {
	text := errorText(e)
	for _, p := range memoryPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// errorText is e's message lower-cased, or its raw body's when a body that was not OpenAI-shaped
// left Message empty.
func errorText(e *core.StatusError) string {
	if e.Message != "" {
		return strings.ToLower(e.Message)
	}
	return strings.ToLower(string(e.Body))
}

func isOverflow(e *core.StatusError) bool {
	if e.Code == "context_length_exceeded" || e.Type == "exceed_context_size_error" {
		return true
	}
	// A body that was not OpenAI-shaped left Message empty; its raw text may still say it.
	return overflowText(errorText(e))
}

// overflowText reports whether an upstream's error text names a context overflow.
func overflowText(text string) bool {
	text = strings.ToLower(text)
	for _, p := range overflowPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// isLoading recognises a 503 that means "a model is being swapped in": a body whose top-level
// "status" says loading (servers and swap proxies that mimic llama-server's /health), or
// llama-server's own {"error":{"message":"Loading model","type":"unavailable_error"}}.
func isLoading(e *core.StatusError) bool {
	if e.Type == "unavailable_error" && strings.Contains(strings.ToLower(e.Message), "loading") {
		return true
	}
	if len(e.Body) == 0 {
		return false
	}
	var b struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(e.Body, &b) != nil {
		return false
	}
	return strings.HasPrefix(strings.ToLower(b.Status), "loading")
}
