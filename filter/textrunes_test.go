package filter

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hayula/gateway/internal/utf8x"
)

// runeByRune is the count by its definition: every rune of s through add, none skipped. textRunes
// (letters of a run skipped, eight bytes at a time where ASCII; spaces and first letters written
// out; runes decoded in place) must agree with it.
func runeByRune(s string, afterPart, beforePart bool) int {
	c := counter{tally: tally{absorb: true}}
	if afterPart {
		c.span, c.saved = spanStart, c.tally
	}
	for _, r := range s {
		c.add(r)
	}
	if beforePart && c.span != spanNone {
		c.tally = c.saved
	}
	return c.end()
}

// checkTextRunes holds both ways in (a decoded string, as parts are, and a JSON literal read in
// place, as string contents are) to runeByRune.
func checkTextRunes(t *testing.T, s string) {
	t.Helper()
	for _, edge := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		if got, want := partTokensMin(s, edge[0], edge[1]), runeByRune(s, edge[0], edge[1]); got != want {
			t.Fatalf("partTokensMin(%q, %v, %v) = %d, rune by rune %d", s, edge[0], edge[1], got, want)
		}
	}
	if !utf8.ValidString(s) {
		return // encoding/json would write U+FFFD, and the literal's text is not s
	}
	q, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := rawTextTokensMin(q, false); !ok || got != runeByRune(s, false, false) {
		t.Fatalf("rawTextTokensMin(%s) = %d, %v; rune by rune %d", q, got, ok, runeByRune(s, false, false))
	}
}

// TestTextRunesAgreesWithAdd puts together texts from pieces that move the count's state every
// way (words of every length around the eight-byte word, spaces, newlines and slashes, numbers,
// punctuation and apostrophes, candidate added tokens, Arabic, Chinese, Japanese, Korean, emoji,
// marks, invalid bytes) and holds textRunes to add, rune by rune.
func TestTextRunesAgreesWithAdd(t *testing.T) {
	pieces := []string{
		"a", "I", "word", "preparing", "Application", "abcdefghijklmnopqrstuvwxyz", " ", "  ", "\t", "\n", "\r\n",
		"\n/", "//", "/", "12", "2024", "3.14", ".", ",", "!?", "don't", "'", "(x)", "<|im_end|>", "[INST]", "<", ">",
		"]", "<think>", "</think>", "بعد", "ذلك", "أريد", "؟", "كَتَبَ", "我正在为", "こんにちは", "カタカナ", "한국어",
		"😀", "é", "ж", "\u0301", "\u00a0", "\u200b", "\u3000", "\xff", "\xc3", "\xe4\xb8", "\xed\xa0\x80", "\u4e00", "\u9fff",
		"\u3041", "\u3096", "\u30a1", "\u30fa", "\uac00", "\ud7a3", "\u309b", "\u30fb", "\u3007", "\uff21",
	}
	r := rand.New(rand.NewPCG(7, 3))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(24) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		checkTextRunes(t, b.String())
	}
	for _, s := range []string{
		strings.Repeat("I am preparing a short talk for my team about how we ship our web application. ", 40),
		strings.Repeat("بعد ذلك أريد أن أشرح الفرق بين الطريقتين بطريقة بسيطة للزملاء الجدد. ", 40),
		strings.Repeat("我正在为我的团队准备一个关于我们如何发布网络应用程序的简短演讲。", 40),
		strings.Repeat("abcdefgh", 100) + "1" + strings.Repeat("ABCDEFGH", 100),
	} {
		checkTextRunes(t, s)
	}
}

func FuzzTextRunes(f *testing.F) {
	f.Add("I am preparing a talk, then 2024 <|im_end|> بعد ذلك 我正在 😀\n/x don't")
	f.Add("abcdefghijklmnop qrstuvwxyzABCDEF")
	f.Fuzz(func(t *testing.T, s string) {
		checkTextRunes(t, s)
	})
}

// TestWideLetters checks every rune utf8x.WideLetter takes (which inLetterRun takes for a letter)
// against classifyRune.
func TestWideLetters(t *testing.T) {
	n := 0
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if utf8x.WideLetter(r) {
			n++
			if got := classifyRune(r); got != classLetter {
				t.Fatalf("utf8x.WideLetter(%U), but classifyRune says %d", r, got)
			}
		}
	}
	if n < 30000 {
		t.Fatalf("utf8x.WideLetter took %d runes, want the CJK, kana and Hangul blocks", n)
	}
}
