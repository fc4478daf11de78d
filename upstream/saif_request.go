package upstream

import "strconv"

// appendSAIFRequest appends r as mustJSON(r) writes it: the same members in the same order,
// each omission and escape, byte for byte (FuzzSAIFRequestMatchesEncoding). Through
// encoding/json the prompt, the whole conversation in one string, was escaped rune by rune: a
// 1 KB chat request cost more there than everything the gateway does to relay one to an openai
// target.
func appendSAIFRequest(dst []byte, r *saifRequest) []byte {
	dst = append(dst, `{"prompt":`...)
	if r.promptJSON != nil {
		dst = append(dst, r.promptJSON...)
	} else {
		dst = appendJSONString(dst, r.Prompt)
	}
	dst = append(dst, `,"specialist":`...)
	if r.Specialist == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendJSONString(dst, *r.Specialist)
	}
	if r.MaxTokens != 0 {
		dst = strconv.AppendInt(append(dst, `,"max_tokens":`...), int64(r.MaxTokens), 10)
	}
	if r.Temperature != nil {
		dst = appendJSONFloat(append(dst, `,"temperature":`...), *r.Temperature)
	}
	if len(r.Stop) > 0 {
		dst = appendJSONStrings(append(dst, `,"stop":`...), r.Stop)
	}
	dst = append(dst, `,"stream":`...)
	dst = strconv.AppendBool(dst, r.Stream)
	return append(dst, '}')
}
