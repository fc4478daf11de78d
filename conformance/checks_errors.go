package conformance

import (
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// errorProbes are the requests a conformant server answers with an error.
func errorProbes() []probeID {
	return []probeID{"errors.invalid_json", "errors.missing_messages", "errors.unknown_model",
		"errors.bad_key", "logprobs.unpaired", "strict.unknown_field"}
}

// errorAnswers returns, in probe order, the exchanges among ids that came
// back with an HTTP error status.
func errorAnswers(j *judge, ids []probeID) []*exchange {
	var out []*exchange
	for _, id := range ids {
		if x, ok := j.ex[id]; ok && x.err == nil && x.status >= 400 {
			out = append(out, x)
		}
	}
	return out
}

// errorObject returns the body's "error" object, or false.
func errorObject(x *exchange) (map[string]any, bool) {
	v, ok := at(x.json, "error")
	m, isObj := asObject(v)
	return m, ok && isObj
}

func errorChecks() []*check {
	eps := errorProbes()
	return []*check{
		{id: "errors.invalid_json", grade: Must, probes: []probeID{"errors.invalid_json"},
			title: "a request body that is not JSON is rejected with 400",
			judge: func(j *judge) verdict { return wantStatus(j.x("errors.invalid_json"), 400) }},
		{id: "errors.missing_messages", grade: Must, probes: []probeID{"errors.missing_messages"},
			title: "a chat request without messages is rejected with 400",
			judge: func(j *judge) verdict { return wantStatus(j.x("errors.missing_messages"), 400) }},
		{id: "errors.unknown_model", grade: Must, probes: []probeID{"errors.unknown_model"},
			title: "a chat request for an unknown model is rejected with 404",
			judge: func(j *judge) verdict { return wantStatus(j.x("errors.unknown_model"), 404) }},
		{id: "errors.bad_key", grade: Must, probes: []probeID{"errors.bad_key"},
			title: "a wrong API key is rejected with 401 (judged only when a key is given)",
			judge: func(j *judge) verdict { return wantStatus(j.x("errors.bad_key"), 401) }},
		{id: "errors.shape", grade: Must, probes: eps, anyOf: true,
			title: `error answers have the body {"error": {"message": string, "type": string, ...}}`,
			judge: func(j *judge) verdict {
				xs := errorAnswers(j, eps)
				if len(xs) == 0 {
					return skip("no error answers observed")
				}
				for _, x := range xs {
					if why := errorShapeProblem(x); why != "" {
						return fail(`{"error": {"message": "<non-empty>", "type": "...", "param": ..., "code": ...}}`,
							fmt.Sprintf("%s %s → %d: %s; body %s", x.method, x.path, x.status, why, clip(strings.TrimSpace(string(x.body)), 160))).from(x)
					}
				}
				return pass()
			}},
		{id: "errors.content_type", grade: Should, probes: eps, anyOf: true,
			title: "error answers are labelled Content-Type application/json",
			judge: func(j *judge) verdict {
				xs := errorAnswers(j, eps)
				if len(xs) == 0 {
					return skip("no error answers observed")
				}
				for _, x := range xs {
					if ct := x.contentType(); ct != "application/json" {
						return fail("Content-Type: application/json", fmt.Sprintf("%d answer with Content-Type %q", x.status, ct)).from(x)
					}
				}
				return pass()
			}},
		{id: "errors.retry_after", grade: Should,
			title: "a 429 answer carries Retry-After (judged only when a 429 was observed)",
			judge: func(j *judge) verdict {
				ids := make([]string, 0, len(j.ex))
				for id := range j.ex {
					ids = append(ids, string(id))
				}
				sort.Strings(ids)
				seen := 0
				for _, id := range ids {
					// A retried request's first answer is its 429.
					for _, x := range []*exchange{j.ex[probeID(id)].throttled, j.ex[probeID(id)]} {
						if x == nil || x.err != nil || x.status != http.StatusTooManyRequests {
							continue
						}
						seen++
						if !validRetryAfter(x.header.Get("Retry-After")) {
							return fail("Retry-After: <seconds> or <HTTP date>", fmt.Sprintf("429 on %s with Retry-After %q", x.path, x.header.Get("Retry-After"))).from(x)
						}
					}
				}
				if seen == 0 {
					return skip("no 429 observed during the run")
				}
				return pass()
			}},
		{id: "errors.strict.code", grade: Strict, probes: eps, anyOf: true,
			title: "error.code is present and a string or null, never a number",
			judge: func(j *judge) verdict {
				return eachErrorObject(j, eps, func(x *exchange, e map[string]any) *verdict {
					c, ok := e["code"]
					if _, isStr := c.(string); !ok || (c != nil && !isStr) {
						return failp(`"code": string or null`, fmt.Sprintf("%d answer: code %s", x.status, showField(c, ok)))
					}
					return nil
				})
			}},
		{id: "errors.strict.param", grade: Strict, probes: eps, anyOf: true,
			title: "error.param is present (null when no parameter is at fault)",
			judge: func(j *judge) verdict {
				return eachErrorObject(j, eps, func(x *exchange, e map[string]any) *verdict {
					if p, ok := e["param"]; !ok {
						return failp(`"param": string or null`, fmt.Sprintf("%d answer: param %s", x.status, showField(p, ok)))
					}
					return nil
				})
			}},
		{id: "errors.strict.unknown_field", grade: Strict, probes: []probeID{"strict.unknown_field"},
			title: "a request with an unknown field is rejected with 400",
			judge: func(j *judge) verdict { return wantStatus(j.x("strict.unknown_field"), 400) }},
	}
}

// errorShapeProblem says what keeps x's body from being the reference's error object, naming the
// member at fault, or "" when it is one.
func errorShapeProblem(x *exchange) string {
	switch {
	case len(bytes.TrimSpace(x.body)) == 0:
		return "the body is empty"
	case x.json == nil:
		return fmt.Sprintf("the body is not JSON (%v)", x.jsonErr)
	}
	m, ok := asObject(x.json)
	if !ok {
		return "the body is a JSON " + typeName(x.json) + ", not an object"
	}
	e, ok := m["error"]
	if !ok {
		if _, flat := m["message"]; flat || m["object"] == "error" {
			return `no "error" object: the error's members are at the top level`
		}
		return `no "error" object`
	}
	em, ok := asObject(e)
	if !ok {
		return `"error" is a ` + typeName(e) + `, not an object`
	}
	switch msg, ok := em["message"]; {
	case !ok:
		return "error.message: absent"
	case msg == "":
		return "error.message: empty"
	case !nonEmptyString(msg):
		return notAString("error.message", msg)
	}
	if typ, ok := em["type"]; !ok {
		return "error.type: absent"
	} else if _, isStr := typ.(string); !isStr {
		return notAString("error.type", typ)
	}
	return ""
}

func notAString(member string, v any) string {
	if v == nil {
		return member + ": null, not a string"
	}
	return member + ": " + show(v) + ", a " + typeName(v) + ", not a string"
}

func eachErrorObject(j *judge, ids []probeID, f func(x *exchange, e map[string]any) *verdict) verdict {
	n := 0
	for _, x := range errorAnswers(j, ids) {
		e, ok := errorObject(x)
		if !ok {
			continue // errors.shape reports it
		}
		n++
		if v := f(x, e); v != nil {
			return v.from(x)
		}
	}
	if n == 0 {
		return skip("no error objects to judge; see errors.shape")
	}
	return pass()
}

func validRetryAfter(v string) bool {
	if v == "" {
		return false
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		return n >= 0
	}
	_, err := http.ParseTime(v)
	return err == nil
}
