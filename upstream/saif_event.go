package upstream

import (
	"encoding/json"
	"strconv"

	"github.com/hayula/gateway/internal/jsonx"
)

// decodeSAIFEvent reads one SAIF event's data as json.Unmarshal reads it into a saifEvent, error
// included. An event of the usual kind (text, its specialist, the done event's reason and usage)
// is read by walking it, which costs the strings the stream uses and nothing else; any other goes
// to json.Unmarshal (see decodeOllamaLine). specialist says whether the specialist is wanted: it
// is read until an event has named one; literal as decodeOllamaLine's, for the text (textJSON).
func decodeSAIFEvent(data []byte, specialist, literal bool) (saifEvent, error) {
	var e saifEvent
	if readTextEvent(data, specialist, literal, &e) || readSAIFEvent(data, specialist, &e) {
		return e, nil
	}
	var v saifEvent
	err := json.Unmarshal(data, &v)
	return v, err
}

// readTextEvent fills e from data when data is a text event as CONFIG.md writes it, its two
// members in that order, with or without whitespace between its tokens (Python's json.dumps
// writes ", " and ": "):
//
//	{"text": "…", "specialist": "…"}
//
// Nearly every event of a stream is one, and this reads it at about the cost of finding its
// strings, where the walk cost some 1,700 instructions an event; anything else (the done event,
// another order, another member) is readSAIFEvent's. e is filled only when the whole event is read.
func readTextEvent(data []byte, specialist, literal bool, e *saifEvent) bool {
	b := data
	ws := func() {
		for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
			b = b[1:]
		}
	}
	take := func(lit string) bool {
		ws()
		if len(b) < len(lit) || string(b[:len(lit)]) != lit {
			return false
		}
		b = b[len(lit):]
		return true
	}
	str := func() []byte {
		ws()
		end, ok := jsonx.StringAt(b, 0)
		if !ok {
			return nil
		}
		s := b[:end]
		b = b[end:]
		return s
	}
	if !take(`{`) || !take(`"text"`) || !take(`:`) {
		return false
	}
	text := str()
	if text == nil || !take(`,`) || !take(`"specialist"`) || !take(`:`) {
		return false
	}
	spec := str()
	if spec == nil || !take(`}`) {
		return false
	}
	if ws(); len(b) != 0 {
		return false
	}
	t, lit, ok := tokenText(text, literal)
	if !ok {
		return false
	}
	if specialist {
		if e.Specialist, ok = jsonx.Unquote(spec); !ok {
			return false
		}
	}
	e.Text, e.textJSON = t, lit
	return true
}

// readSAIFEvent fills e from data when data is a well-formed object whose every member it reads
// as json.Unmarshal would; false sends data to json.Unmarshal.
func readSAIFEvent(data []byte, specialist bool, e *saifEvent) bool {
	return jsonx.Members(data, true, func(name, v []byte) bool {
		ok := true
		switch string(name) {
		case "text":
			ok = readString(v, true, &e.Text)
		case "specialist":
			ok = readString(v, specialist, &e.Specialist)
		case "finish_reason":
			ok = readString(v, true, &e.FinishReason)
		case "done":
			switch string(v) {
			case "true":
				e.Done = true
			case "false":
				e.Done = false
			default:
				ok = false
			}
		case "usage":
			ok = readSAIFUsage(v, &e.Usage)
		default:
			ok = !jsonx.Folds(name, "text", "specialist", "done", "finish_reason", "usage")
		}
		return ok
	})
}

// readSAIFUsage reads the done event's usage object into *u, made when nil (a second usage
// member is read into the same one, as json.Unmarshal does).
func readSAIFUsage(v []byte, u **saifUsage) bool {
	if len(v) == 0 || v[0] != '{' {
		return false // null clears *u; anything else is json.Unmarshal's error
	}
	if *u == nil {
		*u = new(saifUsage)
	}
	return jsonx.Members(v, false, func(name, v []byte) bool { // validated with the event
		ok := true
		switch string(name) {
		case "prompt_tokens":
			ok = readCount(v, &(*u).PromptTokens)
		case "completion_tokens":
			ok = readCount(v, &(*u).CompletionTokens)
		default:
			ok = !jsonx.Folds(name, "prompt_tokens", "completion_tokens")
		}
		return ok
	})
}

// decodeSAIFAnswer reads a whole SAIF answer as json.Unmarshal reads it into a saifAnswer, error
// included: one of the usual kind (strings, a confidence, the usage counts) by walking it, which
// costs its strings and nothing else, where encoding/json checked the answer once and unquoted
// its text rune by rune; any other goes to json.Unmarshal (FuzzSAIFAnswerMatchesUnmarshal).
// literal lets the text stay the literal it came as (textJSON, Text nil) when plainToken takes
// it, for the chat.completion to copy. The walk's id, specialist, routed_by and finish_reason
// are views of data when written plainly (viewString), as textJSON is: valid while data is, for
// the answer built from them, not to be kept past it.
func decodeSAIFAnswer(data []byte, literal bool) (saifAnswer, error) {
	var m saifAnswer
	if readSAIFAnswer(data, literal, &m) {
		return m, nil
	}
	var v saifAnswer
	err := json.Unmarshal(data, &v)
	return v, err
}

// readSAIFAnswer fills m from data when data is a well-formed object whose every member it reads
// as json.Unmarshal would; false sends data to json.Unmarshal. A null confidence or text, which
// json.Unmarshal reads as no value, is left to it.
func readSAIFAnswer(data []byte, literal bool, m *saifAnswer) bool {
	return jsonx.Members(data, true, func(name, v []byte) bool {
		ok := true
		switch string(name) {
		case "id":
			ok = viewString(v, &m.ID)
		case "specialist":
			ok = viewString(v, &m.Specialist)
		case "routed_by":
			ok = viewString(v, &m.RoutedBy)
		case "finish_reason":
			ok = viewString(v, &m.FinishReason)
		case "text":
			var s string
			var lit []byte
			if s, lit, ok = tokenText(v, literal); ok && lit != nil {
				m.Text, m.textJSON = nil, lit // the last text read wins, either way
			} else if ok {
				m.Text, m.textJSON = new(s), nil
			}
		case "confidence":
			if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
				return false
			}
			f, err := strconv.ParseFloat(string(v), 64)
			if ok = err == nil; ok {
				m.Confidence = &f
			}
		case "usage":
			ok = readSAIFUsage(v, &m.Usage)
		default:
			ok = !jsonx.Folds(name, "id", "specialist", "routed_by", "confidence", "text", "finish_reason", "usage")
		}
		return ok
	})
}
