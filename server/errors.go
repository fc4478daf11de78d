package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/hayula/gateway/errmap"
)

// apiError is an OpenAI-shaped error answer: the same type errmap restores upstream failures
// into, so every error the gateway writes is rendered by one function.
type apiError = errmap.ClientError

// Error types as OpenAI names them.
const (
	typeInvalidRequest = "invalid_request_error"
	typeAuthentication = "authentication_error"
	typeNotFound       = "not_found_error"
	typeServer         = "server_error"
	typeUpstream       = "upstream_error"
)

func badRequest(param, code, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Param: param, Code: code, Message: msg}
}

// errorBody renders {"error":{"message","type","param","code"}}; param and code are null when
// empty, and an error without a type is a server_error.
func errorBody(e *apiError) []byte {
	if e.Type == "" {
		c := *e
		c.Type = typeServer
		return c.JSON()
	}
	return e.JSON()
}

// clientClosed is the answer to a client the gateway took for gone before its answer's head went
// out (statusClientGone): errmap's. A client that closed its connection does not read it; one
// that only half-closed its side does, and must not read a success
// (TestHalfClosedClientNotToldOK).
func clientClosed() *apiError {
	e := errmap.ClientGone()
	return &e
}

var (
	identityOnly = []string{"identity"}
	// bearerChallenge is every 401's WWW-Authenticate (RFC 9110 §11.6.1: a 401 must name a
	// scheme the server takes; RFC 6750 §3). No error code: a 401 relayed from a target has one of
	// its own to say, and a request without a key should get none (RFC 6750 §3.1).
	bearerChallenge = []string{"Bearer"}
	retryTrue       = []string{"true"}
	retryFalse      = []string{"false"}
)

func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	if e.Status == http.StatusUnsupportedMediaType {
		h["Accept-Encoding"] = identityOnly // the only coding taken (unsupportedEncoding)
	}
	if e.Status == http.StatusUnauthorized {
		h["Www-Authenticate"] = bearerChallenge // TestUnauthorizedChallengesBearer
	}
	if e.RetryAfter > 0 {
		// Rounded up without adding first: the longest wait a tpm bucket tells is
		// math.MaxInt64, which a second more turned negative (TestKeyTPMRetryAfterOfAbsurdUsage).
		secs := int64(e.RetryAfter / time.Second)
		if e.RetryAfter%time.Second != 0 {
			secs++
		}
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	switch e.ShouldRetry {
	case errmap.RetryYes:
		h["X-Should-Retry"] = retryTrue
	case errmap.RetryNo:
		h["X-Should-Retry"] = retryFalse // TestFinalErrorShouldRetry
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(errorBody(e), '\n'))
}
