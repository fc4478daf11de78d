package server

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/hayula/gateway/internal/jsonx"
)

// appendDeltaEvent appends ev's JSON as json.Marshal writes it (HTML characters escaped, members
// in streamEvent's order) when ev is a delta event: a type, a sequence number, indexes, an item
// id, a delta and raw logprobs, the members a token's event has. ok is false for any other event
// (a response, an item, a part, a done event's text, an error), which json.Marshal writes
// (TestDeltaEventMatchesMarshal).
func appendDeltaEvent(dst []byte, ev *streamEvent) (out []byte, ok bool) {
	if ev.Response != nil || ev.Item != nil || ev.Part != nil || ev.Text != nil || ev.Arguments != nil ||
		ev.Name != "" || ev.Refusal != nil || ev.Code != "" || ev.Message != "" || ev.Param != nil ||
		(ev.Logprobs != nil && string(ev.Logprobs) != "[]") {
		return dst, false
	}
	d := deltaEvent{typ: ev.Type, seq: ev.SequenceNumber, itemID: ev.ItemID, logprobs: ev.Logprobs != nil}
	if ev.OutputIndex != nil {
		d.output, d.hasOutput = *ev.OutputIndex, true
	}
	if ev.ContentIndex != nil {
		d.content, d.hasContent = *ev.ContentIndex, true
	}
	if ev.Delta != nil {
		d.delta, d.hasDelta = *ev.Delta, true
	}
	return d.append(dst), true
}

// deltaEvent is a delta event's members, as appendDeltaEvent reads them from a streamEvent and
// emitDelta has them: without a streamEvent's pointers, which escape to the heap through
// json.Marshal in send, three allocations a token.
type deltaEvent struct {
	typ                   string
	seq, output, content  int
	hasOutput, hasContent bool
	itemID, delta         string
	hasDelta, logprobs    bool
}

// append appends d's JSON as json.Marshal writes the streamEvent it stands for.
func (d *deltaEvent) append(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendHTMLString(dst, d.typ)
	dst = append(dst, `,"sequence_number":`...)
	dst = strconv.AppendInt(dst, int64(d.seq), 10)
	if d.hasOutput {
		dst = append(dst, `,"output_index":`...)
		dst = strconv.AppendInt(dst, int64(d.output), 10)
	}
	if d.hasContent {
		dst = append(dst, `,"content_index":`...)
		dst = strconv.AppendInt(dst, int64(d.content), 10)
	}
	if d.itemID != "" {
		dst = append(dst, `,"item_id":`...)
		dst = appendHTMLString(dst, d.itemID)
	}
	if d.hasDelta {
		dst = append(dst, `,"delta":`...)
		dst = appendHTMLString(dst, d.delta)
	}
	if d.logprobs {
		dst = append(dst, `,"logprobs":[]`...)
	}
	return append(dst, '}')
}

// appendHTMLString appends s as json.Marshal writes a string, HTML characters escaped.
func appendHTMLString(dst []byte, s string) []byte { return jsonx.AppendString(dst, s, true) }

// marshalEvent appends ev's JSON to dst: appendDeltaEvent's for a delta event, json.Marshal's
// for the rest.
func marshalEvent(dst []byte, ev *streamEvent) ([]byte, error) {
	if out, ok := appendDeltaEvent(dst, ev); ok {
		return out, nil
	}
	e := *ev // a copy for json.Marshal, so that ev itself stays where its caller made it
	data, err := json.Marshal(e)
	return append(dst, data...), err
}

// decodeChunk reads a chat stream payload as json.Unmarshal reads it into a chatAnswer: ok is
// false where json.Unmarshal fails, and c is then what it left. A chunk of the usual kind (the
// model, choices whose deltas carry content or reasoning_content as strings, null members) is read
// by walking it (readChunk); any other (tool calls, a message, usage, an error, content parts, a
// key only encoding/json's case folding would match) goes to json.Unmarshal
// (FuzzDecodeChunkMatchesUnmarshal).
func decodeChunk(p []byte) (c chatAnswer, ok bool) { return decodeChunkIn(p, nil) }

// chunkRoom is what a stream's bridge keeps of one chunk for reading the next without
// allocating (decodeChunkIn): the room of its choices, and its model, which every chunk of a
// stream repeats.
type chunkRoom struct {
	choices []chatChoice
	model   string
}

// decodeChunkIn is decodeChunk in room, which may be nil: a chunk's choices array, read by
// readChunk, is read into room's choices[:0], and a model written as room's model is, without
// escapes, is that string, so that a stream's bridge that keeps each chunk's room for the next
// allocates them once (BenchmarkResponsesStreamEvent). What it reads is json.Unmarshal's all
// the same (FuzzDecodeChunkMatchesUnmarshal).
func decodeChunkIn(p []byte, room *chunkRoom) (c chatAnswer, ok bool) {
	if ok = readChunk(p, &c, room); !ok {
		var v chatAnswer
		err := json.Unmarshal(p, &v)
		c, ok = v, err == nil
	}
	if room != nil {
		room.keep(&c)
	}
	return c, ok
}

// keep takes what c offers the next chunk's reading: its choices' room, unless it is smaller
// than the room's or outsized (maxKeptChoices), and its model.
func (r *chunkRoom) keep(c *chatAnswer) {
	if cap(c.Choices) > cap(r.choices) && cap(c.Choices) <= maxKeptChoices {
		r.choices = c.Choices[:0]
	}
	if c.Model != "" {
		r.model = c.Model
	}
}

// readChunk fills c from p when p is a well-formed object whose every member it reads as
// json.Unmarshal would; false sends p to json.Unmarshal, whatever c holds by then.
func readChunk(p []byte, c *chatAnswer, room *chunkRoom) bool {
	return jsonx.Members(p, true, func(name, v []byte) bool {
		ok := true
		switch string(name) {
		case "model":
			ok = len(v) > 0 && v[0] == '"'
			if !ok {
				break
			}
			// A literal without escapes that is the last model's bytes is that string: valid
			// UTF-8 as the string is, it unquotes to itself.
			if room != nil && room.model != "" && len(v) >= 2 && string(v[1:len(v)-1]) == room.model && bytes.IndexByte(v, '\\') < 0 {
				c.Model = room.model
				break
			}
			c.Model, ok = jsonx.Unquote(v)
		case "choices":
			if c.Choices == nil && room != nil {
				c.Choices = room.choices[:0]
			}
			ok = readChoices(v, &c.Choices)
		case "usage":
			ok, c.Usage = string(v) == "null", nil
		case "error":
			ok, c.Error = string(v) == "null", nil
		default:
			ok = !jsonx.Folds(name, "model", "choices", "usage", "error")
		}
		return ok
	})
}

// readChoices reads a chunk's choices array into *choices, as json.Unmarshal does into a slice.
func readChoices(v []byte, choices *[]chatChoice) bool {
	if len(v) == 0 || v[0] != '[' {
		return false // null (a nil slice) and any other kind go to json.Unmarshal
	}
	*choices = (*choices)[:0]
	if *choices == nil {
		*choices = []chatChoice{}
	}
	it := jsonx.Array(v, false) // validated with the chunk
	for {
		_, e, more := it.Next()
		if !more {
			return it.Done()
		}
		var ch chatChoice
		if !readChoice(e, &ch) {
			return false
		}
		*choices = append(*choices, ch)
	}
}

// readChoice reads one choice: its index, its delta, and a null or string finish_reason.
func readChoice(v []byte, ch *chatChoice) bool {
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	return jsonx.Members(v, false, func(name, v []byte) bool {
		ok := true
		switch string(name) {
		case "index":
			ok = readInt(v, &ch.Index)
		case "delta":
			ok = string(v) == "null" || readDelta(v, &ch.Delta)
		case "finish_reason":
			ok = readStringPtr(v, &ch.FinishReason)
		default:
			ok = !jsonx.Folds(name, "index", "message", "delta", "finish_reason")
		}
		return ok
	})
}

// readDelta reads a delta of text: content and reasoning_content as strings or null (content
// null goes to json.Unmarshal), and refusal and tool_calls null.
func readDelta(v []byte, d *chatDelta) bool {
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	return jsonx.Members(v, false, func(name, v []byte) bool {
		ok := true
		switch string(name) {
		case "content":
			// As chatContent.UnmarshalJSON reads a string: the text set, the rest kept.
			ok = len(v) > 0 && v[0] == '"'
			if ok {
				var s string
				if s, ok = jsonx.Unquote(v); ok {
					if d.Content == nil {
						d.Content = &chatContent{}
					}
					d.Content.text = s
				}
			}
		case "reasoning_content":
			ok = readStringPtr(v, &d.ReasoningContent)
		case "refusal":
			ok, d.Refusal = string(v) == "null", nil
		case "tool_calls":
			ok, d.ToolCalls = string(v) == "null", nil
		default:
			ok = !jsonx.Folds(name, "content", "reasoning_content", "reasoning", "refusal", "tool_calls")
		}
		return ok
	})
}

// readStringPtr reads null (nil) or a string into *dst, as json.Unmarshal does into a *string.
func readStringPtr(v []byte, dst **string) bool {
	if string(v) == "null" {
		*dst = nil
		return true
	}
	if len(v) == 0 || v[0] != '"' {
		return false
	}
	s, ok := jsonx.Unquote(v)
	if !ok {
		return false
	}
	if *dst == nil {
		*dst = new(string)
	}
	**dst = s
	return true
}

// readInt reads a whole number that fits an int, as json.Unmarshal does; false for any other.
func readInt(v []byte, dst *int) bool {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) || bytes.ContainsAny(v, ".eE") {
		return false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return false
	}
	*dst = int(n)
	return true
}
