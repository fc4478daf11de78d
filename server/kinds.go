package server

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hayula/gateway/internal/echo"
	"github.com/hayula/gateway/internal/jsonx"
)

// kinds are the JSON kinds a top-level chat field may have; null is always one.
type kinds uint8

const (
	kString kinds = 1 << iota
	kNumber
	kInteger // a number written as an integer, as strconv.ParseInt reads it
	kBool
	kObject
	kArray
	// kWhole is a number whose value is an integer however it is written (40, 40.0, 1e2): what
	// the local servers read for their integer sampling fields (Ollama's options take any JSON
	// number and keep its integer part; vLLM's pydantic and llama-server take a whole float).
	kWhole
)

// passKinds gives, for a chat field the gateway passes upstream without decoding it, its name as
// a constant and the kinds OpenAI's API reference allows it (0: not a field checked here); for
// the sampling fields the local servers add beside OpenAI's (top_k, min_p, repeat_penalty: Ollama,
// llama-server, LM Studio; vLLM reads the first two), the kind every one of them reads, so that a
// misfit is refused the same whichever target serves the request (TestOllamaSamplingOptions). The
// fields the gateway decodes (model, messages, stream, stream_options, max_tokens,
// max_completion_tokens, temperature, top_p, seed) are typed by their decode already. Only the
// exact names: a spelling that differs ("N") is a member no upstream reads as the field.
func passKinds(name []byte) (string, kinds) {
	switch string(name) {
	case "tools":
		return "tools", kArray
	case "functions":
		return "functions", kArray
	case "tool_choice":
		return "tool_choice", kString | kObject
	case "function_call":
		return "function_call", kString | kObject
	case "stop":
		return "stop", kString | kArray
	case "response_format":
		return "response_format", kObject
	case "n":
		return "n", kInteger
	case "top_logprobs":
		return "top_logprobs", kInteger
	case "logit_bias":
		return "logit_bias", kObject
	case "metadata":
		return "metadata", kObject
	case "audio":
		return "audio", kObject
	case "prediction":
		return "prediction", kObject
	case "web_search_options":
		return "web_search_options", kObject
	case "modalities":
		return "modalities", kArray
	case "presence_penalty":
		return "presence_penalty", kNumber
	case "frequency_penalty":
		return "frequency_penalty", kNumber
	case "logprobs":
		return "logprobs", kBool
	case "parallel_tool_calls":
		return "parallel_tool_calls", kBool
	case "store":
		return "store", kBool
	case "user":
		return "user", kString
	case "reasoning_effort":
		// An object too: openai-agents' LitellmModel sends {"effort","summary"} when a summary is
		// asked for and LiteLLM forwards it as it is; llama.cpp ignores it, others refuse it themselves.
		return "reasoning_effort", kString | kObject
	case "service_tier":
		return "service_tier", kString
	case "verbosity":
		return "verbosity", kString
	case "prompt_cache_key":
		return "prompt_cache_key", kString
	case "safety_identifier":
		return "safety_identifier", kString
	case "top_k":
		return "top_k", kWhole
	case "min_p":
		return "min_p", kNumber
	case "repeat_penalty":
		return "repeat_penalty", kNumber
	}
	return "", 0
}

// badField is the first passed-through field whose value the walk refused; name is empty when
// there is none. value is a sub-slice of the body: the field's, or with elem the element's.
type badField struct {
	name  string
	value []byte
	// elem is 1 + the index of the array element refused (stopElement), 0 for the whole field.
	elem int
}

// fits reports whether the (validated) JSON value v is of one of the kinds k, and, for "n", at
// least 1: a request for no choices at all is refused by OpenAI and means nothing upstream.
func fits(name string, k kinds, v []byte) bool {
	switch v[0] {
	case 'n':
		return true
	case '"':
		return k&kString != 0
	case 't', 'f':
		return k&kBool != 0
	case '{':
		return k&kObject != 0
	case '[':
		return k&kArray != 0
	}
	if k&kNumber != 0 {
		return true
	}
	if k&kWhole != 0 {
		return isWhole(v)
	}
	if k&kInteger == 0 {
		return false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		// Out of int64's range is still an integer, and only "n"'s sign matters.
		return isIntText(v) && (name != "n" || v[0] != '-')
	}
	return name != "n" || n >= 1
}

// isWhole reports whether the JSON number v is an integer in value, written with a fraction or
// an exponent or not (TestOllamaTopKWholeNumber). One beyond float64's range is whole when it is
// written as an integer, as for kInteger.
func isWhole(v []byte) bool {
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return isIntText(v)
	}
	return f == math.Trunc(f)
}

// isIntText reports a JSON number without fraction or exponent.
func isIntText(v []byte) bool {
	for _, c := range v {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// checkPassed checks the member name: v when the walk meets it against the kinds passKinds
// gives it, recording the first misfit, and notes what top_logprobs and logprobs ask for. It
// reports false, having done nothing, for a member passKinds does not name.
func (w *wireView) checkPassed(name, v []byte) bool {
	n, k := passKinds(name)
	if k == 0 {
		return false
	}
	if w.bad.name == "" {
		if !fits(n, k, v) {
			w.bad = badField{name: n, value: v}
		} else if n == "stop" && v[0] == '[' {
			if i, e, found := notString(v); found {
				w.bad = badField{name: n, value: e, elem: i + 1}
			}
		}
	}
	switch n {
	case "top_logprobs":
		// 0 asks for nothing, and some clients send it by default: only a count is refused.
		w.topLogprobs = v[0] != 'n' && string(v) != "0"
	case "logprobs":
		w.logprobs = v[0] == 't'
	case "n":
		w.choices = choicesOf(v)
	case "logit_bias":
		w.noteOpenAIOnly(n, v[0] == '{' && hasMember(v))
	case "modalities":
		w.noteOpenAIOnly(n, v[0] == '[' && asksAudio(v))
	}
	return true
}

// noteAsked follows two members no kind check applies to, which ask for what not every target
// gives by itself: Ollama's own format, when it asks for JSON ("json" or a schema object, what
// the ollama adapter sends as /api/chat's format), which SAIF's protocol cannot carry any more
// than a JSON response_format (core.Request.NativeFormat, TestOllamaFormatSkipsSAIF); and
// OpenRouter's reasoning object, when its exclude is true (core.Request.HideReasoning,
// TestReasoningExcludeEveryAdapter). As every decoder reads a body, the last member of a name
// wins. The walk meets them among the members it does not decode, so a body without them pays
// one switch on each such member's name.
func (w *wireView) noteAsked(name, v []byte) {
	switch string(name) {
	case "format":
		s, _ := jsonx.Unquote(v)
		w.nativeFormat = v[0] == '{' || v[0] == '"' && s == "json"
	case "reasoning":
		w.hideReasoning = excludes(v)
	}
}

// excludes reports whether the (validated) value v is an object whose last "exclude" is true.
func excludes(v []byte) bool {
	if v[0] != '{' {
		return false
	}
	ex := false
	it := jsonx.Object(v, false)
	for {
		k, e, ok := it.Next()
		if !ok {
			return ex
		}
		if name, ok := jsonx.Unquote(k); ok && name == "exclude" {
			ex = string(e) == "true"
		}
	}
}

// noteOpenAIOnly records the field name as the request's first OpenAI-only one when it asks for
// something (TestOpenAIOnlyParamsSkipTranslators).
func (w *wireView) noteOpenAIOnly(name string, asks bool) {
	if asks && w.openaiOnly == "" {
		w.openaiOnly = name
	}
}

// hasMember reports whether the (validated) object v has a member.
func hasMember(v []byte) bool {
	it := jsonx.Object(v, false)
	_, _, ok := it.Next()
	return ok
}

// asksAudio reports whether the (validated) modalities array v holds "audio".
func asksAudio(v []byte) bool {
	it := jsonx.Array(v, false)
	for {
		_, e, ok := it.Next()
		if !ok {
			return false
		}
		if s, ok := jsonx.Unquote(e); ok && s == "audio" {
			return true
		}
	}
}

// notString returns the first element of the (validated) array v that is not a string, and its
// index. A stop list of anything else is refused as OpenAI refuses it: the ollama and saif
// adapters read no list out of it and sent no stop at all, the strings in it included, so the
// answer ran past where the client asked it to end (TestStopElementsAreStrings).
func notString(v []byte) (int, []byte, bool) {
	it := jsonx.Array(v, false)
	for i := 0; ; i++ {
		_, e, ok := it.Next()
		if !ok {
			return 0, nil, false
		}
		if e[0] != '"' {
			return i, e, true
		}
	}
}

// choicesOf is the number of choices an n that fits (an integer of at least 1) asks for, when
// above 1; 0 otherwise, eligibility's "one".
func choicesOf(v []byte) int {
	c, err := strconv.Atoi(string(v))
	if errors.Is(err, strconv.ErrRange) && len(v) > 0 && v[0] != '-' {
		// Beyond int but an integer all the same: as many choices as can be said.
		c, err = math.MaxInt, nil
	}
	if err != nil || c < 2 {
		return 0
	}
	return c
}

// noteStream follows one "stream" member v, in the body's order. A null after true is a body
// the decoders disagree on: encoding/json, the gateway's and Ollama's, leaves the true it had and
// streams; Python's json and llama.cpp's nlohmann keep the last value, and vLLM and llama.cpp read
// a null stream as false and answer one JSON object, which the gateway would relay as an event
// stream (TestStreamNullAfterTrueRefused).
func (w *wireView) noteStream(v []byte) {
	switch v[0] {
	case 't':
		w.streamOn = true
	case 'f':
		w.streamOn = false
	case 'n':
		w.streamNulled = w.streamNulled || w.streamOn
	}
}

// passedRefusal is the client's error for the fields passed upstream, nil when they are
// acceptable: the first of the wrong kind, then top_logprobs without logprobs true, which
// OpenAI refuses ("'top_logprobs' requires 'logprobs' to be set to true") and an upstream would
// otherwise read as it likes.
func (w *wireView) passedRefusal() *apiError {
	if w.bad.name != "" {
		return w.bad.refusal()
	}
	if w.streamNulled {
		return badRequest("stream", "invalid_value",
			"'stream' is sent more than once, the last time as null, which upstreams read differently: send it once.")
	}
	if w.topLogprobs && !w.logprobs {
		return badRequest("top_logprobs", "invalid_value", "'top_logprobs' requires 'logprobs' to be set to true.")
	}
	return nil
}

// passedKinds records in w, as checkPassed does, the fields passed upstream of a body
// encoding/json decoded, whose keys the one-pass walk did not take (escaped ones among them,
// which every upstream reads unescaped). It walks the body again, which only the rare body the
// walk declines pays for.
func passedKinds(body []byte, w *wireView) {
	it := jsonx.Object(body, false)
	for {
		q, v, ok := it.Next()
		if !ok {
			return
		}
		if name, ok := jsonx.Unquote(q); ok {
			if name == "stream" {
				w.noteStream(v)
			}
			w.noteAsked([]byte(name), v)
			w.checkPassed([]byte(name), v)
		}
	}
}

// refusal is the client's error for b, in OpenAI's words for the same mistakes.
func (b badField) refusal() *apiError {
	_, k := passKinds([]byte(b.name))
	got := kindName(b.value)
	if b.elem > 0 {
		param := fmt.Sprintf("%s[%d]", b.name, b.elem-1)
		if got != "null" {
			got = article(got)
		}
		return badRequest(param, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected a string, but got %s instead.",
			param, got))
	}
	if got == "integer" && k&kInteger != 0 {
		// An integer misfits only "n", below its minimum.
		return badRequest(b.name, "integer_below_min_value", fmt.Sprintf(
			"Invalid '%s': integer below minimum value. Expected a value >= 1, but got %s instead.", b.name, echo.Bytes(b.value)))
	}
	return badRequest(b.name, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.",
		b.name, expected(k), article(got)))
}

func kindName(v []byte) string {
	switch v[0] {
	case 'n':
		return "null"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	if isIntText(v) {
		return "integer"
	}
	return "number"
}

func expected(k kinds) string {
	var names []string
	for _, kn := range [...]struct {
		k    kinds
		name string
	}{{kString, "string"}, {kNumber, "number"}, {kInteger, "integer"}, {kWhole, "integer"}, {kBool, "boolean"}, {kObject, "object"}, {kArray, "array"}} {
		if k&kn.k != 0 {
			names = append(names, article(kn.name))
		}
	}
	return strings.Join(names, " or ")
}

func article(kind string) string {
	switch kind[0] {
	case 'a', 'i', 'o':
		return "an " + kind
	}
	return "a " + kind
}
