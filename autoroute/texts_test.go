package autoroute

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hayula/gateway/core"
)

func TestTexts(t *testing.T) {
	msg := func(role, content string) core.Message {
		return core.Message{Role: role, Content: json.RawMessage(content)}
	}
	tests := []struct {
		name             string
		msgs             []core.Message
		system, lastUser string
	}{
		{"plain", []core.Message{msg("system", `"be brief"`), msg("user", `"hello"`)}, "be brief", "hello"},
		{"last user wins", []core.Message{msg("user", `"CVE-2021-44228?"`), msg("assistant", `"it is Log4Shell"`),
			msg("user", `"thanks, now a poem"`)}, "", "thanks, now a poem"},
		{"parts", []core.Message{msg("developer", `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`),
			msg("user", `[{"type":"image_url","image_url":{"url":"data:"}},{"type":"text","text":"what is this?"}]`)},
			"a\nb", "what is this?"},
		{"two system messages", []core.Message{msg("system", `"one"`), msg("system", `"two"`), msg("user", `"x"`)}, "one\ntwo", "x"},
		{"no user", []core.Message{msg("system", `"s"`), msg("assistant", `"a"`)}, "s", ""},
		{"null and junk content", []core.Message{msg("system", `null`), msg("user", `{"oops":1}`)}, "", ""},
		{"empty", nil, "", ""},
		{"escapes", []core.Message{msg("system", `"line\nnext \"q\" \u00e9\ud83d\ude00 \ud83d"`), msg("user", `"a\tb\/c"`)},
			"line\nnext \"q\" \u00e9\U0001F600 \ufffd", "a\tb/c"},
		{"invalid utf-8 and literals", []core.Message{msg("system", "\"\xff ok\""), msg("user", `"bad \' escape"`)},
			"\ufffd ok", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, u := Texts(tt.msgs)
			if diff := cmp.Diff([2]string{tt.system, tt.lastUser}, [2]string{s, u}); diff != "" {
				t.Errorf("Texts (-want +got):\n%s", diff)
			}
		})
	}
}

// contentCases are string contents on both sides of every rule jsonx.Unquote follows.
var contentCases = []string{
	`"plain"`, `""`, `"é ث 😀"`, `"\n\t\"\\\/\b\f\r"`, `"\u0041\u00e9"`, `"\ud83d\ude00"`, `"\ud83d"`,
	`"\ud83d\u0041"`, `"\ude00\ud83d"`, "\"\xff\xfe\xc3\"", "\"\xed\xa0\x80\"", `"\'"`, `"\x"`, `"\u12"`,
	"\"ctl\x01\"", `"a"b"`, `"a" `, `"unterminated`, `"\"`, `"`, `"\u00zz"`,
	`[{"type":"text","text":"a\nb"},{"type":"input_text","text":"c"}]`, `null`, `{"a":1}`,
}

func TestContentTextMatchesDecoded(t *testing.T) {
	for _, c := range contentCases {
		if got, want := contentText(json.RawMessage(c)), decodedText(json.RawMessage(c)); got != want {
			t.Errorf("contentText(%q) = %q, encoding/json gives %q", c, got, want)
		}
	}
}

func FuzzContentText(f *testing.F) {
	for _, c := range contentCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := contentText(raw), decodedText(raw); got != want {
			t.Fatalf("contentText(%q) = %q, encoding/json gives %q", raw, got, want)
		}
	})
}
