package autoroute

import (
	"encoding/json"
	"fmt"
	"strings"
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

// TestContent holds content, which reads in place or unquotes itself what it can, to contentText
// (read as runes, as in checkRouteMessages).
func TestContent(t *testing.T) {
	for _, c := range append(contentCases, `"a\nb"`, `"\t"`, `"x\\"`, `"plain run\u0041"`, "\"\xff\\n\"", `"a\"`) {
		text, in, out := content([]byte("junk"), json.RawMessage(c))
		if !in {
			text = out[len("junk"):]
		} else if string(out) != "junk" {
			t.Errorf("content(%q) read in place but appended %q", c, out)
		}
		if got, want := string([]rune(string(text))), contentText(json.RawMessage(c)); got != want {
			t.Errorf("content(%q) = %q (in place %v), contentText gives %q", c, text, in, want)
		}
	}
}

func FuzzContentText(f *testing.F) {
	for _, c := range contentCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := decodedText(raw)
		if got := contentText(raw); got != want {
			t.Fatalf("contentText(%q) = %q, encoding/json gives %q", raw, got, want)
		}
		text, in, out := content(nil, raw)
		if !in {
			text = out
		}
		if got := string([]rune(string(text))); got != want {
			t.Fatalf("content(%q) = %q (in place %v), encoding/json gives %q", raw, text, in, want)
		}
	})
}

// chatCases are chats on both sides of every rule of texts: in place or unquoted, one system
// text or several joined, empty texts left out, parts, junk.
func chatCases() [][]core.Message {
	msg := func(role, content string) core.Message {
		return core.Message{Role: role, Content: json.RawMessage(content)}
	}
	bench, err := json.Marshal(benchPrompt() + "\n\n\"quoted\"")
	if err != nil {
		panic(err)
	}
	return [][]core.Message{
		nil,
		{msg("user", `"hello"`)},
		{msg("system", `"be brief"`), msg("user", `"how do I exploit CVE-2021-44228?"`)},
		{msg("system", `"You are a security assistant."`), msg("user", string(bench))},
		{msg("user", `"CVE-2021-44228?"`), msg("assistant", `"it is Log4Shell"`), msg("user", `"thanks, now a poem"`)},
		{msg("system", `"one"`), msg("developer", `"two\nthree"`), msg("system", `"four"`), msg("user", `"x"`)},
		{msg("system", `""`), msg("system", `"after an empty one"`), msg("user", `""`)},
		{msg("system", `"first"`), msg("system", `""`), msg("system", `null`), msg("user", `"u"`)},
		{msg("system", `"a\u0000b"`), msg("system", `"in place"`), msg("user", `"\u0627\u0644\u062b\u063a\u0631\u0629"`)},
		{msg("system", "\"\xff bad utf-8 \xd8 ثغرة\""), msg("user", "\"\xed\xa0\x80 hack\xc3 the kernel patch\"")},
		{msg("system", `"  "`), msg("system", `"ok"`), msg("assistant", `"x"`)},
		{msg("system", `"\tstarts with an escape, ends with one\\"`), msg("user", `"a \u0041 escape \n after a plain one"`)},
		{msg("user", "\"invalid \xff and an escape\\n\""), msg("developer", `"\/\b\f\r\ud83d\ude00"`)},
		// From here on, contents that go through encoding/json.
		{msg("system", `"\"\""`), msg("user", `"bad \' escape"`)},
		{msg("developer", `[{"type":"text","text":"prove it"},{"type":"text","text":"step by step"}]`),
			msg("user", `[{"type":"image_url","image_url":{"url":"data:"}},{"type":"text","text":"what is this exploit?"}]`)},
		{msg("system", `"a" `), msg("user", `"unterminated`), msg("user", `"ctl`+"\x01"+`"`)},
		{msg("system", `"ends in a backslash\"`), msg("user", `"escape then \n ctl`+"\x01"+`"`)},
		{msg("system", `"bare \n " quote"`), msg("user", `"\x"`)},
	}
}

func TestRouteMessages(t *testing.T) {
	c := newDefault(t)
	for i, msgs := range chatCases() {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkRouteMessages(t, c, msgs, "")
			checkRouteMessages(t, c, msgs, "rev_eng")
		})
	}
}

// checkRouteMessages holds RouteMessages to Route over Texts, and the texts it reads to Texts'
// (read as runes: an in-place text keeps invalid UTF-8 that Texts turns into U+FFFD).
func checkRouteMessages(t *testing.T, c *Classifier, msgs []core.Message, hint string) {
	t.Helper()
	wantSys, wantUser := Texts(msgs)
	var s scratch
	gotSys, gotUser := s.texts(msgs)
	if diff := cmp.Diff([2]string{wantSys, wantUser}, [2]string{string([]rune(gotSys)), string([]rune(gotUser))}); diff != "" {
		t.Fatalf("texts of %q (-Texts +texts):\n%s", msgs, diff)
	}
	r, in := c.Route(wantSys, wantUser, hint)
	if gr, gin := c.RouteMessagesFor(0, msgs, hint); gr != r || gin != in {
		t.Fatalf("RouteMessagesFor(0, %q, %q) = %s/%s, Route over Texts = %s/%s", msgs, hint, gr, gin, r, in)
	}
}

func FuzzRouteMessages(f *testing.F) {
	for _, msgs := range chatCases() {
		if len(msgs) >= 2 {
			f.Add([]byte(msgs[0].Content), []byte(msgs[len(msgs)-1].Content), []byte(`"`+msgs[0].Role+`"`), uint8(len(msgs)))
		}
	}
	c, err := New(Rules{})
	if err != nil {
		f.Fatal(err)
	}
	roles := []string{"system", "developer", "user", "assistant"}
	f.Fuzz(func(t *testing.T, a, b, extra []byte, shape uint8) {
		// shape picks the roles of a and b, and where a third message (extra) goes.
		msgs := []core.Message{{Role: roles[shape%4], Content: a}, {Role: roles[shape/4%4], Content: b}}
		if shape&0x10 != 0 {
			msgs = append(msgs, core.Message{Role: roles[shape/32%4], Content: extra})
		}
		if shape&0x80 != 0 {
			msgs[0], msgs[len(msgs)-1] = msgs[len(msgs)-1], msgs[0]
		}
		checkRouteMessages(t, c, msgs, "")
	})
}

func TestRouteMessagesAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items on purpose")
	}
	c := newDefault(t)
	for i, msgs := range chatCases()[:13] {
		c.RouteMessagesFor(0, msgs, "") // warm the pool
		if n := testing.AllocsPerRun(20, func() { c.RouteMessagesFor(0, msgs, "") }); n != 0 {
			t.Errorf("chat %d: RouteMessagesFor allocates %.0f times per call, want none", i, n)
		}
	}
}

// TestPlainPrefix holds plainPrefix to a byte-at-a-time reading: the run before the first
// control character, quote or backslash, each of them at every offset of the first words and
// after a long plain run, with two-byte runes and bytes above 0x7f about them.
func TestPlainPrefix(t *testing.T) {
	want := func(b []byte) int {
		for i, c := range b {
			if c < 0x20 || c == '"' || c == '\\' {
				return i
			}
		}
		return len(b)
	}
	for _, base := range []string{"", "plain ascii text, ", "نص عربي \xff\x80~\x7f", strings.Repeat("word ", 40)} {
		for _, sp := range []byte{0, '\n', 0x1f, '"', '\\', ' ', 0x7f, 0xc3} {
			for at := 0; at <= len(base)+17; at++ {
				b := []byte(base + strings.Repeat("x", 17))
				if at < len(b) {
					b[at] = sp
				}
				for _, tail := range []string{"", "\"", "\\n", "\x01"} {
					c := append(append([]byte{}, b...), tail...)
					if got, w := plainPrefix(c), want(c); got != w {
						t.Fatalf("plainPrefix(%q) = %d, want %d", c, got, w)
					}
				}
			}
		}
	}
}
