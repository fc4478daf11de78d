package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// textCases are objects on both sides of what Text refuses beyond Object(b, true), with what
// FixText makes of them: the body it leaves and its error (nil: none).
var textCases = []struct {
	in, fixed string
	err       *TextError
}{
	{`{"a":"plain","b":[1,{"c":"\u00e9\uD83D\uDE00"}]}`, "", nil},
	{`{"a":"` + "h\u00e9llo \u4e16\u754c \U0001F600" + `"}`, "", nil},
	{`{"a":"\\ud800"}`, "", nil}, // an escaped backslash, then text
	{`{"a":"\ud800"}`, `{"a":"\ufffd"}`, nil},
	{`{"a":"\uDC00x"}`, `{"a":"\ufffdx"}`, nil},
	{`{"a":"\ud800\u0041"}`, `{"a":"\ufffd\u0041"}`, nil},
	{`{"a":"\ud800\ud800\udc00"}`, `{"a":"\ufffd\ud800\udc00"}`, nil},
	{`{"\udbff":["\ud800"]}`, `{"\ufffd":["\ufffd"]}`, nil},
	{`{"a":"` + "\xff" + `"}`, "", &TextError{Offset: 6}},
	{`{"a":"ok","` + "\xc3" + `":1}`, "", &TextError{Offset: 11}},
	{`{"a":"` + "\xed\xa0\x80" + `"}`, "", &TextError{Offset: 6}},                              // a surrogate in UTF-8
	{`{"a":"` + strings.Repeat("abcdefgh", 3) + "\xf0\x9f" + `"}`, "", &TextError{Offset: 30}}, // cut short
	{`{"a":1}` + "\x80", "", &TextError{Offset: 7}},
	{`{"a":"0000000` + "\xd1" + `00000000"}`, "", &TextError{Offset: 13}},   // a lead ends a word, no continuation
	{`{"a":"0000000` + "\xc3\xa9" + `0000000` + "\xd0\xb6" + `"}`, "", nil}, // runes across words
	{`{"a":"` + "\xc1\xbf" + `0000000"}`, "", &TextError{Offset: 6}},        // overlong
	{`{"a":"0` + "\xa9" + `000000000000"}`, "", &TextError{Offset: 7}},      // a continuation alone
	{`{"a":` + strings.Repeat("[", 7) + strings.Repeat("]", 7) + `}`, "", nil},
	{`{"a":` + strings.Repeat("[", 8) + strings.Repeat("]", 8) + `}`, "", &TextError{Offset: 12, Deep: true, Depth: 8}},
	{`{"a":[[]],"b":[{"c":{"d":[[[[{}]]]]}}]}`, "", &TextError{Offset: 29, Deep: true, Depth: 8}},
	{`{"a":"[[[[[[[[[[[[[[["}`, "", nil}, // brackets in a string
	// Inside a container a walk may enter (Enter) rather than take whole:
	{`{"a":[{"b":"\ud800"}]}`, `{"a":[{"b":"\ufffd"}]}`, nil},
	{`{"a":[{"\udc00":1}]}`, `{"a":[{"\ufffd":1}]}`, nil},
	{`{"a":{"` + "\xff" + `":1}}`, "", &TextError{Offset: 7}},
	{`{"a":[{"b":"x` + "\xc3" + `"}]}`, "", &TextError{Offset: 13}},
	{`{"a":[{"b":` + strings.Repeat("[", 5) + strings.Repeat("]", 5) + `}]}`, "", nil},
	{`{"a":[{"b":` + strings.Repeat("[", 6) + strings.Repeat("]", 6) + `}]}`, "", &TextError{Offset: 16, Deep: true, Depth: 8}},
}

const textDepth = 8

func TestFixText(t *testing.T) {
	for _, tt := range textCases {
		t.Run(tt.in, func(t *testing.T) {
			b := []byte(tt.in)
			err := FixText(b, textDepth)
			var got *TextError
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("error %T", err)
			}
			if diff := cmp.Diff(tt.err, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			want := tt.fixed
			if want == "" {
				want = tt.in
			}
			if diff := cmp.Diff(want, string(b)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

// TestText: the strict walk takes exactly the objects FixText neither refuses nor changes.
func TestText(t *testing.T) {
	for _, tt := range textCases {
		t.Run(tt.in, func(t *testing.T) {
			_, done := walkText([]byte(tt.in), textDepth)
			enteringAsWhole(t, []byte(tt.in), func(b []byte) Iter { return Text(b, textDepth) }, "Text")
			if want := tt.err == nil && tt.fixed == ""; done != want {
				t.Errorf("walk done = %v, want %v", done, want)
			}
		})
	}
}

func walkText(b []byte, depth int) (n int, done bool) {
	it := Text(b, depth)
	for {
		if _, _, ok := it.Next(); !ok {
			return n, it.Done()
		}
		n++
	}
}

// walkEntering walks it as walkMembers does, but enters every object and array value (Enter,
// Resume) instead of taking it whole, down to the scalars, which it returns with their keys: a
// walk that reads a container member by member must end as one that takes it whole ends (the
// server reads a chat body's messages so).
func walkEntering(it *Iter) (leaves []kv, done bool) {
	for {
		k, ok := it.Key()
		if !ok {
			return leaves, it.Done()
		}
		if c := it.At(); c != '{' && c != '[' {
			v, ok := it.Value()
			if !ok {
				return leaves, false
			}
			leaves = append(leaves, kv{string(k), string(v)})
			continue
		}
		inner, ok := it.Enter()
		if !ok {
			return leaves, false
		}
		more, done := walkEntering(&inner)
		leaves = append(leaves, more...)
		if !done || !it.Resume(&inner) {
			return leaves, false
		}
	}
}

// enteringAsWhole fails t unless walkEntering over the walk start makes of b ends as walkMembers
// does, and hands out the scalars a walk over each value taken whole finds when it ends well.
func enteringAsWhole(t *testing.T, b []byte, start func([]byte) Iter, what string) {
	t.Helper()
	_, want := walkMembers(start(b))
	it := start(b)
	leaves, got := walkEntering(&it)
	if got != want {
		t.Fatalf("%s of %q: entering every container done=%v, taking values whole %v", what, b, got, want)
	}
	if !got {
		return
	}
	if diff := cmp.Diff(scalarsOf(Object(b, false)), leaves); diff != "" {
		t.Fatalf("%s of %q: scalars (-taken whole +entered):\n%s", what, b, diff)
	}
}

// scalarsOf is what walkEntering hands out of a well-formed container: its scalars with their
// keys, in order, found by taking each value whole and walking it again.
func scalarsOf(it Iter) (leaves []kv) {
	for {
		k, v, ok := it.Next()
		if !ok {
			return leaves
		}
		switch v[0] {
		case '{':
			leaves = append(leaves, scalarsOf(Object(v, false))...)
		case '[':
			leaves = append(leaves, scalarsOf(Array(v, false))...)
		default:
			leaves = append(leaves, kv{string(k), string(v)})
		}
	}
}

// FuzzText holds the strict walk to FixText and encoding/json: it takes an object exactly when
// encoding/json takes it and FixText neither refuses nor repairs it; after a repair it takes
// the repaired object, which encoding/json reads as it read the original.
func FuzzText(f *testing.F) {
	for _, c := range textCases {
		f.Add([]byte(c.in))
	}
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fixed := bytes.Clone(b)
		err := FixText(fixed, textDepth)
		_, done := walkText(b, textDepth)
		enteringAsWhole(t, b, func(b []byte) Iter { return Text(b, textDepth) }, "Text")
		valid := json.Valid(b) && isObject(b)
		if want := valid && err == nil && bytes.Equal(fixed, b); done != want {
			t.Fatalf("walk of %q done=%v; encoding/json %v, FixText %v, repaired %v", b, done, valid, err, !bytes.Equal(fixed, b))
		}
		if err != nil || !valid {
			return
		}
		if _, done := walkText(fixed, textDepth); !done {
			t.Fatalf("walk refuses %q, FixText's repair of %q", fixed, b)
		}
		var before, after any
		if decodeNumbers(b, &before) != nil || decodeNumbers(fixed, &after) != nil {
			t.Fatalf("%q or %q does not decode", b, fixed)
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Fatalf("decoded (-original +repaired):\n%s", diff)
		}
	})
}

// writtenCases are texts Written is for, nesting up to the depths writtenAsText walks them at
// and past them, with brackets, escaped quotes and backslashes in strings, keys among them.
var writtenCases = []string{
	`{"a":[[[]]],"b":{"c":[{"d":"]]]\"[[[\\"}]},"[{\"":[{}]}`,
	`{"a":` + strings.Repeat(`[{"b":`, 40) + `"x"` + strings.Repeat(`}]`, 40) + `,"c":1}`,
	`{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`,
	`{"a":1,"b":` + strings.Repeat("[", maxDepth+3) + strings.Repeat("]", maxDepth+3) + `,"c":2}`,
	` {"a" : [ [ ] ] , "b" : "\u00e9\ud83d\ude00" } ` + "\n",
}

// writtenDepths are the depths writtenAsText walks a text at.
var writtenDepths = []int{0, 1, 2, 3, 4, textDepth, 42, 81, maxDepth, maxDepth + 1}

func walkMembers(it Iter) (members []kv, done bool) {
	for {
		k, v, ok := it.Next()
		if !ok {
			return members, it.Done()
		}
		members = append(members, kv{string(k), string(v)})
	}
}

// writtenAsText fails t unless Written, at each of writtenDepths, hands out of b what Text
// hands out at that depth, and ends as it ends, when b is a text Written is for: valid JSON that
// FixText neither refuses nor repairs but for its depth. Any other b it walks only to see that
// it does not panic.
func writtenAsText(t *testing.T, b []byte) {
	fixed := bytes.Clone(b)
	text := json.Valid(b) && FixText(fixed, math.MaxInt) == nil && bytes.Equal(fixed, b)
	for _, depth := range writtenDepths {
		got, gotDone := walkMembers(Written(b, depth))
		if !text {
			it := Written(b, depth)
			walkEntering(&it) // it must not panic
			continue
		}
		enteringAsWhole(t, b, func(b []byte) Iter { return Written(b, depth) }, fmt.Sprintf("Written at depth %d", depth))
		enteringAsWhole(t, b, func(b []byte) Iter { return Text(b, depth) }, fmt.Sprintf("Text at depth %d", depth))
		want, wantDone := walkMembers(Text(b, depth))
		if diff := cmp.Diff(want, got); diff != "" || gotDone != wantDone {
			t.Fatalf("%q at depth %d: done %v, Text's %v; members (-Text +Written):\n%s", b, depth, gotDone, wantDone, diff)
		}
	}
}

// TestWrittenMatchesText: Written takes of a text what Text takes of it, to any depth.
func TestWrittenMatchesText(t *testing.T) {
	for _, c := range writtenCases {
		writtenAsText(t, []byte(c))
	}
	for _, c := range textCases {
		writtenAsText(t, []byte(c.in))
	}
	for _, c := range validCases {
		writtenAsText(t, []byte(c))
	}
}

func FuzzWrittenMatchesText(f *testing.F) {
	for _, c := range writtenCases {
		f.Add([]byte(c))
	}
	for _, c := range textCases {
		f.Add([]byte(c.in))
	}
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(writtenAsText)
}

// decodeNumbers is json.Unmarshal with numbers kept as json.Number, which any number JSON allows
// decodes to (1e1000 is past a float64).
func decodeNumbers(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// TestStringScanAgrees holds the string scan's word-at-a-time paths (the first word's end, the
// vector search for quotes and escapes, two-byte runes checked a word at a time, longer ones
// rune by rune) to the rules on strings that cross every word boundary: random mixes of ASCII,
// runes of two to four bytes, invalid bytes, escapes (an escaped quote among them), escaped
// surrogates and control characters, after 0 to 8 bytes of padding. The strict walk takes a
// body exactly when encoding/json does and FixText neither refuses nor repairs it; the plain
// walk exactly when encoding/json does.
func TestStringScanAgrees(t *testing.T) {
	pieces := []string{
		"a", "bcdefgh", " ", "é", "ж", "م", "ؤ", "世", "界", "😀", "\u0800", "\uffff", "\U0010FFFF",
		`\n`, `\"`, `\\`, `\/`, `\u00e9`, `\ud83d\ude00`, `\ud800`, `\udc00x`, `\u12`, `\x`,
		"\xff", "\xc3", "\xc1\xbf", "\xed\xa0\x80", "\xf0\x9f", "\x80", "\x1f", "\t", `"`, `\`,
		"我正在为我的团队准备", "こんにちは、世界。", "😀🚀", "\xe0\x80\xaf", "\xe0\xa0", "\xed\x9f\xbf",
		"\xef\xbf", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf4\x8f\xbf\xbf", "\xf5\x80\x80\x80", "\xe4\xb8",
	}
	r := rand.New(rand.NewPCG(5, 1))
	for n := range 20000 {
		var s strings.Builder
		s.WriteString(`{"k":"`)
		s.WriteString(strings.Repeat("x", n%9))
		for range r.IntN(12) {
			p := pieces[r.IntN(len(pieces))]
			if r.IntN(3) == 0 {
				p = strings.Repeat("y", r.IntN(17)) + p
			}
			s.WriteString(p)
		}
		s.WriteString(`","z":1}`)
		b := []byte(s.String())
		valid := json.Valid(b)
		if got := Valid(b); got != valid {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, valid)
		}
		if _, done := walk(b, true); done != valid {
			t.Fatalf("validating walk of %q done=%v, encoding/json says %v", b, done, valid)
		}
		fixed := bytes.Clone(b)
		err := FixText(fixed, textDepth)
		if _, done := walkText(b, textDepth); done != (valid && err == nil && bytes.Equal(fixed, b)) {
			t.Fatalf("strict walk of %q done=%v; encoding/json %v, FixText %v, repaired %v", b, done, valid, err, !bytes.Equal(fixed, b))
		}
	}
}

// BenchmarkTextScripts is the strict walk over a chat request whose one message is 64 KiB of
// prose in one script, as a long prompt (a document pasted in, a retrieved context) is: ASCII
// words go eight bytes at a time, two-byte runes (Arabic) a word at a time, longer ones (Chinese)
// rune by rune.
func BenchmarkTextScripts(b *testing.B) {
	for _, c := range []struct{ name, prose string }{
		{"english", "I am preparing a short talk for my team about how we ship our web application. "},
		{"arabic", "بعد ذلك أريد أن أشرح الفرق بين الطريقتين بطريقة بسيطة للزملاء الجدد. "},
		{"chinese", "我正在为我的团队准备一个关于我们如何发布网络应用程序的简短演讲。"},
	} {
		body := []byte(`{"model":"saif","messages":[{"role":"user","content":"` +
			strings.Repeat(c.prose, 64<<10/len(c.prose)) + `"}],"max_tokens":256}`)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, done := walkText(body, textDepth); !done {
					b.Fatal("refused")
				}
			}
		})
	}
}

// BenchmarkText1KB is the strict walk over a 1 KB chat request of English and Arabic prose (the
// gateway's decode runs it on every body).
func BenchmarkText1KB(b *testing.B) {
	const prose = "I am preparing a short talk for my team about how we ship our web application. " +
		"ممكن تساعدني أرتب الأفكار بشكل منطقي؟ First I want to compare two ways of logging, then explain " +
		"why the old code called strcpy(buf, input) and whether that matters today. " +
		"بعد ذلك أريد أن أشرح الفرق بين الطريقتين بطريقة بسيطة للزملاء الجدد. "
	body := []byte(`{"model":"saif","messages":[{"role":"system","content":"You are a helpful assistant."},` +
		`{"role":"user","content":"` + strings.Repeat(prose, 3) + `"}],"max_tokens":256,"temperature":0.2}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, done := walkText(body, textDepth); !done {
			b.Fatal("refused")
		}
	}
}

// TestTextEnd holds TextEnd to a byte-at-a-time search for a quote, a backslash or a control
// character, placed at every offset of texts longer and shorter than a word.
func TestTextEnd(t *testing.T) {
	for n := range 20 {
		base := strings.Repeat("aé", n)
		for _, c := range []string{"", `"`, `\`, "\x00", "\x1f", "\n"} {
			for at := 0; at <= len(base); at++ {
				b := []byte(base[:at] + c + base[at:])
				want := len(b)
				for i, x := range b {
					if x == '"' || x == '\\' || x < 0x20 {
						want = i
						break
					}
				}
				if got := TextEnd(b); got != want {
					t.Fatalf("TextEnd(%q) = %d, want %d", b, got, want)
				}
			}
		}
	}
}
