package upstream

import (
	"encoding/json"
	"math"
	"strconv"
)

// This file writes the /api/chat request the ollama adapter sends (ollamaChatRequest) by
// appending bytes, as mustJSON writes the same struct: the same members in the same order, the
// same escapes, byte for byte (FuzzOllamaRequestMatchesEncoding). Through encoding/json a 1 KB
// request cost about as much as everything else the gateway does for a request relayed to an
// openai target: reflection over the struct, and each message's text escaped rune by rune.
// The rare members (tool calls, tools, format, think, keep_alive, options the client merged)
// are still encoding/json's, through mustJSON, appended in place, as chunkjson.go does.

// appendOllamaRequest appends r as mustJSON(r) writes it.
func appendOllamaRequest(dst []byte, r *ollamaChatRequest) []byte {
	dst = append(dst, `{"model":`...)
	dst = appendJSONString(dst, r.Model)
	dst = append(dst, `,"messages":`...)
	if r.Messages == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Messages {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendOllamaMessage(dst, &r.Messages[i])
		}
		dst = append(dst, ']')
	}
	dst = appendRawMember(dst, `,"tools":`, r.Tools)
	dst = appendRawMember(dst, `,"format":`, r.Format)
	switch o := r.Options.(type) {
	case nil:
	case *ollamaOptions:
		if o != nil {
			dst = appendOllamaOptions(append(dst, `,"options":`...), o)
		} else {
			dst = append(dst, `,"options":null`...) // a typed nil is not omitted
		}
	default:
		dst = append(append(dst, `,"options":`...), mustJSON(o)...)
	}
	dst = append(dst, `,"stream":`...)
	dst = strconv.AppendBool(dst, r.Stream)
	dst = append(dst, `,"truncate":`...)
	dst = strconv.AppendBool(dst, r.Truncate)
	if r.Logprobs {
		dst = append(dst, `,"logprobs":true`...)
	}
	if r.TopLogprobs != 0 {
		dst = strconv.AppendInt(append(dst, `,"top_logprobs":`...), int64(r.TopLogprobs), 10)
	}
	dst = appendRawMember(dst, `,"think":`, r.Think)
	dst = appendRawMember(dst, `,"keep_alive":`, r.KeepAlive)
	return append(dst, '}')
}

// appendRawMember appends an omitempty json.RawMessage member: nothing when v is empty, else
// the name and v as encoding/json writes it (compacted).
func appendRawMember(dst []byte, name string, v []byte) []byte {
	if len(v) == 0 {
		return dst
	}
	return append(append(dst, name...), mustJSON(json.RawMessage(v))...)
}

// appendOllamaMessage appends one ollamaMessage as mustJSON writes it.
func appendOllamaMessage(dst []byte, m *ollamaMessage) []byte {
	dst = append(dst, `{"role":`...)
	dst = appendJSONString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	if m.contentJSON != nil {
		dst = append(dst, m.contentJSON...)
	} else {
		dst = appendJSONString(dst, m.Content)
	}
	if m.Thinking != "" {
		dst = appendJSONString(append(dst, `,"thinking":`...), m.Thinking)
	}
	if len(m.Images) > 0 {
		dst = appendJSONStrings(append(dst, `,"images":`...), m.Images)
	}
	if len(m.ToolCalls) > 0 {
		dst = append(append(dst, `,"tool_calls":`...), mustJSON(m.ToolCalls)...)
	}
	if m.ToolName != "" {
		dst = appendJSONString(append(dst, `,"tool_name":`...), m.ToolName)
	}
	if m.ToolCallID != "" {
		dst = appendJSONString(append(dst, `,"tool_call_id":`...), m.ToolCallID)
	}
	return append(dst, '}')
}

// appendOllamaOptions appends o as mustJSON writes it: each member omitted when unset.
func appendOllamaOptions(dst []byte, o *ollamaOptions) []byte {
	start := len(dst)
	dst = append(dst, '{')
	member := func(name string) {
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
		dst = append(append(append(dst, '"'), name...), `":`...)
	}
	float := func(name string, f *float64) {
		if f != nil {
			member(name)
			dst = appendJSONFloat(dst, *f)
		}
	}
	float("temperature", o.Temperature)
	float("top_p", o.TopP)
	if o.Seed != nil {
		member("seed")
		dst = strconv.AppendInt(dst, *o.Seed, 10)
	}
	if len(o.Stop) > 0 {
		member("stop")
		dst = appendJSONStrings(dst, o.Stop)
	}
	if o.NumPredict != 0 {
		member("num_predict")
		dst = strconv.AppendInt(dst, int64(o.NumPredict), 10)
	}
	if o.NumCtx != 0 {
		member("num_ctx")
		dst = strconv.AppendInt(dst, int64(o.NumCtx), 10)
	}
	float("frequency_penalty", o.FreqPenalty)
	float("presence_penalty", o.PresPenalty)
	if o.TopK != nil {
		member("top_k")
		dst = strconv.AppendInt(dst, *o.TopK, 10)
	}
	float("min_p", o.MinP)
	float("repeat_penalty", o.RepeatPenalty)
	return append(dst, '}')
}

// appendJSONStrings appends ss, which is not nil, as encoding/json writes a []string.
func appendJSONStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

// appendJSONFloat appends f as encoding/json writes a float64: the shortest decimal that reads
// back as f, in exponent form below 1e-6 and from 1e21 on, its exponent without a leading zero.
// A value JSON cannot hold (NaN, ±Inf) is mustJSON's panic, as before: the client's numbers
// were JSON.
func appendJSONFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, mustJSON(f)...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 is written 1e-7.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
