package errmap

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/lifecycle"
)

// Attempt is one failed attempt, for the final answer.
type Attempt struct {
	Target   string
	Decision Decision
	Err      error
	// Stopped marks the attempt whose failure ended the chain by its class: a request error, a
	// class the route's fallback_on leaves out, or any failure of a request that turned fallback
	// off. It is answered as it is, whatever failed before it.
	Stopped bool
}

// ClientError is the OpenAI-shaped error the client gets.
type ClientError struct {
	Status                     int
	Message, Type, Code, Param string
	// RetryAfter becomes the response's Retry-After header when positive.
	RetryAfter time.Duration
	// ShouldRetry becomes the response's x-should-retry header, which OpenAI's SDKs read before
	// their own rule (retry 408, 409, 429 and 5xx): nothing when RetryUnsaid.
	ShouldRetry RetryHint
}

// RetryHint is what the x-should-retry header tells a client's SDK about trying the request again.
type RetryHint uint8

const (
	// RetryUnsaid sends no header: the SDK's own rule applies.
	RetryUnsaid RetryHint = iota
	// RetryYes is "true".
	RetryYes
	// RetryNo is "false".
	RetryNo
)

// Header is the header's value; "" for RetryUnsaid.
func (h RetryHint) Header() string {
	switch h {
	case RetryYes:
		return "true"
	case RetryNo:
		return "false"
	}
	return ""
}

// ClientGone is what a client that went away before its answer is told, should it still read
// (one that only half-closed its side): the error of a chain its leaving ended, and the server's
// for a client it took for gone elsewhere (a body cut off, a stream cancelled under way).
func ClientGone() ClientError {
	return ClientError{Status: StatusClientClosedRequest, Message: "client closed the request",
		Type: "request_canceled", Code: "client_closed_request"}
}

// JSON renders e as an OpenAI error body; empty Code and Param are null, as OpenAI sends them.
func (e ClientError) JSON() []byte {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		b.Param = &e.Param
	}
	if e.Code != "" {
		b.Code = &e.Code
	}
	out, _ := json.Marshal(struct {
		Error body `json:"error"`
	}{b})
	return out
}

// Restore builds the client's error from the failed attempts of one request; the rule is in the
// package documentation.
func Restore(attempts []Attempt) ClientError {
	out, one := restore(attempts)
	out.ShouldRetry = retryHint(attempts, one, out.Status)
	return out
}

// restore is Restore's error, and the attempt it answers as it is (nil for all_targets_failed and
// for no attempt at all).
func restore(attempts []Attempt) (ClientError, *Attempt) {
	if len(attempts) == 0 {
		return ClientError{Status: http.StatusServiceUnavailable, Message: "no target could serve",
			Type: "upstream_error", Code: "no_target"}, nil
	}
	if last := &attempts[len(attempts)-1]; last.Stopped {
		return restoreOne(*last), last
	}
	first := attempts[0].Decision
	same := true
	for _, a := range attempts[1:] {
		// Overflows are one failure whatever status each came with: restoreOne answers it 400.
		if a.Decision.Class != first.Class || a.Decision.Status != first.Status && first.Class != core.ClassOverflow {
			same = false
			break
		}
	}
	if same {
		out := restoreOne(attempts[0])
		if ra := soonest(attempts); ra > 0 {
			// The client may come back as soon as one target takes requests again
			// (TestRateLimitedEverywhereSoonestRetryAfter).
			out.RetryAfter = ra
		}
		return out, &attempts[0]
	}
	var msg strings.Builder
	msg.WriteString("all targets failed: ")
	for i, a := range attempts {
		if i > 0 {
			msg.WriteString("; ")
		}
		fmt.Fprintf(&msg, "%s: %s (%d", a.Target, a.Decision.Class, a.Decision.Status)
		if se, ok := errors.AsType[*core.StatusError](a.Err); ok {
			if c := se.PlainCode(); c != "" && c != strconv.Itoa(se.Status) {
				// The upstream's code says which refusal it was (insufficient_quota,
				// model_not_found): an identifier only, never its words, and not a code that
				// only repeats the status (llama-server's "code": 413).
				msg.WriteString(" " + c)
			}
		}
		msg.WriteString(")")
	}
	retryAfter := soonest(attempts)
	return ClientError{Status: http.StatusServiceUnavailable, Message: msg.String(),
		Type: "upstream_error", Code: "all_targets_failed", RetryAfter: retryAfter}, nil
}

// retryHint is the final answer's x-should-retry. An error restored from one upstream's (one,
// restore's) keeps the header that upstream sent, if any. Otherwise, when status is one the SDKs retry and every
// attempt failed in a way another try within their seconds of backoff meets again (an endpoint
// refusing the request, an account out of credit, a model that does not fit the machine, an
// upstream's own x-should-retry: false), it is RetryNo: each SDK retry would walk the whole chain
// again for the same refusals (TestRestore, TestFinalErrorShouldRetry).
func retryHint(attempts []Attempt, one *Attempt, status int) RetryHint {
	if len(attempts) == 0 {
		return RetryUnsaid
	}
	if one != nil {
		if h := upstreamHint(*one, status); h != RetryUnsaid {
			return h
		}
	}
	if !sdkRetries(status) {
		return RetryUnsaid
	}
	for _, a := range attempts {
		if !futile(a.Decision) {
			return RetryUnsaid
		}
	}
	return RetryNo
}

// upstreamHint is the x-should-retry an attempt's upstream answered with, when the client's answer
// has the upstream's status: one said of an overflow's 413 or 500 is not the 400 it is restored as
// (an SDK told "true" would retry a prompt that cannot fit).
func upstreamHint(a Attempt, status int) RetryHint {
	se, ok := errors.AsType[*core.StatusError](a.Err)
	if !ok || se.Status != status {
		return RetryUnsaid
	}
	switch v := strings.TrimSpace(se.Header.Get("X-Should-Retry")); {
	case strings.EqualFold(v, "true"):
		return RetryYes
	case strings.EqualFold(v, "false"):
		return RetryNo
	}
	return RetryUnsaid
}

// sdkRetries reports whether OpenAI's SDKs retry an answer of this status on their own.
func sdkRetries(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// futile reports whether a failure is one a client's retry seconds later meets again: an endpoint
// refusing (401/402/403/404/410), or a failure of a retried class that Classify found no retry
// helps (a bill or a daily cap, a model too big for the machine, x-should-retry: false).
func futile(d Decision) bool {
	return d.Class == core.ClassEndpoint || d.Penalize && !d.Retry
}

// soonest is the smallest positive RetryAfter of the attempts; 0 when none has one.
func soonest(attempts []Attempt) time.Duration {
	var out time.Duration
	for _, a := range attempts {
		if ra := a.Decision.RetryAfter; ra > 0 && (out == 0 || ra < out) {
			out = ra
		}
	}
	return out
}

// restoreOne turns a single attempt back into what its upstream (or its absence) said.
func restoreOne(a Attempt) ClientError {
	d := a.Decision
	out := ClientError{Status: d.Status, RetryAfter: d.RetryAfter, Type: "upstream_error"}
	var se *core.StatusError
	switch {
	case d.Class == core.ClassClientGone:
		g := ClientGone()
		out.Message, out.Type, out.Code = g.Message, g.Type, g.Code
	case d.Class == core.ClassTimeout:
		out.Message, out.Code = fmt.Sprintf("upstream %s timed out", a.Target), "upstream_timeout"
		var te *core.TimeoutError
		switch {
		case errors.As(a.Err, &te) && te.After > 0 && te.Idle:
			// Its head had come: "did not answer" told the client the wrong wait ran out.
			out.Message = fmt.Sprintf("upstream %s sent nothing of its answer for %s (idle_timeout)", a.Target, te.After)
		case te != nil && te.After > 0:
			out.Message = fmt.Sprintf("upstream %s did not answer within %s", a.Target, te.After)
		}
	case d.Class == core.ClassConnection:
		// The cause, never the error's text: that names the upstream's address (connCause).
		out.Message, out.Code = fmt.Sprintf("upstream %s unreachable: %s", a.Target, connCause(a.Err)), "upstream_unreachable"
	case d.Class == core.ClassLoading && !errors.As(a.Err, &se):
		// A managed process still loading when load_timeout ran out: no upstream said anything.
		// The start failure it may wrap stays in the log, for connCause's reason.
		out.Status, out.Message, out.Code = http.StatusServiceUnavailable, fmt.Sprintf("upstream %s is still loading", a.Target), "model_loading"
		if lt, ok := errors.AsType[*lifecycle.LoadTimeoutError](a.Err); ok && lt.After > 0 {
			out.Message += fmt.Sprintf(": not ready within %s", lt.After)
			if lt.Group != "" {
				// Nothing loaded: every slot of its group was held the whole time.
				out.Message = fmt.Sprintf("upstream %s is not running: no slot of its group %s came free within %s",
					a.Target, lt.Group, lt.After)
			}
		}
		if errors.Is(a.Err, lifecycle.ErrStopping) {
			out.Message = fmt.Sprintf("upstream %s is not running, and the gateway is stopping", a.Target)
		}
		if errors.Is(a.Err, lifecycle.ErrRemoved) {
			out.Message = fmt.Sprintf("upstream %s is not running, and a reload removed it", a.Target)
		}
	case errors.As(a.Err, &se):
		out.Message, out.Type, out.Code, out.Param = se.Message, se.Type, se.Code, se.Param
		fillStatusDefaults(&out, a.Target, d.Class, se.Status)
		if se.Coding != "" {
			// Its words could not be read: the client is told why there are none
			// (TestCodedErrorBodySaid).
			out.Message += fmt.Sprintf(", its body in Content-Encoding %q, which the gateway asked not to get (Accept-Encoding: identity) and could not decode", se.Coding)
		}
		if d.Class == core.ClassOverflow {
			// Whatever status it came with (vLLM's 413, Ollama's 500, TGI's 422), a prompt that
			// does not fit is the request's 400 context_length_exceeded, as OpenAI answers it: a
			// 5xx would be retried by the SDKs, and clients look for the code. The words stay
			// the upstream's (TestOverflowEverywhereIs400).
			out.Status, out.Type, out.Code = http.StatusBadRequest, "invalid_request_error", "context_length_exceeded"
		}
	case d.Class == core.ClassOverflow:
		// An overflow the upstream reported inside a stream (Classify): its own words, as a 400
		// would have carried them.
		out.Message, out.Type, out.Code = StreamMessage(a.Err), "invalid_request_error", "context_length_exceeded"
		if w, ok := errors.AsType[upstreamWords](a.Err); ok {
			out.Message = w.UpstreamMessage() // in a 2xx answer's "error"
		}
	default:
		out.Message, out.Code = fmt.Sprintf("upstream %s failed", a.Target), "upstream_error"
		var (
			ste *core.StreamError
			pe  *core.ProtocolError
		)
		switch {
		case errors.As(a.Err, &ste):
			out.Message, out.Code = fmt.Sprintf("upstream %s broke off: %s", a.Target, StreamMessage(ste)), "upstream_stream_error"
		case errors.As(a.Err, &pe) && pe.Err != nil:
			out.Message, out.Code = fmt.Sprintf("upstream %s gave an answer the gateway could not read: %s", a.Target, pe.Err), "bad_upstream_response"
		default:
			// An error no adapter foresaw: its text may name anything, the upstream's address
			// included, so only a connection cause it is known to be reaches the client.
			if c, ok := netCause(a.Err); ok {
				out.Message += ": " + c
			}
		}
	}
	return out
}

// fillStatusDefaults completes a restored upstream error whose body did not say everything (a
// bare 503, Ollama's {"error":"…"}), so that the client always gets a message and a type. The
// message gives the status the upstream answered, which is not always the client's: a
// redirect is answered 502, and "answered 502" would hide the 307 (an http:// url for a server
// that moved to https://) that the operator has to fix (TestHTTPAndHTTPSParity).
func fillStatusDefaults(out *ClientError, target string, c core.Class, upstream int) {
	if out.Message == "" {
		switch c {
		case core.ClassLoading:
			out.Message = fmt.Sprintf("upstream %s is loading the model", target)
		default:
			out.Message = fmt.Sprintf("upstream %s answered %d %s", target, upstream, http.StatusText(upstream))
		}
	}
	if out.Code == "" {
		switch c {
		case core.ClassLoading:
			out.Code = "model_loading"
		case core.ClassRateLimit:
			out.Code = "rate_limit_exceeded"
		}
	}
	if out.Type == "" {
		switch {
		case c == core.ClassRateLimit:
			out.Type = "rate_limit_error"
		case c == core.ClassLoading || c == core.ClassServerError || out.Status >= 500:
			out.Type = "upstream_error"
		default:
			out.Type = "invalid_request_error"
		}
	}
}
