package upstream

import (
	"bytes"

	"github.com/hayula/gateway/internal/jsonx"
)

// Contentless reports whether chunk, a stream's chat.completion.chunk (or completions chunk)
// payload, carries nothing of an answer: the chunk vLLM, SGLang and llama-server send before the
// first token, {"role":"assistant","content":""} (llama-server's content null, SGLang's
// reasoning_content and tool_calls null beside it), and the one a translating adapter's chunker
// makes when its first upstream event has no text (think-tags holding "<think>"). The server
// holds such chunks before its point of no return, so that a stream that fails before its first
// token still falls through (TestHeldLeadFallsThrough).
//
// It is true when the chunk is an object with a "choices" array of at least one choice (a chunk
// with none is no role chunk: Azure's prompt_filter_results, a usage chunk), and:
//   - each choice's delta has nothing but its role: every other member (content, reasoning,
//     reasoning_content, refusal, tool_calls, function_call, whatever a server adds) is missing,
//     null, or an empty string, array or object;
//   - each choice has no text (a completions chunk's), no finish_reason (null, "" and "null",
//     the strings SGLang 0.4.3 and KoboldCpp send for none, are none), no logprobs with anything
//     in them, and no other member but index with something in it (vLLM's stop_reason, SGLang's
//     matched_stop, OpenRouter's native_finish_reason are null until the end);
//   - the chunk has no other member with something in it but the envelope: id, object, created,
//     model, system_fingerprint, service_tier, OpenAI's obfuscation padding and OpenRouter's
//     provider. A usage (vLLM's continuous_usage_stats, which the gateway never asks for
//     itself), an error, or the gateway's own "hayula" member makes it a chunk with something in it.
//
// A chunk it cannot walk, or whose keys are not plain, is taken to carry something: it commits
// the stream, as every first event did. It allocates nothing.
func Contentless(chunk []byte) bool {
	if i := bytes.Index(chunk, contentText); i >= 0 && i+len(contentText) < len(chunk) && chunk[i+len(contentText)] != '"' {
		// A member "content" whose value is a string that is not empty: in JSON these bytes are
		// only ever such a key and its value (a quote inside a string is escaped), so the chunk
		// has text in it, or something in a member the walk below passes over (provider), which
		// commits the stream as every first event did. Nearly every first event with an answer
		// in it is told so here, without the walk: 8,255 instructions on the bench's first chunk,
		// 690 by this search (BenchmarkContentless, under cachegrind).
		return false
	}
	choices := false
	return jsonx.Members(chunk, false, func(name, v []byte) bool {
		switch string(name) {
		case "choices":
			choices = true
			return contentlessChoices(v)
		case "id", "object", "created", "model", "system_fingerprint", "service_tier", "obfuscation", "provider":
			return true
		}
		return !says(v)
	}) && choices
}

// contentlessChoices reports whether v, a chunk's choices, is an array of at least one element,
// each a choice with nothing of an answer in it (see Contentless).
func contentlessChoices(v []byte) bool {
	it := jsonx.Array(v, false)
	for n := 0; ; n++ {
		_, c, more := it.Next()
		if !more {
			return n > 0 && it.Done()
		}
		if !contentlessChoice(c) {
			return false
		}
	}
}

func contentlessChoice(c []byte) bool {
	return jsonx.Members(c, false, func(name, v []byte) bool {
		switch string(name) {
		case "index":
			return true
		case "delta", "logprobs":
			return emptyMembers(v, string(name) == "delta")
		case "finish_reason":
			return !says(v) || string(bytes.TrimSpace(v)) == `"`+nullString+`"` // SaysFinish's rule
		}
		return !says(v)
	})
}

// emptyMembers reports whether v is null, or an object none of whose members has something in
// it, but for the role with role.
func emptyMembers(v []byte, role bool) bool {
	return !says(v) || jsonx.Members(v, false, func(name, m []byte) bool {
		return role && string(name) == "role" || !says(m)
	})
}

// contentText begins a member "content" whose value is a string.
var contentText = []byte(`"content":"`)

// AbortsEmpty reports whether chunk ends the answer with finish_reason "abort" (see
// AbortedError) and carries nothing of it: after chunks that were all Contentless, the engine
// gave the request up before its first token, and the stream fails as one whose first event is
// such an abort does (TestHeldLeadFallsThrough). The raw search finds no "abort" in nearly every
// chunk, and reads nothing more of it.
func AbortsEmpty(chunk []byte) bool {
	return bytes.Contains(chunk, abortQuoted) && saysAbort(chunk) && !carriesAnswer(chunk)
}

// AbortedEarlyMessage is the failure of a stream whose engine gave it up before its first token:
// its first event, or the first after Contentless ones, an abort with nothing in it.
const AbortedEarlyMessage = `the upstream aborted the request (finish_reason "abort") before its first token`
