package jsonx

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// validCases are bodies on both sides of every rule the validating walk checks.
var validCases = []string{
	`{}`, ` { } `, `[]`, `{"a":1}`, `{"a":[1,2,{"b":null}],"c":"x"}`, `[true,false,null]`,
	`{"n":-0.5e+10}`, `{"n":0}`, `{"n":-0}`, `{"n":1E5}`, `{"s":"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00"}`,
	`{"s":"` + "\xff\xfe invalid utf-8 is valid JSON" + `"}`, `{"a" : 1 , "b" : [ 1 , 2 ] }`,
	// Invalid.
	``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,"a":1}`, `{"a":1 "b":2}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":+1}`, `{"a":tru}`, `{"a":truex}`,
	`{"a":nul}`, `{"a":"\x"}`, `{"a":"\u12G4"}`, `{"a":"\u12"}`, `{"a":"\'"}`, "{\"a\":\"\x01\"}",
	"{\"a\":\"tab\tinside\"}", `{"a":"unterminated}`, `{"a":1}x`, `{"a":1}{}`, `{a:1}`, `{'a':1}`,
	`{"a":[1}`, `{"a":{]}`, `[1]]`, `"\\"`, `"a\\\"`, `{"a":"ends with backslash\`,
	`{"long":"` + strings.Repeat("0123456789abcdef", 8) + `\n` + strings.Repeat("x", 13) + `"}`,
	`{"long":"` + strings.Repeat("0123456789abcdef", 8) + "\x1f" + `"}`,
	strings.Repeat("[", 100) + strings.Repeat("]", 100),
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
		}
	}
	// Nesting deeper than maxDepth is refused (encoding/json would still take it).
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	if Valid([]byte(deep)) {
		t.Error("nesting past maxDepth reported valid")
	}
	if ok := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth); !Valid([]byte(ok)) {
		t.Error("nesting of exactly maxDepth reported invalid")
	}
}

type kv struct{ Key, Value string }

func walk(b []byte, validate bool) (members []kv, done bool) {
	it := Object(b, validate)
	for {
		k, v, ok := it.Next()
		if !ok {
			return members, it.Done()
		}
		members = append(members, kv{string(k), string(v)})
	}
}

func TestIter(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []kv
		done bool
	}{
		{"members as sub-slices", ` {"a" : 1, "b":[1, "]"] ,"c":{"d":"}"}} `,
			[]kv{{`"a"`, `1`}, {`"b"`, `[1, "]"]`}, {`"c"`, `{"d":"}"}`}}, true},
		{"empty", `{}`, nil, true},
		{"not an object", `[1]`, nil, false},
		{"bad value stops the walk", `{"a":1,"b":tru,"c":2}`, []kv{{`"a"`, `1`}}, false},
		{"trailing garbage", `{"a":1} x`, []kv{{`"a"`, `1`}}, false},
		{"missing comma", `{"a":1 "b":2}`, []kv{{`"a"`, `1`}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, done := walk([]byte(tt.body), true)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			if done != tt.done {
				t.Errorf("done %v, want %v", done, tt.done)
			}
		})
	}
	t.Run("array", func(t *testing.T) {
		it := Array([]byte(`[1, {"a":[2]}, "x"]`), false)
		var got []string
		for {
			k, v, ok := it.Next()
			if !ok {
				break
			}
			if k != nil {
				t.Errorf("array element with key %q", k)
			}
			got = append(got, string(v))
		}
		if diff := cmp.Diff([]string{`1`, `{"a":[2]}`, `"x"`}, got); diff != "" || !it.Done() {
			t.Errorf("elements (-want +got):\n%s (done %v)", diff, it.Done())
		}
	})
}

var unquoteCases = []string{
	`""`, `"plain"`, `"é ث 😀"`, `"\n\t\"\\\/\b\f\r"`, `"\u0041\u00e9\u0627"`, `"\ud83d\ude00"`,
	`"\ud83d"`, `"\ud83d x"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
	"\"\xff\xfe\xc3 bad utf-8\"", "\"\xed\xa0\x80 encoded surrogate\"", `"\'"`, `"\x"`, `"\u12"`,
	"\"ctl\x01\"", `"a"b"`, `"a" `, ` "a"`, `"unterminated`, `"\"`, `"`, ``, `x`, `"\u00zz"`,
}

func TestUnquoteMatchesEncodingJSON(t *testing.T) {
	for _, c := range unquoteCases {
		checkUnquote(t, []byte(c))
	}
}

func checkUnquote(t *testing.T, q []byte) {
	t.Helper()
	var want string
	err := json.Unmarshal(q, &want)
	// Unquote takes exactly one literal; encoding/json also allows whitespace around it.
	exact := len(q) > 0 && q[0] == '"' && bytes.Equal(bytes.TrimSpace(q), q)
	got, ok := Unquote(q)
	if exact && ok != (err == nil) || !exact && ok {
		t.Fatalf("Unquote(%q) ok=%v, encoding/json error %v", q, ok, err)
	}
	if ok && got != want {
		t.Fatalf("Unquote(%q) = %q, encoding/json gives %q", q, got, want)
	}
	// Plain says the literal's text is the string, byte for byte, and says it of every literal
	// without an escape whose text is valid UTF-8.
	s, plain, okPlain := UnquotePlain(q)
	if s != got || okPlain != ok {
		t.Fatalf("UnquotePlain(%q) = %q, %v; Unquote %q, %v", q, s, okPlain, got, ok)
	}
	if want := ok && bytes.IndexByte(q[1:len(q)-1], '\\') < 0 && utf8.Valid(q[1:len(q)-1]); plain != want {
		t.Fatalf("UnquotePlain(%q) plain=%v, want %v", q, plain, want)
	}
	if plain && s != string(q[1:len(q)-1]) {
		t.Fatalf("UnquotePlain(%q) plain, but %q is not its text", q, s)
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) > maxDepth {
			return // deep input is refused on purpose
		}
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
		members, done := walk(b, true)
		if isObject(b) && json.Valid(b) != done {
			t.Fatalf("walk of %q done=%v, encoding/json Valid %v", b, done, json.Valid(b))
		}
		if !done {
			return
		}
		// A validated walk's members are what encoding/json sees, in order.
		plain, _ := walk(b, false)
		if diff := cmp.Diff(members, plain); diff != "" {
			t.Fatalf("validating and plain walks differ (-validating +plain):\n%s", diff)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("walk done but encoding/json: %v", err)
		}
		for _, kv := range members {
			var k string
			if err := json.Unmarshal([]byte(kv.Key), &k); err != nil {
				t.Fatalf("key %s: %v", kv.Key, err)
			}
			if !json.Valid([]byte(kv.Value)) {
				t.Fatalf("value %s of %s is not valid JSON", kv.Value, kv.Key)
			}
		}
	})
}

func FuzzUnquote(f *testing.F) {
	for _, c := range unquoteCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		checkUnquote(t, q)
	})
}

// FuzzExact holds Exact to its definition, for any literal StringAt accepts: exactly when
// AppendString writes the literal's text back as the literal.
func FuzzExact(f *testing.F) {
	for _, c := range append(unquoteCases, `"token"`, `" ممكن"`, `"a\u2028"`, "\"\u2028\"", "\"\xff\"", "\"\xe2\x80\"",
		`"<b>&</b>"`, `"\u003cb\u003e"`, `"\n\n"`, `"a\"b\\c"`, `"\/"`, `"\u001f\u001F"`, `"\u0008"`, `"\u007f"`,
		`""`, `"😀 ok"`, "\"\xf0\x9f\x98\"", `"\ud83d\ude00"`, "\"a\xe2\x80\xa9\"", "\"\x7f\"") {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		got := Exact(q)
		end, ok := StringAt(q, 0)
		if !ok || end != len(q) {
			if got {
				t.Fatalf("Exact(%q), which is not one JSON string", q)
			}
			return
		}
		s, ok := Unquote(q)
		if !ok {
			t.Fatalf("StringAt takes %q, Unquote does not", q)
		}
		w := AppendString(nil, s, false)
		if want := bytes.Equal(w, q); got != want {
			t.Fatalf("Exact(%q) = %v, but AppendString writes its text %q", q, got, w)
		}
	})
}

func BenchmarkValid1KB(b *testing.B) {
	body := []byte(`{"model":"saif","messages":[{"role":"system","content":"You are a helpful assistant."},` +
		`{"role":"user","content":"` + strings.Repeat(`Hello, world. ممكن تساعدني؟ \n`, 30) + `"}],"max_tokens":256}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if !Valid(body) {
			b.Fatal("invalid")
		}
	}
}

func TestOffset(t *testing.T) {
	b := []byte(` { "a" : 1 , "b":"x" ,"c" : [ 1 ,2] } `)
	it := Object(b, true)
	var got []string
	for {
		_, v, ok := it.Next()
		if !ok {
			break
		}
		end := it.Offset()
		if &b[end-1] != &v[len(v)-1] {
			t.Fatalf("Offset %d is not where %q ends", end, v)
		}
		got = append(got, string(b[end-len(v):end]))
	}
	if want := []string{"1", `"x"`, "[ 1 ,2]"}; !slices.Equal(got, want) {
		t.Fatalf("values %q, want %q", got, want)
	}
}

// TestShortStringsAtEveryLength: a string of every length to 40 bytes (past skipString's four
// words), ending its buffer or followed by up to nine bytes, with each kind of byte shortEnd and
// quotedEnd stop at (a backslash, a control character, a byte above 0x7f: valid UTF-8 and not)
// at each place, is skipped and scanned as the long way reads it: the string's end where
// encoding/json finds it, and, strict, valid only where encoding/json and UTF-8 agree. Cut
// before its closing quote, or in its last escape, it is no string.
func TestShortStringsAtEveryLength(t *testing.T) {
	specials := []string{"", `\\`, `\"`, `\n`, "\x01", "\xc3\xa9", "\xff"}
	for n := 0; n <= 40; n++ {
		for _, sp := range specials {
			for p := 0; p <= n; p++ {
				if sp == "" && p > 0 {
					break
				}
				text := strings.Repeat("a", p) + sp + strings.Repeat("a", n-p)
				for _, cut := range []string{`"` + text, `"` + text + `\\`, `"` + text[:p] + sp[:len(sp)/2]} {
					if got, ok := skipString([]byte(cut), 0); ok {
						t.Errorf("skipString(%q) = %d, true; want false", cut, got)
					}
				}
				for tail := 0; tail <= 9; tail++ {
					b := []byte(`"` + text + `"` + strings.Repeat("}", tail))
					end := len(b) - tail
					if got, ok := skipString(b, 0); !ok || got != end {
						t.Errorf("skipString(%q) = %d, %v; want %d", b, got, ok, end)
					}
					for _, strict := range []bool{false, true} {
						want := json.Valid(b[:end]) && (!strict || utf8.Valid(b[:end]))
						got, ok := scanString(b, 0, strict)
						if ok != want || ok && got != end {
							t.Errorf("scanString(%q, strict %v) = %d, %v; want %d, %v", b, strict, got, ok, end, want)
						}
					}
				}
			}
		}
	}
}

// TestTwoByteRunesAcrossWords: text of ASCII runs and two-byte runes, whole or split (a lone lead,
// a lone continuation), in every order and at every offset within the words the strict scan reads,
// is valid where utf8.Valid says so. A lead that ends one word must meet its continuation at the
// start of the next, not at the start of the next word with a high byte.
func TestTwoByteRunesAcrossWords(t *testing.T) {
	pieces := []string{"\xc3\xa9", "\xc3", "\xa9", "\xd8\xa3"}
	for pad := 0; pad < 17; pad++ {
		for _, a := range pieces {
			for _, b := range pieces {
				for gap := 0; gap < 17; gap += 4 {
					text := strings.Repeat("x", pad) + a + strings.Repeat("y", gap) + b + strings.Repeat("z", 9)
					q := []byte(`"` + text + `"`)
					want := utf8.ValidString(text)
					if end, ok := scanString(q, 0, true); ok != want || ok && end != len(q) {
						t.Errorf("scanString(%q, strict) = %d, %v; want %v", q, end, ok, want)
					}
				}
			}
		}
	}
}
