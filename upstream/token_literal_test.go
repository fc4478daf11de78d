package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// FuzzTokenChunkMatchesText holds the chunks of a translated stream, which copy a plain token's
// literal into the chunk (plainToken), to the chunk written from the token's text as
// json.Unmarshal reads it. Each token goes as an encoder writes it (escaped: <, >, &, a newline,
// U+2028, invalid UTF-8) and, where JSON allows, as its bytes between quotes: both are the same
// text, so both must give the same chunks, byte for byte, through Ollama's /api/chat lines and
// SAIF's events, in a stream's first chunk (with its role) and in a later one.
func FuzzTokenChunkMatchesText(f *testing.F) {
	for _, s := range []string{" token", " ممكن تساعدني", "a\u2028b", "a\u2029", "<b>&amp;", "\n", `"`, `\`, "😀",
		"\xff", "a\xe2\x80", "\xf0\x9f\x98", "x\ty", "", "\u00e9\u00e9\u00e9\u00e9\u00e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		enc, err := json.Marshal(tok)
		if err != nil {
			t.Fatal(err)
		}
		lits := [][]byte{enc}
		if raw := []byte(`"` + tok + `"`); !strings.Contains(tok, `\`) && json.Valid(raw) && !bytes.Equal(raw, enc) {
			lits = append(lits, raw)
		}
		var want string
		if err := json.Unmarshal(enc, &want); err != nil {
			t.Fatal(err)
		}
		var ollama, saif [][]byte
		for _, lit := range lits {
			var got string
			if err := json.Unmarshal(lit, &got); err != nil || got != want {
				t.Fatalf("%q reads as %q, %q as %q", enc, want, lit, got)
			}
			o := ollamaChunks(t, lit)
			s := saifChunks(t, lit)
			if ollama != nil && !equalChunks(ollama, o) {
				t.Errorf("through Ollama, %q gave\n%q\nand %q gave\n%q", lits[0], ollama, lit, o)
			}
			if saif != nil && !equalChunks(saif, s) {
				t.Errorf("through SAIF, %q gave\n%q\nand %q gave\n%q", lits[0], saif, lit, s)
			}
			ollama, saif = o, s
		}
		// What each chunk must be, from the text: Ollama's envelope is known here.
		created := fixedNow().Unix()
		wantFirst := appendChunkOf(nil, "chatcmpl-x", created, "m", "assistant", want, true, "", nil, nil, nil, nil, nil)
		if !bytes.Equal(ollama[0], wantFirst) {
			t.Errorf("Ollama's first chunk for %q:\n%s\nwant\n%s", tok, ollama[0], wantFirst)
		}
		if want != "" {
			wantNext := appendChunkOf(nil, "chatcmpl-x", created, "m", "", want, true, "", nil, nil, nil, nil, nil)
			if !bytes.Equal(ollama[1], wantNext) {
				t.Errorf("Ollama's second chunk for %q:\n%s\nwant\n%s", tok, ollama[1], wantNext)
			}
		}
		// A whole answer's completion, its text kept as the literal (completionMessage's lit)
		// where plainToken takes it, and written from the text, must be the same bytes, with
		// and without a reasoning split (which reads the text).
		for _, lit := range lits {
			if !plainToken(lit) {
				continue
			}
			for _, r := range []core.Reasoning{core.ReasoningPassthrough, core.ReasoningThinkTags} {
				c := completionJSON{ID: "chatcmpl-x", Object: "chat.completion", Created: 1, Model: "m",
					Choices: []choiceJSON{{Message: completionMessage(r, "", lit, "", nil), FinishReason: "stop"}}}
				got := appendCompletion(nil, &c)
				c.Choices[0].Message = completionMessage(r, want, nil, "", nil)
				if w := appendCompletion(nil, &c); !bytes.Equal(got, w) {
					t.Errorf("the completion of %q (reasoning %v):\n%s\nfrom its text:\n%s", lit, r, got, w)
				}
			}
		}
		for i, c := range saif[:2] {
			var ch chunkJSON
			if err := json.Unmarshal(c, &ch); err != nil || len(ch.Choices) != 1 {
				t.Fatalf("SAIF's chunk %d for %q: %s (%v)", i, tok, c, err)
			}
			if d := ch.Choices[0].Delta; want != "" && (d.Content == nil || *d.Content != want) {
				t.Errorf("SAIF's chunk %d for %q: %s, want the content %q", i, tok, c, want)
			}
		}
	})
}

// ollamaChunks is every chunk of a stream of two token lines with content lit, then the done line.
func ollamaChunks(t *testing.T, lit []byte) [][]byte {
	t.Helper()
	line := `{"model":"m","created_at":"t","message":{"role":"assistant","content":` + string(lit) + `},"done":false}` + "\n"
	a := &openaiOllama{t: &core.Target{Name: "o", Model: "m"}, now: fixedNow, newID: func() string { return "x" }}
	return drainChunks(t, a.newStream(io.NopCloser(strings.NewReader(line+line+ollamaDoneLine)), true, core.ReasoningPassthrough))
}

// saifChunks is every chunk of a SAIF stream of two text events with text lit, then the done event.
func saifChunks(t *testing.T, lit []byte) [][]byte {
	t.Helper()
	ev := `data: {"text":` + string(lit) + `,"specialist":"webapp"}` + "\n\n"
	a := &openaiSAIF{t: &core.Target{Name: "saif", Model: "saif"}, now: fixedNow, newID: func() string { return "x" }}
	resp := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(ev + ev + saifDoneEvent))}
	r, err := a.stream(resp, &core.Request{Op: core.OpChat, Stream: true, IncludeUsage: true})
	if err != nil {
		t.Fatal(err)
	}
	return drainChunks(t, r.Stream)
}

// drainChunks reads s to its end, copying each chunk (a Stream's slice is valid until its next Next).
func drainChunks(t *testing.T, s Stream) [][]byte {
	t.Helper()
	var out [][]byte
	if _, err := eachChunk(s, func(c []byte) bool { out = append(out, bytes.Clone(c)); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

func equalChunks(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
