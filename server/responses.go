package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/internal/echo"
	"github.com/hayula/gateway/internal/jsonx"
	"github.com/hayula/gateway/metrics"
)

// POST /v1/responses is OpenAI's Responses API bridged onto the chat pipeline: the local model
// servers behind the gateway speak chat completions, so the Responses body is turned into a chat
// body (decodeResponses), served exactly as a chat request is (auth, caps, route, filters,
// selector, fallback, headers, metrics, log line), and the chat answer, whole or streamed, is
// turned back into a Responses answer by a responsesWriter around the client's writer. The
// gateway keeps no state: previous_response_id, conversation and background are refused, and
// nothing is stored whatever "store" says. "store": true is served rather than refused: OpenAI
// defaults it to true and the SDKs send nothing, so a client cannot tell the default from a wish;
// the answer says "store": false, and GET /v1/responses/{id} answers 404 saying why.

// opResponses is the endpoint serveOp counts a Responses request under; the request it builds
// is a chat request (core.OpChat), which is what adapters and eligibility see.
const opResponses = metrics.OpResponses

// bridgeKey carries a request's responsesWriter to decodeResponses, which records in it what the
// answer echoes.
type bridgeKey struct{}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	b := &responsesWriter{w: w, created: s.clock.Now().Unix()}
	s.serveOp(b, r.WithContext(context.WithValue(r.Context(), bridgeKey{}, b)), opResponses)
	b.finish()
}

// handleStoredResponse answers the endpoints that read a stored response (GET and DELETE
// /v1/responses/{id}, its input_items, its cancel): the gateway stores none, and says so, where
// unknown_url would tell a client the API has no such endpoint. The key is checked first, as on
// every /v1 endpoint, so that the answer tells a caller without one nothing.
func (s *Server) handleStoredResponse(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if _, e := s.authenticate(r); e != nil {
		writeError(w, e)
		return
	}
	writeError(w, &apiError{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: "response_not_found",
		Message: fmt.Sprintf("Response with id '%s' not found: the gateway stores no responses (its answers say \"store\": false, whatever the request asked), so there is none to retrieve, list, delete or cancel.", echo.String(ps.ByName("id")))})
}

// decodeResponses turns a Responses body into a chat body and decodes that as a chat request: the
// client's body is decoded once, here; the chat body is the gateway's own.
func (s *Server) decodeResponses(r *http.Request, body []byte, st *reqState) (*core.Request, *apiError) {
	b, _ := r.Context().Value(bridgeKey{}).(*responsesWriter)
	if b == nil {
		return nil, &apiError{Status: http.StatusInternalServerError, Type: typeServer, Code: "internal_error",
			Message: "the Responses bridge lost its writer"}
	}
	chat, e := b.toChat(body)
	if e != nil {
		return nil, e
	}
	st.bridge = b
	req, e := decodeWritten(r, chat, st, s.names)
	if e != nil {
		e.Param, e.Message = b.clientTerms(e.Param, e.Message)
	}
	return req, e
}

// clientTerms is param, a field of the chat request the bridge built that a refusal names (the
// chat decoder's, an adapter's 400), and the refusal's message, in the terms of the Responses
// body the client sent: the bridge's max_tokens is max_output_tokens
// (TestResponsesMaxOutputTokensErrorsNameIt), its reasoning_effort reasoning.effort, its
// response_format text.format, and messages[i] the input item message i came from, a tool call
// its function_call item, a tool message's content its output. Named as they were, the ollama
// adapter's refusal of an image or a call's arguments named messages[2].content[1].image_url for
// the client's input[1].content[1].image_url, since instructions are message 0 and calls in a row
// one message (TestResponsesAdapterErrorsNameInput); messages, all of them, is input. Another
// param is returned as it is. The message names the messages it refuses as param does
// (inputFieldsIn).
func (b *responsesWriter) clientTerms(param, msg string) (string, string) {
	msg = b.inputFieldsIn(msg, param == "messages")
	renamed := func(chat, resp string) (string, string) {
		return resp + strings.TrimPrefix(param, chat), strings.ReplaceAll(msg, chat, resp)
	}
	switch {
	case param == "max_tokens" && b.echo.MaxOutputTokens != nil:
		return renamed("max_tokens", "max_output_tokens")
	case param == "reasoning_effort" && b.effort:
		return renamed("reasoning_effort", "reasoning.effort")
	case param == "response_format.json_schema.schema" && b.echo.Text != nil:
		return "text.format.schema", textFormatNames.Replace(msg)
	case (param == "response_format" || param == "response_format.type") && b.echo.Text != nil:
		return "text.format" + strings.TrimPrefix(param, "response_format"), textFormatNames.Replace(msg)
	}
	if p, ok := b.inputField(param); ok {
		return p, msg
	}
	return param, msg
}

// textFormatNames renames chat's response_format in a refusal's message as clientTerms renames
// its param: the ollama adapter's "response_format json_schema needs a schema object" came with
// param text.format.schema (TestResponsesAdapterErrorsNameInput). Responses' text.format holds
// json_schema's members itself, so response_format.json_schema.X is text.format.X.
var textFormatNames = strings.NewReplacer(
	"response_format.json_schema.", "text.format.",
	"response_format.json_schema", "text.format",
	"response_format", "text.format")

// inputField is a field of the chat messages the bridge built (messages, messages[i] and what
// follows it) as the field of the Responses body it came from (see clientTerms); ok is false for
// another field, or a message the request did not have.
func (b *responsesWriter) inputField(param string) (string, bool) {
	if param == "messages" {
		// The conversation as a whole (a template's refusal of its roles): the input it was built
		// from, where it named a field the client never sent (TestResponsesUpstreamParamMessagesIsInput).
		return "input", true
	}
	i, rest, ok := indexed(param, "messages")
	if !ok || i >= len(b.msgs) {
		return "", false
	}
	m := b.msgs[i]
	if j, tail, ok := indexed(rest, ".tool_calls"); ok && j < len(m.ToolCalls) {
		switch tail {
		case ".function.arguments":
			tail = ".arguments"
		case ".function.name":
			tail = ".name"
		case ".id":
			tail = ".call_id"
		default:
			tail = ""
		}
		return fmt.Sprintf("input[%d]%s", m.ToolCalls[j].item, tail), true
	}
	switch m.item {
	case fromInstructions:
		return "instructions", true
	case fromInput:
		return "input", true
	}
	switch {
	case m.Role == "tool" && strings.HasPrefix(rest, ".content"):
		rest = ".output" + strings.TrimPrefix(rest, ".content")
	case m.Role == "tool" && rest == ".tool_call_id":
		rest = ".call_id"
	case rest != ".role" && !strings.HasPrefix(rest, ".content"):
		rest = "" // a field the item does not have as such (the reasoning sent with it)
	}
	return fmt.Sprintf("input[%d]%s", m.item, rest), true
}

// inputFieldsIn is a refusal's message with the fields of the chat messages it names
// (OpenAI's "Invalid 'messages[2].content': …") named as inputField names them, since the client
// sent no messages and reads param beside the message (TestResponsesUpstreamMessageNamesInput).
// Only a field name is renamed: messages[i] and the path after it, standing apart from the words
// around it (not system_messages[1], nor body.messages[1], another object's), and bare messages
// only when param named it too and it is all a pair of quotes holds ('messages'), since the word
// alone is as often English. Within double quotes, the client's own text quoted back, a name is
// renamed only when it is all the quotes hold. A message the request did not have is left as it
// is.
func (b *responsesWriter) inputFieldsIn(msg string, whole bool) string {
	const name = "messages"
	var out strings.Builder
	done, quoted := 0, false // msg[:done] is in out; quoted: at done, within double quotes
	for from := 0; ; {
		k := strings.Index(msg[from:], name)
		if k < 0 {
			break
		}
		at := from + k
		end := at + len(name)
		if end < len(msg) && msg[end] == '[' {
			end = fieldPathEnd(msg, at+len(name))
		}
		from = end
		if at > 0 && (isFieldByte(msg[at-1]) || msg[at-1] == '.') || end < len(msg) && isFieldByte(msg[end]) {
			continue
		}
		for _, c := range []byte(msg[done:at]) {
			if c == '"' {
				quoted = !quoted
			}
		}
		out.WriteString(msg[done:at])
		done = at
		filled := at > 0 && end < len(msg) && msg[at-1] == msg[end] && strings.IndexByte("'\"`", msg[end]) >= 0
		if quoted && !filled || msg[at:end] == name && (!whole || !filled) {
			continue
		}
		if f, ok := b.inputField(msg[at:end]); ok {
			out.WriteString(f)
			done = end
		}
	}
	if done == 0 {
		return msg
	}
	out.WriteString(msg[done:])
	return out.String()
}

// fieldPathEnd is where the field path that goes on at msg[i] ends: indexes ("[2]") and members
// (".content") one after another; a dot that no member follows ends a sentence.
func fieldPathEnd(msg string, i int) int {
	for i < len(msg) {
		switch msg[i] {
		case '[':
			j := i + 1
			for j < len(msg) && '0' <= msg[j] && msg[j] <= '9' {
				j++
			}
			if j == i+1 || j == len(msg) || msg[j] != ']' {
				return i
			}
			i = j + 1
		case '.':
			j := i + 1
			for j < len(msg) && isFieldByte(msg[j]) {
				j++
			}
			if j == i+1 {
				return i
			}
			i = j
		default:
			return i
		}
	}
	return i
}

// isFieldByte reports whether c may be part of a field's name, so that a name it touches is
// part of a longer word.
func isFieldByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// indexed reads param as name[i] and what follows it; ok is false when it is not.
func indexed(param, name string) (i int, rest string, ok bool) {
	s, ok := strings.CutPrefix(param, name+"[")
	if !ok {
		return 0, "", false
	}
	end := strings.IndexByte(s, ']')
	if end < 1 {
		return 0, "", false
	}
	i, err := strconv.Atoi(s[:end])
	if err != nil || i < 0 {
		return 0, "", false
	}
	return i, s[end+1:], true
}

// responsesRefused are Responses fields that need state the gateway does not keep, with why: a
// client that sends one expects the server to remember something, and would silently get an
// answer without it.
var responsesRefused = map[string]string{
	"previous_response_id": "the gateway keeps no responses, so it cannot continue one: send the whole conversation in 'input' instead.",
	"conversation":         "the gateway keeps no conversations: send the whole conversation in 'input' instead.",
	"background":           "the gateway does not run responses in the background: leave 'background' unset or false.",
	"prompt":               "the gateway has no stored prompts: send the prompt's text in 'instructions' and 'input'.",
}

// refusedField refuses the first of the body's members, in the body's order, that needs state the
// gateway does not keep (responsesRefused), as its last value says (top's): null and false ask
// for nothing. A body with several is refused naming the first, every time; ranging over the map
// named one at random (TestResponsesRefusedFieldsInOrder).
func refusedField(members []member, top map[string]json.RawMessage) *apiError {
	for _, m := range members {
		var name string
		if n, plain := jsonx.PlainKey(m.quoted); plain {
			if _, ok := responsesRefused[string(n)]; !ok {
				continue // no copy of the name for the common member
			}
			name = string(n)
		} else {
			name, _ = jsonx.Unquote(m.quoted)
		}
		why, ok := responsesRefused[name]
		if ok && !isNullOr(top[name], "false") {
			return badRequest(name, "unsupported_parameter", fmt.Sprintf("'%s' is not supported: %s", name, why))
		}
	}
	return nil
}

// responsesDropped are Responses fields with no chat counterpart that change nothing a local model
// does, or that only a stateful server honours, and those toChat builds chat's own from
// (reasoning's effort is chat's reasoning_effort); they are read and not sent on as they are.
var responsesDropped = map[string]bool{
	"include": true, "truncation": true, "reasoning": true, "max_tool_calls": true, "stream_options": true,
	"top_logprobs": true, "store": true, "metadata": true, "text": true, "tools": true, "tool_choice": true,
	"input": true, "instructions": true, "max_output_tokens": true, "stream": true, "model": true,
	"context_management": true, "prompt_cache_retention": true,
	// Chat's n, which a Responses body cannot have: toChat refuses it unless it is null, which
	// would otherwise go on as chat's.
	"n": true,
}

// toChat builds the chat body for a Responses body and records in b what the answer echoes.
// Fields it does not know go on to the upstream as they are, as the chat endpoint passes them.
func (b *responsesWriter) toChat(body []byte) ([]byte, *apiError) {
	members, top, folds, ok := textMembers(body)
	if !ok {
		// As the chat endpoint checks its body: what the bridge passes on is re-encoded, and
		// would otherwise carry a key's invalid UTF-8 as U+FFFD where chat refuses it.
		if e := checkText(body); e != nil {
			return nil, e
		}
		var e *apiError
		if members, top, e = membersOf(body); e != nil {
			return nil, e
		}
		folds = true
	}
	if folds {
		if e := foldedAt(body, "", isResponsesKey); e != nil {
			return nil, e
		}
	}
	if e := refusedField(members, top); e != nil {
		return nil, e
	}
	if e := droppedKinds(top); e != nil {
		return nil, e
	}
	if e := logprobsAsked(top); e != nil {
		return nil, e
	}
	// Chat's conversation in a Responses body would be dropped for the one built from "input"
	// (chatBody writes its own "messages"), and explain, which reads a body with "messages" as a
	// chat body, would describe a request the bridge does not send.
	if v, ok := top["messages"]; ok && !isNullOr(v) {
		return nil, badRequest("messages", "unknown_parameter",
			"Unknown parameter: 'messages'. A Responses body carries its conversation in 'input'; send 'messages' to POST /v1/chat/completions.")
	}
	if e := unsupportedLeft(top); e != nil {
		return nil, e
	}
	// out holds the members the bridge builds; the others go on in members' order.
	out := make(map[string]json.RawMessage, 8)
	if m, ok := top["model"]; ok {
		out["model"] = m
		if s, ok := jsonx.Unquote(m); ok { // as json.Unmarshal into a string: another kind leaves it
			b.model = s
		}
	}
	var msgs []chatMessage
	if v, ok := top["instructions"]; ok && !isNullOr(v) {
		if v[0] != '"' {
			return nil, badRequest("instructions", "invalid_type", "Invalid type for 'instructions': expected a string.")
		}
		b.echo.Instructions = v
		if len(v) > 2 { // not "", the only literal of the empty string
			msgs = append(msgs, chatMessage{Role: "system", Content: textContent(v), item: fromInstructions})
		}
	}
	in, ok := top["input"]
	if !ok || isNullOr(in) {
		return nil, badRequest("input", "missing_required_parameter", "Missing required parameter: 'input'.")
	}
	msgs, e := appendInput(msgs, in)
	if e != nil {
		return nil, e
	}
	msgs = mergeLeadingSystem(msgs)
	if len(msgs) == 0 {
		return nil, badRequest("input", "invalid_value", "'input' has no messages the gateway can send.")
	}
	out["messages"] = nil // msgs, which chatBody writes
	b.msgs = msgs
	if v, ok := top["max_output_tokens"]; ok && !isNullOr(v) {
		out["max_tokens"] = v
		b.echo.MaxOutputTokens = v
	}
	if v, ok := top["stream"]; ok {
		if e := b.readStream(v, out); e != nil {
			return nil, e
		}
	}
	if v, ok := top["tools"]; ok && !isNullOr(v) {
		tools, e := chatTools(v)
		if e != nil {
			return nil, e
		}
		out["tools"] = tools
		b.echo.Tools = v
	}
	if v, ok := top["tool_choice"]; ok && !isNullOr(v) {
		c, e := chatToolChoice(v)
		if e != nil {
			return nil, e
		}
		if v[0] == '{' {
			if e := undeclaredChoice(v, top["tools"]); e != nil {
				return nil, e
			}
		}
		out["tool_choice"] = c
		b.echo.ToolChoice = v
	}
	if v, ok := top["text"]; ok && !isNullOr(v) {
		f, e := chatResponseFormat(v)
		if e != nil {
			return nil, e
		}
		if f != nil {
			out["response_format"] = f
		}
		b.echo.Text = v
	}
	if v, ok := top["reasoning"]; ok && !isNullOr(v) {
		effort, e := chatReasoningEffort(v)
		if e != nil {
			return nil, e
		}
		if effort != nil {
			out["reasoning_effort"] = effort
			b.effort = true
		}
	}
	if v, ok := top["metadata"]; ok && !isNullOr(v) {
		b.echo.Metadata = v
	}
	b.echo.Temperature, b.echo.TopP = top["temperature"], top["top_p"]
	if v, ok := top["parallel_tool_calls"]; ok && !isNullOr(v) {
		b.echo.ParallelToolCalls = v
	}
	if v, ok := top["max_tool_calls"]; ok && !isNullOr(v) {
		// Not sent on (unsupportedLeft), but echoed as OpenAI echoes it (TestResponsesEchoMaxToolCalls).
		b.echo.MaxToolCalls = v
	}
	return chatBody(members, out, msgs, len(in)), nil
}

// unsupportedLeft refuses what a chat upstream cannot do of n, truncation and max_tool_calls,
// which are not sent on (TestResponsesParametersLeft). n is chat's, and OpenAI's Responses API
// refuses it as unknown: a response has one answer, and dropped, it left a client that asked for
// several answers to take one for all. truncation "auto" has OpenAI drop input items to
// fit the context window, which a chat upstream never does; "disabled", the default, is what it
// does (a 400 when the prompt is too long). max_tool_calls caps calls to built-in tools, and none
// runs behind the gateway (it answers function calls only, which OpenAI does not count): it
// changes nothing, and only its type and OpenAI's minimum, 1, are checked. null is unset for each.
func unsupportedLeft(top map[string]json.RawMessage) *apiError {
	if v, ok := top["n"]; ok && !isNullOr(v) {
		return badRequest("n", "unknown_parameter",
			"Unknown parameter: 'n'. A response has one answer: send one request for each, or 'n' to POST /v1/chat/completions.")
	}
	if v, ok := top["truncation"]; ok && !isNullOr(v) {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return badRequest("truncation", "invalid_type", "Invalid type for 'truncation': expected a string.")
		}
		switch s {
		case "disabled":
		case "auto":
			return badRequest("truncation", "unsupported_value",
				"truncation \"auto\" is not supported by the gateway, whose chat upstreams drop no input items to fit their context window (an input too long is refused, as with \"disabled\"): leave 'truncation' unset or \"disabled\", and shorten 'input'.")
		default:
			return badRequest("truncation", "invalid_value", fmt.Sprintf(
				"Invalid value for 'truncation': '%s' (expected \"auto\" or \"disabled\").", echo.String(s)))
		}
	}
	if v, ok := top["max_tool_calls"]; ok && !isNullOr(v) {
		var n int64
		if json.Unmarshal(v, &n) != nil {
			return badRequest("max_tool_calls", "invalid_type", "Invalid type for 'max_tool_calls': expected an integer.")
		}
		if n < 1 {
			// OpenAI's API refuses 0 and below so; a negative one was echoed as if taken.
			return belowMin("max_tool_calls", n, 1)
		}
	}
	return nil
}

// droppedKinds refuses a field the bridge reads and does not send on (responsesDropped) when it
// is not of the kind OpenAI's API takes, as the chat decoder refuses a field it passes on
// (passKinds): dropped unread, a store of "yes" or an include that is a string was served as if
// right, and metadata, which the response object echoes, came back a string or with a number in
// it, a response no client generated from OpenAI's schema reads (TestResponsesDroppedFieldKinds).
// The others of responsesDropped are checked where they are read. null is no value.
func droppedKinds(top map[string]json.RawMessage) *apiError {
	for _, f := range [...]struct {
		name string
		k    kinds
	}{{"store", kBool}, {"metadata", kObject}, {"include", kArray}, {"top_logprobs", kInteger}, {"stream_options", kObject}} {
		v := top[f.name]
		if len(v) == 0 || fits(f.name, f.k, v) {
			continue
		}
		return badRequest(f.name, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.",
			f.name, expected(f.k), article(kindName(v))))
	}
	// Each element of include, and each value of metadata, is a string.
	for _, f := range [...]struct {
		name string
		it   func([]byte, bool) jsonx.Iter
	}{{"include", jsonx.Array}, {"metadata", jsonx.Object}} {
		v := top[f.name]
		if len(v) == 0 || v[0] == 'n' {
			continue
		}
		it := f.it(v, false)
		for i := 0; ; i++ {
			k, e, ok := it.Next()
			if !ok {
				break
			}
			if e[0] == '"' {
				continue
			}
			at := fmt.Sprintf("%s[%d]", f.name, i)
			if f.name == "metadata" {
				name, _ := jsonx.Unquote(k)
				at = f.name + "." + echo.String(name)
			}
			return badRequest(at, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected a string, but got %s instead.",
				at, article(kindName(e))))
		}
	}
	return nil
}

// logprobsAsked refuses a request for the answer's log probabilities: top_logprobs above 0, or
// include naming message.output_text.logprobs. The bridge does not translate chat's logprobs into
// output_text's, and dropped, the answer's logprobs would be empty as if the model had none
// (TestResponsesLogprobsRefused). include's other values ask for what the gateway does not have
// (reasoning.encrypted_content, which Codex sends on every request; built-in tools' results) and
// are read and not sent on. A value of the wrong type was refused before (droppedKinds).
func logprobsAsked(top map[string]json.RawMessage) *apiError {
	var n float64
	if v, ok := top["top_logprobs"]; ok && json.Unmarshal(v, &n) == nil && n > 0 {
		return badRequest("top_logprobs", "unsupported_parameter",
			"'top_logprobs' is not supported by the gateway, which does not bridge chat's log probabilities into a response's output_text: leave it unset or 0.")
	}
	var include []json.RawMessage
	if v, ok := top["include"]; ok && json.Unmarshal(v, &include) == nil {
		for i, v := range include {
			if s, _ := jsonx.Unquote(v); s == "message.output_text.logprobs" {
				return badRequest(fmt.Sprintf("include[%d]", i), "unsupported_parameter",
					"'message.output_text.logprobs' cannot be included: the gateway does not bridge chat's log probabilities into a response's output_text.")
			}
		}
	}
	return nil
}

// member is one of a body's members, its key as the client quoted it.
type member struct {
	quoted []byte
	value  json.RawMessage
}

// textMembers is membersOf for a body that is a JSON text as jsonx.Text walks one to the depth
// the chat endpoint takes (maxBodyDepth): valid JSON and UTF-8, no lone surrogate escape. Such a
// body is one checkText passes and leaves as it is, and one membersOf takes, so one strict walk
// does the work of the three passes (checkText's, jsonx.Valid's, the members'); ok is false for
// any other, which goes through them and is refused as before. folds is false when every key is
// plain lower-case ASCII, which no key of the body's can fold into (foldedAt has nothing to find).
func textMembers(body []byte) (members []member, top map[string]json.RawMessage, folds, ok bool) {
	it := jsonx.Text(body, maxBodyDepth)
	top = make(map[string]json.RawMessage, 16)
	for {
		q, v, more := it.Next()
		if !more {
			return members, top, folds, it.Done()
		}
		var k string
		if name, plain := jsonx.PlainKey(q); plain && !mayFold(name) {
			k = string(name)
		} else if k, ok = jsonx.Unquote(q); !ok {
			return nil, nil, false, false
		} else {
			folds = true
		}
		members = append(members, member{quoted: q, value: v})
		top[k] = v
	}
}

// membersOf walks a Responses body once: its members in order and as often as they came (what
// chatBody passes on), and by name the last of each, as encoding/json reads an object (what
// toChat decides on). A body that is not a JSON object is refused as encoding/json words it.
func membersOf(body []byte) ([]member, map[string]json.RawMessage, *apiError) {
	if jsonx.Valid(body) {
		it := jsonx.Object(body, false)
		var members []member
		top := make(map[string]json.RawMessage, 16)
		for {
			q, v, ok := it.Next()
			if !ok {
				break
			}
			k, ok := jsonx.Unquote(q)
			if !ok {
				break
			}
			members = append(members, member{quoted: q, value: v})
			top[k] = v
		}
		if it.Done() {
			return members, top, nil
		}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, nil, jsonError(err)
	}
	return nil, nil, jsonError(errNotObject) // null: a map takes it without complaint
}

// chatBody is the chat body: the client's members the bridge neither refuses nor drops
// (temperature, top_p, parallel_tool_calls, user, the Hayula options, unknowns) in their order and
// as often as they came, then the members in built. A member sent twice goes on twice, so that the
// chat decoder reads it as it would on the chat endpoint: there a body that says
// "x-hayula-privacy": "strict" anywhere is strict, and a map keeping the last value let a second
// "default" undo it and reach a public target (TestResponsesPrivacyAnyStrictCounts).
// built's messages (nil there) are msgs, written straight into the body (appendChatMessages)
// rather than into a buffer of their own first, which the body then copied: they are most of it,
// about the size of input, the client's member of size inputSize (more where the bridge escapes
// what the client did not).
func chatBody(members []member, built map[string]json.RawMessage, msgs []chatMessage, inputSize int) []byte {
	size := 2 + inputSize + inputSize/8
	for _, m := range members {
		size += len(m.quoted) + len(m.value) + 2
	}
	for k, v := range built {
		size += len(k) + len(v) + 4
	}
	chat := make([]byte, 0, size)
	chat = append(chat, '{')
	for _, m := range members {
		var skip bool
		if name, plain := jsonx.PlainKey(m.quoted); plain {
			skip = passedOver(string(name), built) // no copy of the name for the lookups
		} else {
			k, _ := jsonx.Unquote(m.quoted)
			skip = passedOver(k, built)
		}
		if skip {
			continue
		}
		if len(chat) > 1 {
			chat = append(chat, ',')
		}
		chat = append(append(append(chat, m.quoted...), ':'), m.value...)
	}
	for _, k := range slices.Sorted(maps.Keys(built)) {
		if len(chat) > 1 {
			chat = append(chat, ',')
		}
		chat = append(jsonx.AppendString(chat, k, true), ':')
		if k == "messages" {
			chat = appendChatMessages(chat, msgs)
		} else {
			chat = append(chat, built[k]...)
		}
	}
	return append(chat, '}')
}

// passedOver reports whether chatBody leaves out the client's member k: one the bridge builds
// itself (built), refuses or drops.
func passedOver(k string, built map[string]json.RawMessage) bool {
	_, refused := responsesRefused[k]
	_, ok := built[k]
	return ok || refused || responsesDropped[k]
}

// readStream takes "stream". The chat body gets no stream_options: the usage response.completed
// carries is asked as any counted stream's is (core.Request.CountsUsage, which the bridge sets),
// so that an adapter asks only a target that takes it, and asks again without it on a refusal
// (TestResponsesStreamOptionsRefused); the relay hands the bridge the usage it keeps from the
// stream (Server.relay).
func (b *responsesWriter) readStream(v json.RawMessage, out map[string]json.RawMessage) *apiError {
	if isNullOr(v) {
		return nil
	}
	if json.Unmarshal(v, &b.stream) != nil {
		return badRequest("stream", "invalid_type", "Invalid type for 'stream': expected a boolean.")
	}
	if b.stream {
		out["stream"] = json.RawMessage("true")
	}
	return nil
}

// isNullOr reports whether v is JSON null or one of the literal values also.
func isNullOr(v json.RawMessage, also ...string) bool {
	// string(v) in each comparison, which copies nothing; held in a variable it was a copy of v,
	// an agent's whole input among others.
	if string(v) == "null" {
		return true
	}
	for _, a := range also {
		if string(v) == a {
			return true
		}
	}
	return false
}

// mergeLeadingSystem joins the system messages at the start (instructions, then the input's
// system and developer messages) into one: chat templates of local models (Qwen's, Mistral's)
// take one system message, first, and some refuse a second. A system message after a user or
// assistant one stays where it is, as OpenAI's chat and the chat endpoint take it: moved to the
// start it would say at the first turn what the client said at a later one, and a template that
// refuses it there refuses the same chat request (TestResponsesSystemMidInput).
func mergeLeadingSystem(msgs []chatMessage) []chatMessage {
	n := 0
	for n < len(msgs) && msgs[n].Role == "system" && len(msgs[n].Content) > 0 && msgs[n].Content[0] == '"' {
		n++
	}
	if n < 2 {
		return msgs
	}
	// A builder, not text += s: many short system messages would copy the text so far each time,
	// work quadratic in their number (TestResponsesInputLinear).
	var text strings.Builder
	for i := range n {
		var s string
		_ = json.Unmarshal(msgs[i].Content, &s)
		if i > 0 {
			text.WriteString("\n\n")
		}
		text.WriteString(s)
	}
	msgs[0].Content = quote(text.String())
	return append(msgs[:1], msgs[n:]...)
}

// textContent is a message's content for q, the client's literal of its text (valid JSON): q
// itself when jsonx.Canonical says AppendCompact writes it as json.Marshal writes the text, as a
// client's text nearly always is; else the text quoted again. Either is written to the chat body
// as the old quote(text) was.
func textContent(q []byte) json.RawMessage {
	if jsonx.Canonical(q) {
		return q
	}
	s, _ := jsonx.Unquote(q)
	return quote(s)
}

// quote is s as a JSON string, as json.Marshal writes it.
func quote(s string) json.RawMessage { return jsonx.AppendString(nil, s, true) }

// appendChatMessages appends msgs as json.Marshal wrote them (FuzzResponsesToChatMatchesOld):
// strings HTML-escaped, and a message's content, raw JSON (the client's string, or text or
// parts the bridge wrote), compacted and escaped as encoding/json writes a json.RawMessage
// (jsonx.AppendCompact). Marshalled, every content was scanned twice (its validation, then the
// compaction) byte by byte, and a function_call_output's is most of an agent's body. Each content
// is valid JSON: the client's came from a body checked whole, the others the bridge wrote.
func appendChatMessages(dst []byte, msgs []chatMessage) []byte {
	dst = append(dst, '[')
	for i := range msgs {
		m := &msgs[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonx.AppendString(append(dst, `{"role":`...), m.Role, true)
		dst = append(dst, `,"content":`...)
		if m.Content == nil {
			dst = append(dst, "null"...)
		} else {
			dst = jsonx.AppendCompact(dst, m.Content, true)
		}
		if len(m.ToolCalls) > 0 {
			dst = append(dst, `,"tool_calls":[`...)
			for j := range m.ToolCalls {
				tc := &m.ToolCalls[j]
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = jsonx.AppendString(append(dst, `{"id":`...), tc.ID, true)
				dst = jsonx.AppendString(append(dst, `,"type":`...), tc.Type, true)
				dst = jsonx.AppendString(append(dst, `,"function":{"name":`...), tc.Function.Name, true)
				if tc.args != nil {
					dst = jsonx.AppendCompact(append(dst, `,"arguments":`...), tc.args, true)
				} else {
					dst = jsonx.AppendString(append(dst, `,"arguments":`...), tc.Function.Arguments, true)
				}
				dst = append(dst, "}}"...)
			}
			dst = append(dst, ']')
		}
		if m.ToolCallID != "" {
			dst = jsonx.AppendString(append(dst, `,"tool_call_id":`...), m.ToolCallID, true)
		}
		if m.ReasoningContent != "" {
			dst = jsonx.AppendString(append(dst, `,"reasoning_content":`...), m.ReasoningContent, true)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// chatMessage is one message of the chat body the bridge builds. Content is raw: a string, an
// array of parts, or null beside tool calls.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	// ReasoningContent is an assistant message's thinking, from the reasoning items sent back
	// before it (thoughts): the field the gateway answers with, which vLLM's and Qwen3's
	// templates read back in a tool loop and the ollama adapter sends as thinking.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// item is the input item the message came from (fromInstructions, fromInput for a string
	// input), for an error that names it (clientTerms); not sent.
	item int
}

// A chat message's item when it came from no input item: instructions, or input that is a string.
const (
	fromInstructions = -1
	fromInput        = -2
)

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	item int // the function_call item it came from (clientTerms); not sent
	// args is the client's literal of Function.Arguments, which is then unset, to be written as
	// it came (inputItem.args).
	args []byte
}

// inputItem is one element of a Responses input array: a message ({role, content}, with or
// without type "message"), a function_call the model made, or a function_call_output.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"` // nil when absent or null: refused, as OpenAI's API does
	Output    json.RawMessage `json:"output"`
	Summary   json.RawMessage `json:"summary"` // a reasoning item's
	// args is the arguments' literal, instead of Arguments, when readItem read it and
	// jsonx.Canonical says it is written as it came (textContent); not decoded.
	args []byte
}

// inputPart is one part of a message's content.
type inputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
	FileID   string `json:"file_id"`
	// text is the literal of the text when readPart read the part, which then leaves Text unset
	// (textOf); refusal the literal Refusal was read from. nil when encoding/json read the part.
	text, refusal []byte
}

// textOf is the part's text.
func (p *inputPart) textOf() string {
	if p.text != nil {
		s, _ := jsonx.Unquote(p.text)
		return s
	}
	return p.Text
}

// appendInput appends the chat messages for a Responses input: a string is one user message; an
// array's items become messages in order, consecutive function calls one assistant message with
// tool_calls (the assistant text just before them included), and their outputs tool messages.
func appendInput(msgs []chatMessage, in json.RawMessage) ([]chatMessage, *apiError) {
	// in is valid JSON (membersOf decoded the body), a value without white space around it: its
	// first byte says its kind, and an array is walked for its items rather than decoded twice
	// (a validating pass, then a copy of every item) by encoding/json, which every item is
	// again below. An agent's input is most of its body, tens of KB and more.
	var text string
	if len(in) > 0 && (in[0] == '"' || in[0] == 'n') && json.Unmarshal(in, &text) == nil {
		return append(msgs, chatMessage{Role: "user", Content: in, item: fromInput}), nil // a string, or null
	}
	if len(in) == 0 || in[0] != '[' {
		return nil, badRequest("input", "invalid_type", "Invalid type for 'input': expected a string or an array of input items.")
	}
	var items []json.RawMessage
	for it := jsonx.Array(in, false); ; {
		_, v, more := it.Next()
		if !more {
			if !it.Done() {
				return nil, badRequest("input", "invalid_type", "Invalid type for 'input': expected a string or an array of input items.")
			}
			break
		}
		items = append(items, v)
	}
	// calls holds the call_ids of the function calls so far, each with its item's index until an
	// output answers it (then -1).
	calls := map[string]int{}
	th := thoughts{at: -1}
	for i, raw := range items {
		var it inputItem
		if !readItem(raw, &it) {
			at := fmt.Sprintf("input[%d]", i)
			if e := foldedAt(raw, at, isItemKey); e != nil {
				return nil, e
			}
			it = inputItem{}
			if err := json.Unmarshal(raw, &it); err != nil {
				return nil, typeErrorAt(err, at, "an input item object")
			}
		}
		switch it.Type {
		case "", "message":
			m, e := chatMessageOf(it, i)
			if e != nil {
				return nil, e
			}
			m.item = i
			msgs = append(msgs, m)
			if m.Role == "assistant" {
				th.give(msgs, len(msgs)-1)
			} else {
				// The turn the reasoning was for ended without an answer sent back: it has no
				// assistant message to go with.
				th.pending.Reset()
			}
		case "function_call":
			if it.CallID == "" {
				return nil, missingCallID(i)
			}
			// Without them the model would be shown a call of no function, or arguments that are
			// not JSON (TestResponsesItemFieldErrors).
			if it.Name == "" {
				return nil, missingItemField(i, "name")
			}
			if it.Arguments == nil && it.args == nil {
				return nil, missingItemField(i, "arguments")
			}
			if at, ok := calls[it.CallID]; ok && at >= 0 {
				// Two calls of one id while the first is unanswered: chat would get two tool calls
				// its outputs cannot be told apart by (TestResponsesDuplicateCallIDs). Once the
				// first has its output the id may come again: servers that number their calls
				// (call_0, call_1, … in each answer) give a later turn's calls the same ids, and
				// a history of them pairs each output with the call just before it
				// (TestResponsesCallIDReusedOnceAnswered).
				return nil, badRequest(fmt.Sprintf("input[%d].call_id", i), "invalid_value", fmt.Sprintf(
					"Duplicate value for 'input[%d].call_id': the function_call at input[%d] has call_id %s and no output yet; each unanswered function call needs a call_id of its own.", i, at, echo.String(it.CallID)))
			}
			calls[it.CallID] = i
			tc := chatToolCall{item: i}
			tc.ID, tc.Type = it.CallID, "function"
			tc.Function.Name, tc.args = it.Name, it.args
			if it.args == nil {
				tc.Function.Arguments = *it.Arguments
			}
			if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
				msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, tc)
			} else {
				msgs = append(msgs, chatMessage{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chatToolCall{tc}, item: i})
			}
			th.give(msgs, len(msgs)-1)
		case "function_call_output":
			if it.CallID == "" {
				return nil, missingCallID(i)
			}
			switch at, ok := calls[it.CallID]; {
			case !ok:
				// As OpenAI's API answers a request that stores nothing: the gateway remembers no
				// earlier response whose call this could answer, and a chat template given a tool
				// message without its call fails upstream, or answers a question never asked.
				return nil, badRequest(fmt.Sprintf("input[%d].call_id", i), "invalid_value", fmt.Sprintf(
					"No tool call found for function call output with call_id %s: send the function_call item before its output in 'input'.", echo.String(it.CallID)))
			case at < 0:
				// A second output for one call (none since answered has the id): chat would get
				// two tool messages for it.
				return nil, badRequest(fmt.Sprintf("input[%d].call_id", i), "invalid_value", fmt.Sprintf(
					"Duplicate function_call_output for call_id %s: each function_call takes one output.", echo.String(it.CallID)))
			}
			out, e := toolOutput(it.Output, i)
			if e != nil {
				return nil, e
			}
			calls[it.CallID] = -1
			msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: it.CallID, Content: out, item: i})
		case "reasoning":
			// A reasoning item a client sends back (the gateway's own, or OpenAI's with its
			// summary and encrypted_content) is not an item in chat: its text goes with the
			// assistant message the turn's next message or call builds, as its
			// reasoning_content; OpenAI's encrypted_content means nothing to a local model and is
			// passed over. The items around it keep their order; a call after it joins the
			// assistant message before it, as without it (TestResponsesReasoningInputSentBack,
			// TestResponsesReasoningInputRules).
			text, e := reasoningOf(it, i)
			if e != nil {
				return nil, e
			}
			th.read(text)
		default:
			return nil, badRequest(fmt.Sprintf("input[%d].type", i), "unsupported_value", fmt.Sprintf(
				"Input items of type '%s' are not supported by the gateway, which bridges Responses onto chat completions: send messages, function_call, function_call_output and reasoning items.", echo.String(it.Type)))
		}
	}
	if e := unanswered(calls); e != nil {
		return nil, e
	}
	th.flush(msgs)
	return msgs, nil
}

// thoughts gathers the text of the reasoning items sent back in input for the assistant messages
// they came before: a reasoning item's text waits in pending until the turn's next assistant item
// (a message, or a function_call, which may join the assistant message before it), and is dropped
// when a user, system or developer message (or the end of input) comes first. The texts an
// assistant message gets are joined by a blank line, in a builder until the next message takes its
// place: += would copy them again for each of a long interleaved run (TestResponsesInputLinear).
type thoughts struct {
	pending strings.Builder // read since the last assistant item
	text    strings.Builder // msgs[at]'s so far
	at      int             // the assistant message text is for; -1 before the first
}

// read takes one reasoning item's text.
func (t *thoughts) read(s string) {
	if s == "" {
		return
	}
	if t.pending.Len() > 0 {
		t.pending.WriteString("\n\n")
	}
	t.pending.WriteString(s)
}

// give hands what is pending to the assistant message msgs[k], which an item just built or joined.
func (t *thoughts) give(msgs []chatMessage, k int) {
	if k != t.at {
		t.flush(msgs)
		t.at = k
	}
	if t.pending.Len() == 0 {
		return
	}
	if t.text.Len() > 0 {
		t.text.WriteString("\n\n")
	}
	t.text.WriteString(t.pending.String())
	t.pending.Reset()
}

// flush sets the reasoning_content of the message text was gathered for.
func (t *thoughts) flush(msgs []chatMessage) {
	if t.at >= 0 && t.text.Len() > 0 {
		msgs[t.at].ReasoningContent = t.text.String()
	}
	t.text.Reset()
}

// reasoningOf is the text of a reasoning item sent back in input: its content's reasoning_text
// parts (the model's own reasoning, which the gateway answers with), joined as they came; "" when
// it has none. Its summary (OpenAI's account of its model's reasoning, whose reasoning itself is
// only in encrypted_content) is checked and not sent on: it is not the model's own reasoning for
// a template to render back, and the chat upstream of a client that moved from OpenAI's API, a
// public one perhaps, need not take a reasoning_content it never asked for
// (TestResponsesReasoningInputRules). Either field that is not an array of parts of its type is
// refused naming it, as OpenAI's API refuses it.
func reasoningOf(it inputItem, i int) (string, *apiError) {
	content, e := reasoningParts(it.Content, i, "content", "reasoning_text", "")
	if e != nil {
		return "", e
	}
	if _, e := reasoningParts(it.Summary, i, "summary", "summary_text", "\n\n"); e != nil {
		return "", e
	}
	return content, nil
}

// reasoningParts is the text of v, an array of parts of type kind at input[i].field, joined by
// sep.
func reasoningParts(v json.RawMessage, i int, field, kind, sep string) (string, *apiError) {
	if len(v) == 0 || isNullOr(v) {
		return "", nil
	}
	at := fmt.Sprintf("input[%d].%s", i, field)
	if v[0] != '[' {
		return "", badRequest(at, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected an array of %s parts.", at, kind))
	}
	parts, e := partsOf(v, i, field)
	if e != nil {
		return "", e
	}
	var s strings.Builder
	for j, p := range parts {
		if p.Type != kind {
			return "", badRequest(fmt.Sprintf("%s[%d].type", at, j), "invalid_value",
				fmt.Sprintf("Invalid value for '%s[%d].type': '%s' (expected \"%s\").", at, j, echo.String(p.Type), kind))
		}
		text := p.textOf()
		if text == "" {
			continue
		}
		if s.Len() > 0 {
			s.WriteString(sep)
		}
		s.WriteString(text)
	}
	return s.String(), nil
}

// unanswered refuses input with a function call that no output answers, naming the first, as
// OpenAI's API refuses it: chat would get assistant tool_calls no tool message answers, which its
// API refuses and a local model reads as a tool that returned nothing
// (TestResponsesCallWithoutOutput).
func unanswered(calls map[string]int) *apiError {
	first, id := -1, ""
	for c, i := range calls {
		if i >= 0 && (first < 0 || i < first) {
			first, id = i, c
		}
	}
	if first < 0 {
		return nil
	}
	return badRequest(fmt.Sprintf("input[%d].call_id", first), "invalid_value", fmt.Sprintf(
		"No tool output found for function call %s: send its function_call_output after it in 'input'.", echo.String(id)))
}

// foldedAt refuses a member of the object obj, at at ("" for the body), whose name is not a field
// isKey names but differs from one only by case, as the chat endpoint refuses one (foldedMember):
// the bridge reads items, parts and tools with encoding/json, which matches names
// case-insensitively, a later "Content" replacing "content", and a case variant of a
// Responses-only field ("Instructions") would go on to the upstream unread
// (TestResponsesFoldedSpellingRefused). obj that is not an object has nothing to refuse.
func foldedAt(obj []byte, at string, isKey func(string) bool) *apiError {
	if len(obj) == 0 || obj[0] != '{' {
		return nil
	}
	n, k, folded := foldedMember(obj, isKey)
	if !folded {
		return nil
	}
	if at != "" {
		n = at + "." + n
	}
	return unknownParam(n, k)
}

// foldedIn is foldedAt for each object of the array arr, at at[j].
func foldedIn(arr []byte, at string, isKey func(string) bool) *apiError {
	if len(arr) == 0 || arr[0] != '[' {
		return nil
	}
	elems := jsonx.Array(arr, false)
	for j := 0; ; j++ {
		_, el, ok := elems.Next()
		if !ok {
			return nil
		}
		if e := foldedAt(el, fmt.Sprintf("%s[%d]", at, j), isKey); e != nil {
			return e
		}
	}
}

// isResponsesKey reports a body member the bridge reads itself; model's case variants are the
// chat decoder's, which reads and strips them, and the members the bridge passes on (temperature,
// top_p, …) are checked there.
func isResponsesKey(name string) bool {
	_, refused := responsesRefused[name]
	return name != "model" && (refused || responsesDropped[name] || name == "messages")
}

// isItemKey reports an input item's member the bridge reads (inputItem).
func isItemKey(name string) bool {
	switch name {
	case "type", "role", "content", "call_id", "name", "arguments", "output", "summary":
		return true
	}
	return false
}

// isInputPartKey reports a content part's member the bridge reads (inputPart).
func isInputPartKey(name string) bool {
	switch name {
	case "type", "text", "refusal", "image_url", "detail", "file_id":
		return true
	}
	return false
}

// isToolKey reports a function tool's member the bridge reads (chatTools).
func isToolKey(name string) bool {
	switch name {
	case "type", "name", "description", "parameters", "strict":
		return true
	}
	return false
}

// isToolChoiceKey reports a tool_choice's member, or one of its allowed tools', the bridge reads.
func isToolChoiceKey(name string) bool {
	return name == "type" || name == "name" || name == "mode" || name == "tools"
}

// isFormatKey reports a text.format member the bridge reads (chatResponseFormat).
func isFormatKey(name string) bool {
	switch name {
	case "type", "name", "schema", "strict", "description":
		return true
	}
	return false
}

// missingItemField refuses an input item without a field it needs.
func missingItemField(i int, field string) *apiError {
	return badRequest(fmt.Sprintf("input[%d].%s", i, field), "missing_required_parameter",
		fmt.Sprintf("Missing required parameter: 'input[%d].%s'.", i, field))
}

// typeErrorAt is the 400 for an input item, or a part at, that did not decode: it names the
// field whose JSON type is wrong (a function_call's object arguments, chat's {"url": …} as an
// input_image's image_url) where it can, rather than the whole item (TestResponsesItemFieldErrors);
// want says what at should have been otherwise.
func typeErrorAt(err error, at, want string) *apiError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		expected := "a " + te.Type.String()
		if te.Type.Kind() == reflect.String || te.Type.Kind() == reflect.Pointer && te.Type.Elem().Kind() == reflect.String {
			expected = "a string"
		}
		return badRequest(at+"."+te.Field, "invalid_type", fmt.Sprintf("Invalid type for '%s.%s': expected %s.", at, te.Field, expected))
	}
	return badRequest(at, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected %s.", at, want))
}

// partsOf decodes a content array, input[i].field, part by part, so that a part's field of the
// wrong type is named with its index; v that is not an array is refused naming it. A part is
// read by walking it (readPart) and, when it has a shape the walk leaves to encoding/json, as
// before: its case-folded keys refused (foldedAt), then decoded by json.Unmarshal.
func partsOf(v json.RawMessage, i int, field string) ([]inputPart, *apiError) {
	if isNullOr(v) {
		return nil, nil // as json.Unmarshal takes null for a slice
	}
	if len(v) == 0 || v[0] != '[' {
		at := fmt.Sprintf("input[%d].%s", i, field)
		return nil, badRequest(at, "invalid_type",
			fmt.Sprintf("Invalid type for '%s': expected a string or an array of content parts.", at))
	}
	var parts []inputPart
	walk := jsonx.Array(v, false)
	for j := 0; ; j++ {
		_, raw, more := walk.Next()
		if !more {
			return parts, nil
		}
		parts = append(parts, inputPart{})
		if readPart(raw, &parts[j]) {
			continue
		}
		at := fmt.Sprintf("input[%d].%s[%d]", i, field, j)
		parts[j] = inputPart{}
		if e := foldedAt(raw, at, isInputPartKey); e != nil {
			return nil, e
		}
		if err := json.Unmarshal(raw, &parts[j]); err != nil {
			return nil, typeErrorAt(err, at, "a content part object")
		}
	}
}

// readItem reads raw, one input item of a body that is valid JSON, into it as json.Unmarshal
// does, by walking it; false leaves the item to encoding/json and foldedAt, as one that is not
// an object, has a key that is escaped or not all lower-case ASCII (which encoding/json may take
// for a field by folding its case, and foldedAt refuses), or a field of the wrong type (whose
// refusal names it, typeErrorAt). A member twice is read as encoding/json reads it: the last
// value, null leaving a string as it was and making arguments nil.
func readItem(raw []byte, it *inputItem) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	return jsonx.Members(raw, false, func(name, v []byte) bool {
		if mayFold(name) {
			return false
		}
		switch string(name) {
		case "type":
			return readName(v, &it.Type)
		case "role":
			return readName(v, &it.Role)
		case "call_id":
			return readString(v, &it.CallID)
		case "name":
			return readString(v, &it.Name)
		case "arguments":
			it.Arguments, it.args = nil, nil
			switch {
			case v[0] == 'n':
			case jsonx.Canonical(v):
				it.args = v
			default:
				var s string
				ok := v[0] == '"' && readString(v, &s)
				it.Arguments = &s
				return ok
			}
		case "content":
			it.Content = v
		case "output":
			it.Output = v
		case "summary":
			it.Summary = v
		}
		return true
	})
}

// readPart is readItem for one content part (inputPart).
func readPart(raw []byte, p *inputPart) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	return jsonx.Members(raw, false, func(name, v []byte) bool {
		if mayFold(name) {
			return false
		}
		var s *string
		switch string(name) {
		case "type":
			return readName(v, &p.Type)
		case "text":
			if v[0] == '"' {
				p.text = v // decoded when it is needed (textOf): a message's one text seldom is
				return true
			}
			s = &p.Text
		case "refusal":
			s = &p.Refusal
			if v[0] == '"' {
				p.refusal = v
			}
		case "image_url":
			s = &p.ImageURL
		case "detail":
			s = &p.Detail
		case "file_id":
			s = &p.FileID
		default:
			return true
		}
		return readString(v, s)
	})
}

// readName is readString for a type or a role: one of those the bridge knows is its constant
// rather than a copy out of the body, which every item and part would allocate.
func readName(v []byte, s *string) bool {
	switch string(v) {
	case `"message"`:
		*s = "message"
	case `"function_call"`:
		*s = "function_call"
	case `"function_call_output"`:
		*s = "function_call_output"
	case `"reasoning"`:
		*s = "reasoning"
	case `"user"`:
		*s = "user"
	case `"assistant"`:
		*s = "assistant"
	case `"system"`:
		*s = "system"
	case `"developer"`:
		*s = "developer"
	case `"input_text"`:
		*s = "input_text"
	case `"output_text"`:
		*s = "output_text"
	case `"function"`:
		*s = "function"
	default:
		return readString(v, s)
	}
	return true
}

// readString reads v, a JSON value, into s as json.Unmarshal reads it into a string: a string is
// decoded, null leaves s as it was; false for another kind.
func readString(v []byte, s *string) bool {
	switch v[0] {
	case 'n':
		return true
	case '"':
		u, ok := jsonx.Unquote(v)
		*s = u
		return ok
	}
	return false
}

// missingCallID refuses a function call or output without its call_id: the model's call id (call_…),
// which is not the item's own id (fc_…).
func missingCallID(i int) *apiError {
	return badRequest(fmt.Sprintf("input[%d].call_id", i), "missing_required_parameter",
		fmt.Sprintf("Missing required parameter: 'input[%d].call_id' (the call's call_id, not the item's id).", i))
}

// chatMessageOf is the chat message for a Responses message item. The developer role is a system
// message: the local models' chat templates know system.
func chatMessageOf(it inputItem, i int) (chatMessage, *apiError) {
	role := it.Role
	switch role {
	case "user", "assistant", "system":
	case "developer":
		role = "system"
	case "":
		return chatMessage{}, badRequest(fmt.Sprintf("input[%d].role", i), "missing_required_parameter",
			fmt.Sprintf("Missing required parameter: 'input[%d].role'.", i))
	default:
		return chatMessage{}, badRequest(fmt.Sprintf("input[%d].role", i), "invalid_value",
			fmt.Sprintf("Invalid value for 'input[%d].role': '%s'.", i, echo.String(role)))
	}
	if len(it.Content) == 0 || isNullOr(it.Content) {
		// No content, or null: an empty text, never chat's null, which its API refuses for a
		// user message and a chat template renders as "None" (TestResponsesMessageWithoutContent).
		return chatMessage{Role: role, Content: json.RawMessage(`""`)}, nil
	}
	if it.Content[0] == '"' {
		return chatMessage{Role: role, Content: it.Content}, nil
	}
	parts, e := partsOf(it.Content, i, "content")
	if e != nil {
		return chatMessage{}, e
	}
	if len(parts) == 1 {
		// One text: the client's literal where it is written as the old quote(text) wrote it
		// (textContent), not decoded.
		var lit []byte
		switch p := &parts[0]; p.Type {
		case "input_text", "output_text", "text":
			lit = p.text
		case "refusal":
			lit = p.refusal
		}
		if lit != nil && jsonx.Canonical(lit) {
			return chatMessage{Role: role, Content: lit}, nil
		}
	}
	type chatPart struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL *struct {
			URL    string `json:"url"`
			Detail string `json:"detail,omitempty"`
		} `json:"image_url,omitempty"`
	}
	var out []chatPart
	var joined strings.Builder // not +=, which is quadratic in the parts (TestResponsesInputLinear)
	images := false
	for j, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			text := p.textOf()
			out = append(out, chatPart{Type: "text", Text: text})
			joined.WriteString(text)
		case "refusal":
			out = append(out, chatPart{Type: "text", Text: p.Refusal})
			joined.WriteString(p.Refusal)
		case "input_image":
			if p.ImageURL == "" {
				return chatMessage{}, badRequest(fmt.Sprintf("input[%d].content[%d].image_url", i, j), "unsupported_value",
					"The gateway stores no files: send an input_image with an image_url (an https or data: URL), not a file_id.")
			}
			cp := chatPart{Type: "image_url"}
			cp.ImageURL = &struct {
				URL    string `json:"url"`
				Detail string `json:"detail,omitempty"`
			}{URL: p.ImageURL, Detail: p.Detail}
			out = append(out, cp)
			images = true
		default:
			return chatMessage{}, badRequest(fmt.Sprintf("input[%d].content[%d].type", i, j), "unsupported_value",
				fmt.Sprintf("Content parts of type '%s' are not supported by the gateway: send input_text and input_image parts.", echo.String(p.Type)))
		}
	}
	if !images && (role != "user" || len(out) <= 1) {
		// One text, or an assistant's or system message's texts: a string, which every chat
		// template takes.
		return chatMessage{Role: role, Content: quote(joined.String())}, nil
	}
	raw, _ := json.Marshal(out)
	return chatMessage{Role: role, Content: raw}, nil
}

// toolOutput is a function_call_output's output as a tool message's content: a string, or the
// texts of its parts. An image or a file part is refused: chat's tool message takes text only, and
// dropped, the model would answer as if the tool had returned no image. Moving it into a user
// message after the outputs (as some gateways do) would have the user say what the tool returned,
// and with parallel calls leave the model to guess which call an image came from; a client that
// wants that can send the user message itself.
func toolOutput(v json.RawMessage, i int) (json.RawMessage, *apiError) {
	if len(v) == 0 || isNullOr(v) {
		return json.RawMessage(`""`), nil
	}
	if v[0] == '"' {
		return v, nil
	}
	parts, e := partsOf(v, i, "output")
	if e != nil {
		return nil, e
	}
	var s strings.Builder // not +=, which is quadratic in the parts (TestResponsesInputLinear)
	for j, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			s.WriteString(p.textOf())
		case "input_image":
			return nil, badRequest(fmt.Sprintf("input[%d].output[%d]", i, j), "unsupported_value",
				"An input_image in a function_call_output is not supported by the gateway, which bridges Responses onto chat completions, whose tool messages take text only: send the tool's text as the output, and the image as an input_image in a user message after it.")
		case "input_file":
			return nil, badRequest(fmt.Sprintf("input[%d].output[%d]", i, j), "unsupported_value",
				"An input_file in a function_call_output is not supported by the gateway, which bridges Responses onto chat completions, whose tool messages take text only: send the file's text as the output.")
		default:
			return nil, badRequest(fmt.Sprintf("input[%d].output[%d].type", i, j), "unsupported_value",
				fmt.Sprintf("Output parts of type '%s' are not supported: send input_text parts.", echo.String(p.Type)))
		}
	}
	return quote(s.String()), nil
}

// chatTools turns Responses function tools ({type, name, description, parameters, strict}) into
// chat's ({type, function: {…}}). Other tool types (web search, file search, …) run on OpenAI's
// side, which no local model server has.
func chatTools(v json.RawMessage) (json.RawMessage, *apiError) {
	if defs, ok := readTools(v); ok {
		return appendTools(make([]byte, 0, len(v)+16*len(defs)), defs)
	}
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description *string         `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	}
	if json.Unmarshal(v, &tools) != nil {
		return nil, badRequest("tools", "invalid_type", "Invalid type for 'tools': expected an array of tools.")
	}
	if e := foldedIn(v, "tools", isToolKey); e != nil {
		return nil, e
	}
	type function struct {
		Name        string          `json:"name"`
		Description *string         `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	out := make([]tool, 0, len(tools))
	for i, t := range tools {
		if t.Type != "function" {
			return nil, badRequest(fmt.Sprintf("tools[%d].type", i), "unsupported_value", fmt.Sprintf(
				"Tools of type '%s' are not supported by the gateway, whose models run only function tools.", echo.String(t.Type)))
		}
		if t.Name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d].name", i), "missing_required_parameter",
				fmt.Sprintf("Missing required parameter: 'tools[%d].name'.", i))
		}
		if isNullOr(t.Parameters) {
			t.Parameters = nil
		}
		out = append(out, tool{Type: "function", Function: function{Name: t.Name, Description: t.Description,
			Parameters: t.Parameters, Strict: t.Strict}})
	}
	raw, _ := json.Marshal(out)
	return raw, nil
}

// toolDef is one function tool of a Responses body as chatTools reads it.
type toolDef struct {
	typ, name   string
	description *string
	parameters  []byte // nil when absent or null
	strict      *bool
}

// readTools reads v, the body's tools, by walking it, as chatTools' json.Unmarshal reads them;
// false leaves them to it, as readItem leaves an item: a tools that is not an array, a tool
// that is not an object, a key escaped or not all lower-case ASCII, a field of the wrong type.
func readTools(v []byte) ([]toolDef, bool) {
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	var defs []toolDef
	tools := jsonx.Array(v, false)
	for {
		_, raw, more := tools.Next()
		if !more {
			return defs, tools.Done()
		}
		if raw[0] != '{' {
			return nil, false
		}
		var d toolDef
		walk := jsonx.Object(raw, false)
		for {
			q, f, more := walk.Next()
			if !more {
				if !walk.Done() {
					return nil, false
				}
				break
			}
			name, plain := jsonx.PlainKey(q)
			if !plain || mayFold(name) {
				return nil, false
			}
			ok := true
			switch string(name) {
			case "type":
				ok = readName(f, &d.typ)
			case "name":
				ok = readString(f, &d.name)
			case "description":
				if f[0] == 'n' {
					d.description = nil
					continue
				}
				var s string
				ok = f[0] == '"' && readString(f, &s)
				d.description = &s
			case "parameters":
				d.parameters = f
				if isNullOr(f) {
					d.parameters = nil
				}
			case "strict":
				switch f[0] {
				case 'n':
					d.strict = nil
				case 't', 'f':
					b := f[0] == 't'
					d.strict = &b
				default:
					ok = false
				}
			}
			if !ok {
				return nil, false
			}
		}
		defs = append(defs, d)
	}
}

// appendTools appends chat's tools for defs as chatTools' json.Marshal wrote them, refusing a
// tool as it refuses one.
func appendTools(dst []byte, defs []toolDef) (json.RawMessage, *apiError) {
	dst = append(dst, '[')
	for i := range defs {
		d := &defs[i]
		if d.typ != "function" {
			return nil, badRequest(fmt.Sprintf("tools[%d].type", i), "unsupported_value", fmt.Sprintf(
				"Tools of type '%s' are not supported by the gateway, whose models run only function tools.", echo.String(d.typ)))
		}
		if d.name == "" {
			return nil, badRequest(fmt.Sprintf("tools[%d].name", i), "missing_required_parameter",
				fmt.Sprintf("Missing required parameter: 'tools[%d].name'.", i))
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonx.AppendString(append(dst, `{"type":"function","function":{"name":`...), d.name, true)
		if d.description != nil {
			dst = jsonx.AppendString(append(dst, `,"description":`...), *d.description, true)
		}
		if d.parameters != nil {
			dst = jsonx.AppendCompact(append(dst, `,"parameters":`...), d.parameters, true)
		}
		if d.strict != nil {
			dst = strconv.AppendBool(append(dst, `,"strict":`...), *d.strict)
		}
		dst = append(dst, "}}"...)
	}
	return append(dst, ']'), nil
}

// chatToolChoice turns a Responses tool_choice into chat's: the modes are the same strings, and
// {type: "function", name} and {type: "allowed_tools", mode, tools: [{type: "function", name}]}
// name their functions one level deeper in chat (allowed_tools' mode and tools under
// "allowed_tools", each name under "function").
func chatToolChoice(v json.RawMessage) (json.RawMessage, *apiError) {
	if v[0] == '"' {
		return v, nil
	}
	var c struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Mode  string `json:"mode"`
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	ok := json.Unmarshal(v, &c) == nil
	if e := foldedAt(v, "tool_choice", isToolChoiceKey); e != nil {
		return nil, e
	}
	var nested struct {
		Tools json.RawMessage `json:"tools"`
	}
	if ok && json.Unmarshal(v, &nested) == nil {
		if e := foldedIn(nested.Tools, "tool_choice.tools", isToolChoiceKey); e != nil {
			return nil, e
		}
	}
	if ok && c.Type == "allowed_tools" {
		return chatAllowedTools(c.Mode, c.Tools)
	}
	if !ok || c.Type != "function" || c.Name == "" {
		return nil, badRequest("tool_choice", "unsupported_value",
			"The gateway supports tool_choice \"none\", \"auto\", \"required\", {\"type\": \"function\", \"name\": …} and {\"type\": \"allowed_tools\", \"mode\": …, \"tools\": […]} of function tools.")
	}
	raw, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Name}})
	return raw, nil
}

// undeclaredChoice refuses a Responses tool_choice (one chatToolChoice took) that names a
// function tools does not declare, named or listed by allowed_tools, as OpenAI's Responses API
// refuses it: 400 naming tool_choice, "Tool choice 'g' not found in 'tools' parameter."
// (TestToolChoiceNamesUndeclaredTool). Sent on, an openai target got it to judge its own way and
// the ollama adapter refused it in its words. tools are the request's, function tools only
// (chatTools refuses the others); absent or null, none is declared.
func undeclaredChoice(choice, tools json.RawMessage) *apiError {
	var c struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if json.Unmarshal(choice, &c) != nil {
		return nil
	}
	var defs []struct {
		Name string `json:"name"`
	}
	if len(tools) > 0 && !isNullOr(tools) && json.Unmarshal(tools, &defs) != nil {
		return nil // chatTools said so first
	}
	declared := make(map[string]bool, len(defs))
	for _, d := range defs {
		declared[d.Name] = true
	}
	notFound := func(name string) *apiError {
		return badRequest("tool_choice", "invalid_value",
			fmt.Sprintf("Tool choice '%s' not found in 'tools' parameter.", echo.String(name)))
	}
	switch c.Type {
	case "function":
		if !declared[c.Name] {
			return notFound(c.Name)
		}
	case "allowed_tools":
		for _, t := range c.Tools {
			if !declared[t.Name] {
				return notFound(t.Name)
			}
		}
	}
	return nil
}

// chatAllowedTools is chat's allowed_tools tool_choice for a Responses one's mode and tools.
func chatAllowedTools(mode string, tools []struct {
	Type string `json:"type"`
	Name string `json:"name"`
}) (json.RawMessage, *apiError) {
	if mode != "auto" && mode != "required" {
		return nil, badRequest("tool_choice.mode", "invalid_value",
			fmt.Sprintf("Invalid value for 'tool_choice.mode': '%s' (expected \"auto\" or \"required\").", echo.String(mode)))
	}
	// One that lists no tool (an empty list, or none) goes on listing none, which offers none as
	// chat reads it (core.Params.OffersTools): a target without tools serves it, sent no tools,
	// and Ollama, which has no tool_choice, is sent none (TestResponsesAllowedToolsEmpty).
	type named struct {
		Type     string            `json:"type"`
		Function map[string]string `json:"function"`
	}
	out := make([]named, 0, len(tools))
	for i, t := range tools {
		if t.Type != "function" || t.Name == "" {
			return nil, badRequest(fmt.Sprintf("tool_choice.tools[%d]", i), "unsupported_value",
				"The gateway's allowed_tools lists function tools by name: {\"type\": \"function\", \"name\": …}.")
		}
		out = append(out, named{Type: "function", Function: map[string]string{"name": t.Name}})
	}
	raw, _ := json.Marshal(map[string]any{"type": "allowed_tools", "allowed_tools": map[string]any{"mode": mode, "tools": out}})
	return raw, nil
}

// chatReasoningEffort is chat's reasoning_effort for a Responses reasoning object: its effort, as
// it is (an openai target reads it, the ollama adapter maps it to think and refuses a value that
// is no level); nil when it has none. Its summary has no chat counterpart: a local model's
// reasoning is answered whole (TestResponsesReasoningEffort).
func chatReasoningEffort(v json.RawMessage) (json.RawMessage, *apiError) {
	var r struct {
		Effort json.RawMessage `json:"effort"`
	}
	if v[0] != '{' || json.Unmarshal(v, &r) != nil {
		return nil, badRequest("reasoning", "invalid_type", "Invalid type for 'reasoning': expected an object.")
	}
	if e := foldedAt(v, "reasoning", func(k string) bool { return k == "effort" }); e != nil {
		return nil, e
	}
	if len(r.Effort) == 0 || isNullOr(r.Effort) {
		return nil, nil
	}
	if r.Effort[0] != '"' {
		return nil, badRequest("reasoning.effort", "invalid_type", "Invalid type for 'reasoning.effort': expected a string.")
	}
	return r.Effort, nil
}

// chatResponseFormat is chat's response_format for a Responses text.format; nil for plain text.
func chatResponseFormat(v json.RawMessage) (json.RawMessage, *apiError) {
	var t struct {
		Format *struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
			Description *string         `json:"description"`
		} `json:"format"`
	}
	if json.Unmarshal(v, &t) != nil {
		return nil, badRequest("text", "invalid_type", "Invalid type for 'text': expected an object.")
	}
	if e := foldedAt(v, "text", func(k string) bool { return k == "format" }); e != nil {
		return nil, e
	}
	if t.Format == nil {
		return nil, nil
	}
	var raw struct {
		Format json.RawMessage `json:"format"`
	}
	_ = json.Unmarshal(v, &raw)
	if e := foldedAt(raw.Format, "text.format", isFormatKey); e != nil {
		return nil, e
	}
	switch t.Format.Type {
	case "text", "":
		return nil, nil
	case "json_object":
		return json.RawMessage(`{"type":"json_object"}`), nil
	case "json_schema":
		js := map[string]any{"name": t.Format.Name}
		if len(t.Format.Schema) > 0 {
			js["schema"] = t.Format.Schema
		}
		if t.Format.Strict != nil {
			js["strict"] = *t.Format.Strict
		}
		if t.Format.Description != nil {
			js["description"] = *t.Format.Description
		}
		raw, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": js})
		return raw, nil
	}
	return nil, badRequest("text.format.type", "unsupported_value",
		fmt.Sprintf("Invalid value for 'text.format.type': '%s'.", echo.String(t.Format.Type)))
}
