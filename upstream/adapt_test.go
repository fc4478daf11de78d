package upstream

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hayula/gateway/core"
)

// TestBadEventSnippetKeepsCharactersWhole checks that the excerpt of a line or event the
// adapter cannot read, which reaches the client in the stream's error event, is cut between
// characters: a cut inside one left invalid UTF-8 that the error's JSON encoding turned into
// U+FFFD.
func TestBadEventSnippetKeepsCharactersWhole(t *testing.T) {
	bad := strings.Repeat("é", 100) // 200 bytes: byte 120 is the start of a character, 119 is not
	for _, pad := range []string{"", "x"} {
		line := pad + bad
		streams := map[string]Stream{
			"ollama": (&openaiOllama{t: &core.Target{Name: "ol", Model: "m"}, now: fixedNow,
				newID: func() string { return "x" }}).newStream(io.NopCloser(strings.NewReader(line+"\n")), false, core.ReasoningPassthrough),
		}
		a := &openaiSAIF{t: &core.Target{Name: "saif", Model: "m"}, now: fixedNow, newID: func() string { return "x" }}
		r, err := a.stream(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(strings.NewReader("data: " + line + "\n\n"))}, &core.Request{Op: core.OpChat, Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		streams["saif"] = r.Stream
		for name, s := range streams {
			t.Run(name+"/pad"+pad, func(t *testing.T) {
				defer s.Close()
				_, err := s.Next()
				var se *core.StreamError
				if !errors.As(err, &se) {
					t.Fatalf("Next = %v, want a StreamError", err)
				}
				if !utf8.ValidString(se.Message) {
					t.Fatalf("message is not valid UTF-8: %q", se.Message)
				}
				if !strings.HasSuffix(se.Message, "…") || !bytes.Contains([]byte(se.Message), []byte("éé")) {
					t.Fatalf("message lost its excerpt: %q", se.Message)
				}
			})
		}
	}
}
