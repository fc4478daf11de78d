package filter

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hayula/gateway/core"
)

func TestClassTable(t *testing.T) {
	for r := rune(0); r < rune(len(classTable)); r++ {
		if got, want := classify(r), classifyRune(r); got != want {
			t.Fatalf("classTable[%U] = %d, classifyRune says %d", r, got, want)
		}
	}
}

// decodedTokensMin is the count of a string content decoded by encoding/json first: what
// rawTextTokensMin must agree with.
func decodedTokensMin(m *core.Message) int {
	var s string
	if json.Unmarshal(bytes.TrimSpace(m.Content), &s) != nil {
		return 0
	}
	if m.Role == "assistant" {
		s = afterThink(s)
	}
	return textTokensMin(s)
}

var rawCases = []string{
	`"plain words, and some punctuation!"`,
	`"line one\nline two\r\n\tindented \"quoted\" back\\slash \/ slash"`,
	`"\u0048\u0065llo \u00e9t\u00E9 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u2028 x"`,
	`"emoji 😀 and a pair \ud83d\ude00 and a lone \ud83d x and \ude00 y"`,
	`"a high surrogate then a non-surrogate \ud83d\u0041"`,
	`"invalid utf-8 ` + "\xff\xfe\xc3" + ` end"`,
	`"a control ` + "\x01" + ` char"`,
	`"bad escape \q"`,
	`"bad hex \u12G4"`,
	`"short \u12"`,
	`"single quote escape \'"`,
	`"bare " quote"`,
	`"trailing" garbage`,
	`"unterminated`,
	`"ends in backslash\"`,
	`"x.\n//\ny"`,
	`"<think>chain of thought</think>\n\nThe answer"`,
	`"\u003cthink\u003eescaped tags\u003c/think\u003e after"`,
	`"12345678 2024-01-15 don't كَتَبَ"`,
	`""`,
	`"\\"`,
}

func TestRawTextTokensMinMatchesDecoded(t *testing.T) {
	for _, c := range rawCases {
		for _, role := range []string{"user", "assistant"} {
			m := &core.Message{Role: role, Content: json.RawMessage(c)}
			if got, want := messageTokensMin(m), decodedTokensMin(m); got != want {
				t.Errorf("%s %s: %d, decoding first gives %d", role, c, got, want)
			}
		}
	}
}

func FuzzRawTextTokensMin(f *testing.F) {
	for _, c := range rawCases {
		f.Add([]byte(c), false)
	}
	f.Fuzz(func(t *testing.T, content []byte, assistant bool) {
		if len(bytes.TrimSpace(content)) == 0 || bytes.TrimSpace(content)[0] != '"' {
			return // only string contents take the raw path
		}
		m := &core.Message{Role: "user", Content: content}
		if assistant {
			m.Role = "assistant"
		}
		if got, want := messageTokensMin(m), decodedTokensMin(m); got != want {
			t.Fatalf("%q: %d, decoding first gives %d", content, got, want)
		}
	})
}
