package upstream

import (
	"bytes"
	"testing"

	"github.com/hayula/gateway/core"
)

// FuzzChunkJSONMatchesEncoding holds the appended chunks (chunkjson.go) to the bytes mustJSON
// writes for the same structs, which the adapters sent before: every member, escape and
// omission the same, for any text (invalid UTF-8, control characters, U+2028, HTML characters).
func FuzzChunkJSONMatchesEncoding(f *testing.F) {
	f.Add("chatcmpl-x", "m", " token", "", "stop", int64(1767366245), uint8(0))
	f.Add("id\"\\", "<model>&", "a\u2028b\u2029c\x00\x1f\b\f\n\r\t\x7f", "think \xff\xfe", "", int64(-1), uint8(0xff))
	f.Add("", "", "", "", "length", int64(0), uint8(0x15))
	f.Fuzz(func(t *testing.T, id, model, text, reasoning, finish string, created int64, flags uint8) {
		d := deltaJSON{ReasoningContent: reasoning}
		if flags&1 != 0 {
			d.Role = "assistant"
		}
		if flags&2 != 0 {
			d.Content = &text
		}
		if flags&4 != 0 {
			d.ToolCalls = []toolCallJSON{{ID: text, Type: "function"}}
			d.ToolCalls[0].Function.Name, d.ToolCalls[0].Function.Arguments = model, reasoning
		}
		var lp *logprobsJSON
		if flags&8 != 0 {
			lp = newLogprobs([]logprobJSON{{Token: text, Logprob: -0.5, Bytes: []int{1}}})
		}
		var fin *string
		if flags&16 != 0 {
			fin = &finish
		}
		var u *usageJSON
		if flags&32 != 0 {
			u = newUsage(int(created%1000), len(text))
		}
		var hy *hayulaJSON
		switch {
		case flags&64 != 0:
			c := float64(created) / 7
			hy = &hayulaJSON{Specialist: text, RoutedBy: model, Confidence: &c}
		case flags&128 != 0:
			hy = &hayulaJSON{Specialist: reasoning, RoutedBy: finish} // either may be empty
		}
		check := func(name string, got []byte, want []byte) {
			t.Helper()
			if !bytes.Equal(got, want) {
				t.Errorf("%s:\n got %s\nwant %s", name, got, want)
			}
		}
		check("chunk", appendChunk([]byte("x"), id, created, model, &d, lp, fin, u, hy)[1:],
			mustJSON(chunkJSON{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
				Choices: []chunkChoiceJSON{{Delta: d, Logprobs: lp, FinishReason: fin}}, Usage: u, Hayula: hy}))
		// The chunker writes a stream's envelope head once and copies it into every chunk after.
		c := newChunker(id, created, model, core.ReasoningPassthrough)
		parts := deltaParts{role: d.Role, content: text, hasContent: d.Content != nil, reasoning: reasoning, calls: d.ToolCalls}
		want := mustJSON(chunkJSON{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []chunkChoiceJSON{{Delta: d, Logprobs: lp, FinishReason: fin}}, Hayula: hy})
		for _, which := range []string{"chunker's first chunk", "chunker's second chunk"} {
			c.logprobs = lp
			check(which, c.marshal(parts, fin, hy), want)
		}
		if u != nil {
			check("usage chunk", appendUsageChunk(nil, id, "chat.completion.chunk", created, model, u),
				mustJSON(chunkJSON{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
					Choices: []chunkChoiceJSON{}, Usage: u}))
			check("text usage chunk", appendUsageChunk(nil, id, "text_completion", created, model, u),
				mustJSON(textCompletionJSON{ID: id, Object: "text_completion", Created: created, Model: model,
					Choices: []textChoiceJSON{}, Usage: u}))
		}
		// A whole answer (appendCompletion), with the delta's members as its message's.
		msg := messageJSON{Role: d.Role, Content: d.Content, ReasoningContent: reasoning, ToolCalls: d.ToolCalls}
		whole := completionJSON{ID: id, Object: "chat.completion", Created: created, Model: model,
			Choices: []choiceJSON{{Message: msg, Logprobs: lp, FinishReason: finish}}, Usage: u, Hayula: hy}
		check("completion", appendCompletion([]byte("x"), &whole)[1:], mustJSON(whole))
		whole.Choices = append(whole.Choices, choiceJSON{Index: 1, FinishReason: text})
		check("completion of two choices", appendCompletion(nil, &whole), mustJSON(whole))
		whole.Choices = nil
		check("completion without choices", appendCompletion(nil, &whole), mustJSON(whole))
		check("text chunk", appendTextChunk(nil, id, created, model, text, fin, hy),
			mustJSON(textCompletionJSON{ID: id, Object: "text_completion", Created: created, Model: model,
				Choices: []textChoiceJSON{{Text: text, FinishReason: fin}}, Hayula: hy}))
	})
}

// A chunk handed out keeps its bytes when the caller appends to it: its capacity ends where it
// does, so the append copies rather than writing over the chunk made after it.
func TestChunkBufCapsChunks(t *testing.T) {
	c := newChunker("id", 1, "m", 0)
	first := c.delta("a", nil, "", nil, nil)
	second := c.delta("b", nil, "", nil, nil)
	want := string(second)
	_ = append(first, "garbage"...)
	if string(second) != want {
		t.Fatalf("appending to the first chunk changed the second: %s", second)
	}
}
