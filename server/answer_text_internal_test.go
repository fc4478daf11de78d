package server

import (
	"testing"

	"github.com/hayula/gateway/filter"
)

// TestRelayedTextCountsWhatTheClientReads: the bound a tpm cap charges for a stream without
// usage counts the text of the events the client was sent (content, reasoning and refusal in a
// chat chunk's delta, a completion chunk's text), not a tool call's arguments, which servers
// re-serialize, nor anything outside choices; and reads each event without allocating, on the
// relay of every stream of a key with tpm.
func TestRelayedTextCountsWhatTheClientReads(t *testing.T) {
	events := []string{
		`{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"reasoning_content":"think first"},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":" then answer"},"finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"a b c d\": 1}"}}]},"finish_reason":null}]}`,
		`{"id":"c1","object":"text_completion","model":"m","choices":[{"index":0,"text":" and more","finish_reason":null}]}`,
		`{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":9}}`,
	}
	var n filter.TextTokens
	for _, ev := range events {
		answerText(&n, []byte(ev))
	}
	// "think first then answer and more", joined as the client reads it: six words.
	if got := n.Min(); got != 6 {
		t.Errorf("bound %d, want 6", got)
	}
	ev := []byte(events[2])
	if a := testing.AllocsPerRun(100, func() { answerText(&n, ev) }); a != 0 {
		t.Errorf("%.1f allocations an event, want none", a)
	}
}
