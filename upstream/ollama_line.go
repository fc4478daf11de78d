package upstream

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/hayula/gateway/internal/jsonx"
)

// decodeOllamaLine reads one /api/chat stream line into m as json.Unmarshal reads it into an
// ollamaChatResponse, error included (m is zeroed first). A line of the usual kind (a token's
// content or thinking, the done line's reason and counts) is read by walking it
// (readOllamaLine), which costs the strings the stream uses and nothing else; any other (tool
// calls, logprobs, an error, a null, a key only encoding/json's case folding would match) goes
// to json.Unmarshal. The message's role is checked for a string and not kept (the stream does
// not read it); head says whether model and created_at are wanted: only the first line's are
// read. literal lets the message's content stay the literal it came as (its contentJSON, Content
// empty) when that is what appendJSONString writes for its text (plainToken), for the caller to
// copy into its chunk or completion rather than unquote it and escape it again. shape is a
// stream's (nil for a whole answer): the literals every token's line repeats are remembered in
// it, so that the next line's need not be scanned (tokenShape). A whole answer's model,
// created_at and done_reason, used only while the answer is built, are views of line when
// written plainly (viewString); a stream's model and created_at, which its chunks keep, copies.
func decodeOllamaLine(line []byte, head, literal bool, shape *tokenShape, m *ollamaChatResponse) error {
	*m = ollamaChatResponse{}
	if readTokenLine(line, head, literal, shape, m) {
		return nil
	}
	if readOllamaLine(line, head, literal, shape == nil, m) {
		return nil
	}
	// Into a local, so that m, which a whole answer keeps on its stack, does not escape.
	var v ollamaChatResponse
	err := json.Unmarshal(line, &v)
	*m = v
	return err
}

// tokenShape is what a stream's token lines repeat, as the last one wrote it: the model's and
// the role's literals. A line that opens the same way holds the same literals (a string literal
// ends at the first quote no backslash escapes, the same bytes the same place), so readTokenLine
// compares the bytes where it would otherwise scan them.
type tokenShape struct {
	model, role []byte
}

// readTokenLine fills m from line when line is a token's line exactly as Ollama writes it, its
// members in its struct's order and nothing between them:
//
//	{"model":"…","created_at":"…","message":{"role":"…","content":"…"},"done":false}
//
// (whitespace after it allowed). Nearly every line of a stream is one, and this reads it at
// about the cost of finding its strings; anything else (thinking, tool calls, another order,
// spaces, the done line) is readOllamaLine's. m is filled only when the whole line is read;
// literal and shape as decodeOllamaLine's.
func readTokenLine(line []byte, head, literal bool, shape *tokenShape, m *ollamaChatResponse) bool {
	b := line
	take := func(lit string) bool {
		if len(b) < len(lit) || string(b[:len(lit)]) != lit {
			return false
		}
		b = b[len(lit):]
		return true
	}
	str := func(seen []byte) []byte {
		end := len(seen)
		if end == 0 || len(b) < end || string(b[:end]) != string(seen) {
			var ok bool
			if end, ok = jsonx.StringAt(b, 0); !ok {
				return nil
			}
		}
		s := b[:end]
		b = b[end:]
		return s
	}
	var seen tokenShape
	if shape != nil {
		seen = *shape
	}
	var model, created, role, content []byte
	if !take(`{"model":`) {
		return false
	}
	if model = str(seen.model); model == nil || !take(`,"created_at":`) {
		return false
	}
	if created = str(nil); created == nil || !take(`,"message":{"role":`) {
		return false
	}
	if role = str(seen.role); role == nil || !take(`,"content":`) {
		return false
	}
	if content = str(nil); content == nil || !take(`},"done":false}`) {
		return false
	}
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	text, lit, ok := tokenText(content, literal)
	if !ok {
		return false
	}
	if head && (!readText(model, true, shape == nil, &m.Model) || !readText(created, true, shape == nil, &m.CreatedAt)) {
		return false
	}
	if shape != nil {
		if string(model) != string(shape.model) {
			shape.model = append(shape.model[:0], model...)
		}
		if string(role) != string(shape.role) {
			shape.role = append(shape.role[:0], role...)
		}
	}
	m.Message.Content, m.Message.contentJSON, m.Done = text, lit, false
	return true
}

// plainToken reports whether q, a string literal whose escapes are checked, is what
// appendJSONString writes for its text, so that a stream can copy it into its chunk (jsonx.Exact)
// and need not be "" (which a chunk tests for). A token as Ollama or SAIF writes it nearly always
// is, newlines and quotes escaped as that writer escapes them; one with Go's HTML escapes
// (\u003c for <, from Ollama's encoder) or another escape is unquoted as before.
func plainToken(q []byte) bool {
	return len(q) > 2 && jsonx.Exact(q)
}

// tokenText reads q, a string literal whose escapes are checked, as a text that may stay its
// literal: lit is q when literal is set and plainToken takes it (text then ""), else text is q
// unquoted; ok is false where json.Unmarshal would not read q as a string.
func tokenText(q []byte, literal bool) (text string, lit []byte, ok bool) {
	if literal && plainToken(q) {
		return "", q, true
	}
	text, ok = jsonx.Unquote(q)
	return text, nil, ok
}

// readOllamaLine fills m from line when line is a well-formed object whose every member it reads
// as json.Unmarshal would; false sends the line to json.Unmarshal, whatever m holds by then.
// literal as decodeOllamaLine's.
func readOllamaLine(line []byte, head, literal, view bool, m *ollamaChatResponse) bool {
	return jsonx.Members(line, true, func(name, v []byte) bool {
		ok := true
		switch string(name) {
		case "model":
			ok = readText(v, head, view, &m.Model)
		case "created_at":
			ok = readText(v, head, view, &m.CreatedAt)
		case "done_reason":
			ok = readText(v, true, view, &m.DoneReason)
		case "done":
			switch string(v) {
			case "true":
				m.Done = true
			case "false":
				m.Done = false
			default:
				ok = false
			}
		case "prompt_eval_count":
			ok = readCount(v, &m.PromptEvalCount)
		case "eval_count":
			ok = readCount(v, &m.EvalCount)
		case "message":
			ok = readOllamaMessage(v, literal, &m.Message)
		case "total_duration", "load_duration", "prompt_eval_duration", "eval_duration":
			// Ollama's timings, on every last line: not read, and no name read folds to them,
			// which the default's nine case-insensitive compares would find at some length.
		default:
			ok = !jsonx.Folds(name, "model", "created_at", "message", "done", "done_reason", "prompt_eval_count",
				"eval_count", "error", "logprobs")
		}
		return ok
	})
}

// readOllamaMessage reads a line's message of text: role, content and thinking; the content as
// its literal (contentJSON) when literal is set and plainToken takes it. The last content read
// wins, as json.Unmarshal's does, whichever way it was kept.
func readOllamaMessage(v []byte, literal bool, m *ollamaMessage) bool {
	if len(v) == 0 || v[0] != '{' {
		return false // null leaves the message as it was; anything else is json.Unmarshal's error
	}
	return jsonx.Members(v, false, func(name, v []byte) bool { // validated with the line
		ok := true
		switch string(name) {
		case "role":
			ok = readString(v, false, &m.Role) // not read by the stream
		case "content":
			var text string
			var lit []byte
			if text, lit, ok = tokenText(v, literal); ok {
				m.Content, m.contentJSON = text, lit // the last content read wins, either way
			}
		case "thinking":
			ok = readString(v, true, &m.Thinking)
		default:
			ok = !jsonx.Folds(name, "role", "content", "thinking", "images", "tool_calls", "tool_name", "tool_call_id")
		}
		return ok
	})
}

// readString reads a JSON string into *dst when want is set; false for any other kind (null
// included, which json.Unmarshal skips rather than clearing *dst).
func readString(v []byte, want bool, dst *string) bool {
	if len(v) == 0 || v[0] != '"' {
		return false
	}
	if !want {
		return true
	}
	s, ok := jsonx.Unquote(v)
	if ok {
		*dst = s
	}
	return ok
}

// viewString is readString for a string that is used only while v's bytes are: one of ASCII
// without an escape, as an answer's id or a specialist's name nearly always is, is a view of
// them (no copy, no allocation); any other is unquoted as readString does.
func viewString(v []byte, dst *string) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	if name, plain := jsonx.PlainKey(v); plain {
		*dst = view(name)
		return true
	}
	return readString(v, true, dst)
}

// readText is readString, or viewString for a string wanted as a view.
func readText(v []byte, want, view bool, dst *string) bool {
	if want && view {
		return viewString(v, dst)
	}
	return readString(v, want, dst)
}

// readCount reads a whole number into a new *int, as json.Unmarshal does; false for null, a
// fraction, an exponent or a number past int64.
func readCount(v []byte, dst **int) bool {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) || bytes.ContainsAny(v, ".eE") {
		return false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return false
	}
	c := int(n)
	*dst = &c
	return true
}
