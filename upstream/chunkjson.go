package upstream

import (
	"encoding/json"
	"strconv"

	"github.com/hayula/gateway/internal/jsonx"
)

// This file writes the chunks the translating adapters build (chunkJSON, textCompletionJSON) by
// appending bytes, as encoding/json would write the same structs through mustJSON: the same
// members in the same order, the same string escapes (HTML characters left as they are), byte
// for byte (FuzzChunkJSONMatchesEncoding). A stream's chunks are written into one buffer that the
// stream reuses (chunker.reset), so that a token's chunk costs no allocation of its own where
// mustJSON cost an encoder, a bytes.Buffer grown twice, and the struct it was given.
//
// The rare members (tool calls, logprobs, the hayula object) are still encoding/json's, through
// mustJSON, appended in place: encoding/json writes a value inside a struct as it writes it alone.

// appendJSONString appends s as encoding/json writes a string with HTML escaping off, as
// mustJSON's encoder does.
func appendJSONString(dst []byte, s string) []byte { return jsonx.AppendString(dst, s, false) }

// appendEnvelopeHead appends an envelopeJSON's members up to "choices": the opening brace, id,
// object, created and model, and `"choices":`.
func appendEnvelopeHead(dst []byte, id, object string, created int64, model string) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, id)
	dst = append(dst, `,"object":`...)
	dst = appendJSONString(dst, object)
	dst = append(dst, `,"created":`...)
	dst = strconv.AppendInt(dst, created, 10)
	dst = append(dst, `,"model":`...)
	dst = appendJSONString(dst, model)
	return append(dst, `,"choices":`...)
}

// appendEnvelopeTail appends an envelopeJSON's members after the choices, usage and hayula (each
// left out when nil), and the closing brace.
func appendEnvelopeTail(dst []byte, u *usageJSON, hy *hayulaJSON) []byte {
	if u != nil {
		dst = append(dst, `,"usage":{"prompt_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.PromptTokens), 10)
		dst = append(dst, `,"completion_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.CompletionTokens), 10)
		dst = append(dst, `,"total_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.TotalTokens), 10)
		dst = append(dst, '}')
	}
	if hy != nil {
		dst = appendHayula(append(dst, `,"hayula":`...), hy)
	}
	return append(dst, '}')
}

// appendHayula appends hy as mustJSON writes it: each member left out when empty.
func appendHayula(dst []byte, hy *hayulaJSON) []byte {
	sep := byte('{')
	if hy.Specialist != "" {
		dst = appendJSONString(append(append(dst, sep), `"specialist":`...), hy.Specialist)
		sep = ','
	}
	if hy.RoutedBy != "" {
		dst = appendJSONString(append(append(dst, sep), `"routed_by":`...), hy.RoutedBy)
		sep = ','
	}
	if hy.Confidence != nil {
		dst = appendJSONFloat(append(append(dst, sep), `"confidence":`...), *hy.Confidence)
		sep = ','
	}
	if sep == '{' {
		dst = append(dst, '{')
	}
	return append(dst, '}')
}

// appendCompletion appends c as mustJSON(c) writes it: a whole chat.completion.
func appendCompletion(dst []byte, c *completionJSON) []byte {
	dst = appendEnvelopeHead(dst, c.ID, c.Object, c.Created, c.Model)
	if c.Choices == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range c.Choices {
			ch := &c.Choices[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(append(dst, `{"index":`...), int64(ch.Index), 10)
			dst = appendJSONString(append(dst, `,"message":{"role":`...), ch.Message.Role)
			dst = append(dst, `,"content":`...)
			if ch.Message.contentJSON != nil {
				dst = append(dst, ch.Message.contentJSON...)
			} else if ch.Message.Content == nil {
				dst = append(dst, "null"...)
			} else {
				dst = appendJSONString(dst, *ch.Message.Content)
			}
			if ch.Message.ReasoningContent != "" {
				dst = appendJSONString(append(dst, `,"reasoning_content":`...), ch.Message.ReasoningContent)
			}
			if len(ch.Message.ToolCalls) > 0 {
				dst = append(append(dst, `,"tool_calls":`...), mustJSON(ch.Message.ToolCalls)...)
			}
			dst = append(dst, `},"logprobs":`...)
			if ch.Logprobs == nil {
				dst = append(dst, "null"...)
			} else {
				dst = append(dst, mustJSON(ch.Logprobs)...)
			}
			dst = appendJSONString(append(dst, `,"finish_reason":`...), ch.FinishReason)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return appendEnvelopeTail(dst, c.Usage, c.Hayula)
}

// appendFinish appends a finish_reason's value: null, or the string.
func appendFinish(dst []byte, finish *string) []byte {
	if finish == nil {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, *finish)
}

// appendChunk appends the chunkJSON of one choice (index 0) with delta d, logprobs lp,
// finish_reason finish, usage u and hayula hy: mustJSON's bytes for the same values.
func appendChunk(dst []byte, id string, created int64, model string, d *deltaJSON, lp *logprobsJSON,
	finish *string, u *usageJSON, hy *hayulaJSON) []byte {
	var content string
	if d.Content != nil {
		content = *d.Content
	}
	return appendChunkOf(dst, id, created, model, d.Role, content, d.Content != nil, d.ReasoningContent, d.ToolCalls,
		lp, finish, u, hy)
}

// appendChunkOf is appendChunk with the delta's members given one by one (content written when
// hasContent is set), so that the text of a delta built on the stack need not move to the heap.
func appendChunkOf(dst []byte, id string, created int64, model string, role, content string, hasContent bool,
	reasoning string, calls []toolCallJSON, lp *logprobsJSON, finish *string, u *usageJSON, hy *hayulaJSON) []byte {
	dst = appendEnvelopeHead(dst, id, "chat.completion.chunk", created, model)
	return appendChunkChoices(dst, role, content, nil, hasContent, reasoning, calls, lp, finish, u, hy)
}

// appendChunkChoices is appendChunkOf after its envelope's head: a stream's chunks all share
// one id, created and model, whose bytes the chunker writes once and copies (chunker.marshal).
// contentJSON, when not nil, is written for the content as it is: the literal appendJSONString
// would write for it (chunker.delta's lit).
func appendChunkChoices(dst []byte, role, content string, contentJSON []byte, hasContent bool, reasoning string,
	calls []toolCallJSON, lp *logprobsJSON, finish *string, u *usageJSON, hy *hayulaJSON) []byte {
	dst = append(dst, `[{"index":0,"delta":{`...)
	sep := ""
	if role != "" {
		dst = append(dst, `"role":`...)
		dst = appendJSONString(dst, role)
		sep = ","
	}
	if hasContent {
		dst = append(append(dst, sep...), `"content":`...)
		if contentJSON != nil {
			dst = append(dst, contentJSON...)
		} else {
			dst = appendJSONString(dst, content)
		}
		sep = ","
	}
	if reasoning != "" {
		dst = append(append(dst, sep...), `"reasoning_content":`...)
		dst = appendJSONString(dst, reasoning)
		sep = ","
	}
	if len(calls) > 0 {
		dst = append(append(dst, sep...), `"tool_calls":`...)
		dst = append(dst, mustJSON(calls)...)
	}
	dst = append(dst, `},"logprobs":`...)
	if lp == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, mustJSON(lp)...)
	}
	dst = append(dst, `,"finish_reason":`...)
	dst = appendFinish(dst, finish)
	dst = append(dst, "}]"...)
	return appendEnvelopeTail(dst, u, hy)
}

// appendUsageChunk appends the include_usage chunk of an answer: no choices, only usage.
func appendUsageChunk(dst []byte, id, object string, created int64, model string, u *usageJSON) []byte {
	dst = appendEnvelopeHead(dst, id, object, created, model)
	dst = append(dst, "[]"...)
	return appendEnvelopeTail(dst, u, nil)
}

// appendTextChunk appends the textCompletionJSON of one choice with text and finish_reason
// finish, and hayula hy.
func appendTextChunk(dst []byte, id string, created int64, model, text string, finish *string, hy *hayulaJSON) []byte {
	dst = appendEnvelopeHead(dst, id, "text_completion", created, model)
	dst = append(dst, `[{"text":`...)
	dst = appendJSONString(dst, text)
	dst = append(dst, `,"index":0,"logprobs":null,"finish_reason":`...)
	dst = appendFinish(dst, finish)
	dst = append(dst, "}]"...)
	return appendEnvelopeTail(dst, nil, hy)
}

// chunkBuf is the buffer a stream's chunks are written into, reused once the stream has handed
// out every chunk written since the last reset (a Stream's slice is valid until its next Next).
type chunkBuf struct {
	buf []byte
}

// reset lets the next chunks reuse the buffer: the chunks written before are no longer read.
func (b *chunkBuf) reset() { b.buf = b.buf[:0] }

// add ends a chunk that began at start, returning it with its capacity cut at its end, so that a
// caller's append to it never writes over the next chunk.
func (b *chunkBuf) add(start int) []byte {
	return b.buf[start:len(b.buf):len(b.buf)]
}

// appendCompactJSON appends the well-formed JSON v without the whitespace between its tokens, as
// encoding/json writes a json.RawMessage with HTML escaping off; nil is null.
func appendCompactJSON(dst []byte, v json.RawMessage) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	// JSON holds no raw byte below 0x21 but whitespace: a value without one (an id, a number,
	// null, a word) is compact already, and one test a byte says so.
	plain := true
	for _, c := range v {
		if c <= ' ' {
			plain = false
			break
		}
	}
	if plain {
		return append(dst, v...)
	}
	start, inString, escaped := 0, false, false
	for i, c := range v {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			dst = append(dst, v[start:i]...)
			start = i + 1
		}
	}
	return append(dst, v[start:]...)
}
