package upstream

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// TestStreamAbort: a stream whose first event is finish_reason "abort" with nothing in it fails
// before anything goes out (a *core.StreamError: the chain moves on); one that says it after the
// answer began, or in a first event with text, relays every event and ends with an AbortedError,
// which Is io.EOF. A finish that is no abort ends with io.EOF itself, and so does an "abort" that
// is a word of the text.
func TestStreamAbort(t *testing.T) {
	chunk := func(delta, finish string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	done := "data: [DONE]\n\n"
	tests := []struct {
		name   string
		wire   string
		events int
		end    string // "eof", "aborted", "failed"
	}{
		{"first event, empty", chunk(`{"role":"assistant","content":""}`, `"abort"`) + done, 0, "failed"},
		{"first event, reasoning", chunk(`{"reasoning_content":"hm"}`, `"abort"`) + done, 1, "aborted"},
		{"first event, a call", chunk(`{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":""}}]}`, `"abort"`) + done, 1, "aborted"},
		{"after a role chunk", chunk(`{"role":"assistant","content":""}`, "null") + chunk(`{}`, ` "abort"`) + done, 2, "aborted"},
		{"after text, usage after", chunk(`{"content":"Hel"}`, "null") + chunk(`{}`, `"abort"`) +
			`data: {"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}` + "\n\n" + done, 3, "aborted"},
		{"after text, no [DONE]", chunk(`{"content":"Hel"}`, "null") + chunk(`{}`, `"abort"`), 2, "aborted"},
		{"stop", chunk(`{"content":"Hel"}`, "null") + chunk(`{}`, `"stop"`) + done, 2, "eof"},
		{"abort in the text", chunk(`{"content":"\"abort\""}`, "null") + chunk(`{}`, `"stop"`) + done, 2, "eof"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newOpenAIStream("a", io.NopCloser(strings.NewReader(tt.wire)), nil)
			defer s.Close()
			n, err := 0, error(nil)
			for {
				if _, err = s.Next(); err != nil {
					break
				}
				n++
			}
			_, aborted := errors.AsType[*AbortedError](err)
			_, failed := errors.AsType[*core.StreamError](err)
			end := map[bool]string{true: "eof"}[errors.Is(err, io.EOF) && !aborted]
			if aborted && errors.Is(err, io.EOF) {
				end = "aborted"
			} else if failed {
				end = "failed"
			}
			if n != tt.events || end != tt.end {
				t.Errorf("%d events, end %v (%s); want %d, %s", n, err, end, tt.events, tt.end)
			}
		})
	}
}
