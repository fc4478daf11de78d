package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// apiError is an OpenAI-shaped error answer.
type apiError struct {
	Status     int
	Message    string
	Type       string
	Code       string
	Param      string
	RetryAfter time.Duration
}

func (e *apiError) Error() string { return e.Message }

// Error types as OpenAI names them.
const (
	typeInvalidRequest = "invalid_request_error"
	typeAuthentication = "authentication_error"
	typePermission     = "permission_error"
	typeNotFound       = "not_found_error"
	typeServer         = "server_error"
	typeUpstream       = "upstream_error"
)

func badRequest(param, code, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Param: param, Code: code, Message: msg}
}

// errorBody renders {"error":{"message","type","param","code"}}; param and code are null when empty.
func errorBody(e *apiError) []byte {
	type inner struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	in := inner{Message: e.Message, Type: e.Type}
	if in.Type == "" {
		in.Type = typeServer
	}
	if e.Param != "" {
		in.Param = &e.Param
	}
	if e.Code != "" {
		in.Code = &e.Code
	}
	b, _ := json.Marshal(struct {
		Error inner `json:"error"`
	}{in})
	return b
}

func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		secs := int64((e.RetryAfter + time.Second - 1) / time.Second)
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(errorBody(e), '\n'))
}
