package upstream

import (
	"bytes"
	"encoding/json"

	"github.com/hayula/gateway/core"
)

// reasoningKeys are the members a whole answer's message or a chunk's delta carries reasoning in:
// reasoning_content (DeepSeek's, the gateway's own, vLLM's older servers' and llama-server's),
// reasoning (vLLM's newer servers', Ollama's /v1, OpenRouter's) and OpenRouter's
// reasoning_details.
var reasoningKeys = [...]string{"reasoning_content", "reasoning", "reasoning_details"}

// rawReasoning is how each of reasoningKeys begins as a key: an answer or a chunk without it
// has none of them, and is not decoded.
var rawReasoning = []byte(`"reasoning`)

// A request whose reasoning object says exclude: true (core.Request.HideReasoning) gets none of
// the model's reasoning, whichever target serves it. An OpenRouter target honours the field
// itself; a local OpenAI-compatible server (vLLM, llama-server, SGLang) does not know it and
// answers its reasoning all the same, and the gateway cannot tell one from the other; so the
// openai adapter takes the reasoning out of what any of them answers, which for OpenRouter finds
// none (TestReasoningExcludeEveryAdapter). Only such a request pays for it: any other answer is
// relayed as it came, and even for such a request a chunk without a raw `"reasoning` goes as it
// came, the same bytes.

// withoutReasoningBody is a whole chat answer with reasoningKeys taken out of every choice's
// message; body itself when none has any.
func withoutReasoningBody(body []byte) []byte {
	if !bytes.Contains(body, rawReasoning) {
		return body
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(top["choices"], &choices) != nil {
		return body
	}
	changed := false
	for _, ch := range choices {
		if m, ok := withoutReasoning(ch["message"]); ok {
			ch["message"], changed = m, true
		}
	}
	if !changed {
		return body
	}
	top["choices"] = mustJSON(choices)
	return mustJSON(top)
}

// withoutReasoning is the object v without reasoningKeys; ok is false, and v returned, when it
// has none of them or is no object.
func withoutReasoning(v json.RawMessage) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil || m == nil {
		return v, false
	}
	n := len(m)
	for _, k := range reasoningKeys {
		delete(m, k)
	}
	if len(m) == n {
		return v, false
	}
	return mustJSON(m), true
}

// hideReasoningStream relays a chunk stream with reasoningKeys taken out of every delta. A chunk
// that carried reasoning alone is left with nothing to say (emptied) and is skipped, as the
// translating adapters' chunker skips it, rather than sent as an empty delta; its logprobs, its
// tokens', go with the reasoning.
//
// The wrapped stream fails an abort that comes before its first chunk with nothing in it (see
// AbortedError); an abort after chunks that carried reasoning alone is, for this client, one
// before anything too, and fails the same way, so that the chain moves on
// (TestAbortWithOnlyHiddenReasoningMovesOn).
type hideReasoningStream struct {
	Stream
	target string // the target's name, for a failure
	// ahead is set when Buffered has read the next chunk (next) or the end (err) already.
	ahead bool
	next  []byte
	err   error
	kept  bool  // a chunk has been kept: what comes after it is relayed as it comes
	fail  error // take's failure, returned again by every later Next
}

func (s *hideReasoningStream) Next() ([]byte, error) {
	if s.ahead {
		s.ahead = false
		return s.next, s.err
	}
	if s.fail != nil {
		return nil, s.fail
	}
	for {
		ev, err := s.Stream.Next()
		if err != nil {
			return nil, err
		}
		if out, keep, err := s.take(ev); keep || err != nil {
			return out, err
		}
	}
}

// take is hideReasoningIn's chunk ev, and the failure of a first kept chunk that is an abort
// with nothing in it.
func (s *hideReasoningStream) take(ev []byte) (out []byte, keep bool, err error) {
	out, keep = hideReasoningIn(ev)
	if !keep || s.kept {
		return out, keep, nil
	}
	s.kept = true
	if bytes.Contains(out, abortQuoted) && saysAbort(out) && !carriesAnswer(out) {
		s.fail = &core.StreamError{Target: s.target, Message: `the upstream aborted the request (finish_reason "abort") before its first token`}
		return nil, false, s.fail
	}
	return out, true, nil
}

// Buffered reports whether Next will return without waiting on the upstream. A chunk the
// wrapped stream has buffered may be one Next skips, so, as thinkStream.Buffered does, buffered
// chunks are read here until one is kept or none is left: a relay told true never holds its
// last chunk unflushed while Next waits.
func (s *hideReasoningStream) Buffered() bool {
	if s.ahead || s.fail != nil {
		return true
	}
	b, ok := s.Stream.(BufferedStream)
	for ok && b.Buffered() {
		ev, err := s.Stream.Next()
		if err != nil {
			s.ahead, s.next, s.err = true, nil, err
			return true
		}
		if out, keep, err := s.take(ev); keep || err != nil {
			s.ahead, s.next, s.err = true, out, err
			return true
		}
	}
	return false
}

// hideReasoningIn is the chunk ev without reasoning in its deltas; keep is false for a chunk
// that had some and has nothing left to say.
func hideReasoningIn(ev []byte) (out []byte, keep bool) {
	if !bytes.Contains(ev, rawReasoning) {
		return ev, true
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(ev, &top) != nil {
		return ev, true
	}
	var choices []map[string]json.RawMessage
	if json.Unmarshal(top["choices"], &choices) != nil || len(choices) == 0 {
		return ev, true
	}
	changed := false
	for _, ch := range choices {
		if d, ok := withoutReasoning(ch["delta"]); ok {
			ch["delta"], changed = d, true
			if lp, ok := ch["logprobs"]; ok && !isNull(lp) && !saysOwn(d) {
				// The logprobs of a delta that carried reasoning alone are its tokens': they
				// would spell it out (TestHideReasoningTakesItsLogprobs).
				ch["logprobs"] = json.RawMessage("null")
			}
		}
	}
	if !changed {
		return ev, true
	}
	if emptied(top, choices) {
		return nil, false
	}
	top["choices"] = mustJSON(choices)
	return mustJSON(top), true
}

// saysOwn reports whether the delta d, its reasoning taken out, still carries something of the
// answer's own: text, a refusal or a call.
func saysOwn(d json.RawMessage) bool {
	var p answerParts
	if json.Unmarshal(d, &p) != nil {
		return true
	}
	return says(p.Content) || says(p.Refusal) || says(p.ToolCalls) || says(p.FunctionCall)
}
