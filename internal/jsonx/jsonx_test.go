package jsonx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestDelete(t *testing.T) {
	tests := []struct {
		name string
		body string
		keys []string
		want string
	}{
		{"absent", `{"a":1}`, []string{"b"}, `{"a":1}`},
		{"only member", `{"a":1}`, []string{"a"}, `{}`},
		{"first", `{"a":1,"b":2,"c":3}`, []string{"a"}, `{"b":2,"c":3}`},
		{"middle", `{"a":1,"b":2,"c":3}`, []string{"b"}, `{"a":1,"c":3}`},
		{"last", `{"a":1,"b":2,"c":3}`, []string{"c"}, `{"a":1,"b":2}`},
		{"several", `{"a":1,"b":2,"c":3}`, []string{"a", "c"}, `{"b":2}`},
		{"nested same name kept", `{"x-route-hint":"a","m":{"x-route-hint":"b"}}`, []string{"x-route-hint"},
			`{"m":{"x-route-hint":"b"}}`},
		{"brackets in strings", `{"s":"}{][\"","a":[1,{"b":"]"}],"k":true}`, []string{"k"},
			`{"s":"}{][\"","a":[1,{"b":"]"}]}`},
		{"whitespace", " {\n  \"a\" : 1 ,\n  \"b\" : [ 1, 2 ]\n}\n", []string{"a"}, " { \n  \"b\" : [ 1, 2 ]\n}\n"},
		{"whitespace kept around kept members", "{\"a\":1,\n \"b\":2,\n \"c\":3}", []string{"b"}, "{\"a\":1,\n \"c\":3}"},
		{"escaped key", `{"mod\u0065l":"x","a":1}`, []string{"model"}, `{"a":1}`},
		{"duplicates all removed", `{"a":1,"b":2,"a":3}`, []string{"a"}, `{"b":2}`},
		{"scalars", `{"n":-1.5e3,"t":true,"f":false,"z":null}`, []string{"t", "z"}, `{"n":-1.5e3,"f":false}`},
		{"empty object", `{}`, []string{"a"}, `{}`},
		{"not an object", `[1,2]`, []string{"a"}, `[1,2]`},
		{"truncated", `{"a":1,"b":`, []string{"a"}, `{"a":1,"b":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Delete([]byte(tt.body), tt.keys...)
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("Delete(%s, %q) mismatch (-want +got):\n%s", tt.body, tt.keys, diff)
			}
		})
	}
}

func TestDeleteAbsentReturnsSameSlice(t *testing.T) {
	body := []byte(`{"model":"a","messages":[]}`)
	got := Delete(body, "x-fallback-on", "x-route-hint")
	if &got[0] != &body[0] || len(got) != len(body) {
		t.Fatal("Delete copied a body that had none of the keys")
	}
}

func TestSetString(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		key, value string
		want       string
	}{
		{"replace", `{"model":"auto","stream":true}`, "model", "qwen", `{"model":"qwen","stream":true}`},
		{"replace keeps spacing", `{ "model" : "auto" , "n":1}`, "model", "q", `{ "model" : "q" , "n":1}`},
		{"replace non-string", `{"model":{"a":[1]},"n":1}`, "model", "q", `{"model":"q","n":1}`},
		{"append", `{"stream":true}`, "model", "q", `{"stream":true,"model":"q"}`},
		{"append to empty", `{ }`, "model", "q", `{ "model":"q"}`},
		{"append keeps trailing", "{\"a\":1}\n", "model", "q", "{\"a\":1,\"model\":\"q\"}\n"},
		{"escapes value", `{}`, "k", "a\"b\\c\n\x01</>", `{"k":"a\"b\\c\n\u0001</>"}`},
		{"invalid utf8 value", `{}`, "k", "a\xffb", `{"k":"a\ufffdb"}`},
		{"unicode kept", `{}`, "k", "héllo ☃", `{"k":"héllo ☃"}`},
		{"nested same name untouched", `{"m":{"model":"x"}}`, "model", "q", `{"m":{"model":"x"},"model":"q"}`},
		{"duplicates collapse to last", `{"model":"a","n":1,"model":"b"}`, "model", "q", `{"n":1,"model":"q"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			orig := string(body)
			got := SetString(body, tt.key, tt.value)
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("SetString mismatch (-want +got):\n%s", diff)
			}
			if string(body) != orig {
				t.Errorf("SetString modified its input: %s", body)
			}
			if len(got) > 0 && len(body) > 0 && &got[0] == &body[0] {
				t.Error("SetString returned its input slice")
			}
		})
	}
}

func TestHas(t *testing.T) {
	tests := []struct {
		body, key string
		want      bool
	}{
		{`{"a":1,"b":{"c":2}}`, "a", true},
		{`{"a":1,"b":{"c":2}}`, "b", true},
		{`{"a":1,"b":{"c":2}}`, "c", false},
		{`{"s":"\"c\":1"}`, "c", false},
		{`{"\u0063":1}`, "c", true},
		{`[{"a":1}]`, "a", false},
		{``, "a", false},
	}
	for _, tt := range tests {
		t.Run(tt.body+"/"+tt.key, func(t *testing.T) {
			if got := Has([]byte(tt.body), tt.key); got != tt.want {
				t.Errorf("Has(%s, %q) = %v, want %v", tt.body, tt.key, got, tt.want)
			}
		})
	}
}

// decodeMap is the reference the fuzz targets compare against.
func decodeMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("result is not a valid JSON object: %v\n%s", err, b)
	}
	return m
}

// isObject reports whether b is one JSON object. Its members stay raw: a number too large for a
// float64 (1e1000) is valid JSON, and decoding it would say otherwise (FuzzText's seed
// 17b69e8693048852).
func isObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Valid(b) && json.Unmarshal(b, &m) == nil && m != nil
}

func FuzzDelete(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"a":2},"c":[1,"]"]}`), "a", "c")
	f.Add([]byte(`{"x-route-hint":"a","model":"m"}`), "x-route-hint", "model")
	f.Add([]byte(` { "a" : "\"}" , "a":null } `), "a", "")
	f.Fuzz(func(t *testing.T, body []byte, k1, k2 string) {
		if !isObject(body) {
			// Invalid input is outside the contract, but must not panic.
			_ = Has(body, k1)
			_ = Delete(body, k1, k2)
			_ = SetString(body, k1, k2)
			return
		}
		want := decodeMap(t, body)
		delete(want, k1)
		delete(want, k2)
		got := Delete(body, k1, k2)
		if diff := cmp.Diff(want, decodeMap(t, got)); diff != "" {
			t.Fatalf("Delete(%q, %q, %q) = %q; decoded mismatch (-want +got):\n%s", body, k1, k2, got, diff)
		}
	})
}

func FuzzSetString(f *testing.F) {
	f.Add([]byte(`{"model":"auto","stream":true}`), "model", "qwen")
	f.Add([]byte(`{}`), "k", "a\"\n\x00")
	f.Add([]byte(`{"a":{"model":1},"model":2,"model":3}`), "model", "x")
	f.Fuzz(func(t *testing.T, body []byte, key, value string) {
		if !isObject(body) {
			return
		}
		want := decodeMap(t, body)
		// encoding/json turns an invalid key into U+FFFD when marshalling a map, which can then
		// collide with an existing key; SetString does the same per byte, so compare decoded
		// forms only for keys that are valid to begin with.
		if !utf8ValidString(key) {
			return
		}
		vb, _ := json.Marshal(value)
		var v string
		_ = json.Unmarshal(vb, &v)
		want[key] = v
		got := SetString(body, key, value)
		if diff := cmp.Diff(want, decodeMap(t, got)); diff != "" {
			t.Fatalf("SetString(%q, %q, %q) = %q; decoded mismatch (-want +got):\n%s", body, key, value, got, diff)
		}
		if !Has(got, key) {
			t.Fatalf("Has after SetString = false: %q", got)
		}
		head, mid, tail := SetQuotedSplit(body, key, value, Quote(value))
		if joined := append(append(append([]byte(nil), head...), mid...), tail...); !bytes.Equal(joined, got) {
			t.Fatalf("SetQuotedSplit(%q, %q, %q) joins to %q, SetString gives %q", body, key, value, joined, got)
		}
		if mid != nil && len(head) != cap(head) {
			t.Fatalf("SetQuotedSplit's head has room to append into the body: len %d cap %d", len(head), cap(head))
		}
	})
}

func utf8ValidString(s string) bool { return utf8.ValidString(s) }

var benchBody = []byte(`{"model":"auto","messages":[{"role":"system","content":"You are a helpful assistant."},` +
	`{"role":"user","content":"Summarise the following text, keeping \"quotes\" and {braces}: ` +
	`Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt."}],` +
	`"temperature":0.2,"stream":true,"stream_options":{"include_usage":true},"max_tokens":512}`)

func BenchmarkSetString(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		_ = SetString(benchBody, "model", "qwen2.5-coder-32b-instruct")
	}
}

func BenchmarkDeleteAbsent(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		_ = Delete(benchBody, "x-fallback-on", "x-route-hint", "x-hayula-privacy")
	}
}

func BenchmarkDeletePresent(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		_ = Delete(benchBody, "stream_options")
	}
}

func BenchmarkHas(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Has(benchBody, "max_tokens")
	}
}

// With the value quoted ahead of time, replacing it allocates nothing, and the pieces join to
// SetString's result.
func TestSetQuotedSplitAllocatesNothing(t *testing.T) {
	q := Quote("deepseek/deepseek-r1")
	head, mid, tail := SetQuotedSplit(benchBody, "model", "deepseek/deepseek-r1", q)
	joined := append(append(append([]byte(nil), head...), mid...), tail...)
	if want := SetString(benchBody, "model", "deepseek/deepseek-r1"); !bytes.Equal(joined, want) {
		t.Fatalf("joined %q, want %q", joined, want)
	}
	if cap(mid) != len(mid) {
		t.Errorf("mid has room to append into the shared quoted value: len %d cap %d", len(mid), cap(mid))
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = SetQuotedSplit(benchBody, "model", "x", q) }); n != 0 {
		t.Errorf("SetQuotedSplit allocates %.0f times, want 0", n)
	}
}

// TestLocate: the value of a key's last occurrence, or where a new last member goes (after the
// last member's value, or before the brace of an empty object), and nothing for a body that is
// not a well-formed object; splicing `,"k":1` (or `"k":1` when Empty) there gives valid JSON.
func TestLocate(t *testing.T) {
	tests := []struct {
		body  string
		want  Place
		value string // body[Start:End]
		ok    bool
	}{
		{`{"a":1,"k":{"x":2} }`, Place{Start: 11, End: 18, Found: true}, `{"x":2}`, true},
		{`{"k":1,"a":2,"k":null}`, Place{Start: 17, End: 21, Found: true}, `null`, true},
		{`{"a":{"k":1}}`, Place{Start: 12, End: 12}, ``, true},
		{`{"a":1 }`, Place{Start: 6, End: 6}, ``, true},
		{`{ }`, Place{Start: 2, End: 2, Empty: true}, ``, true},
		{`{"\u006b":true}`, Place{Start: 10, End: 14, Found: true}, `true`, true},
		{`{"a":1,`, Place{}, ``, false},
		{`[1]`, Place{}, ``, false},
	}
	for _, tc := range tests {
		got, ok := Locate([]byte(tc.body), "k")
		if ok != tc.ok || got != tc.want {
			t.Errorf("Locate(%s) = %+v, %v; want %+v, %v", tc.body, got, ok, tc.want, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if v := tc.body[got.Start:got.End]; v != tc.value {
			t.Errorf("Locate(%s) value %q, want %q", tc.body, v, tc.value)
		}
		if !got.Found {
			ins := `,"k":1`
			if got.Empty {
				ins = ins[1:]
			}
			if out := tc.body[:got.Start] + ins + tc.body[got.End:]; !json.Valid([]byte(out)) {
				t.Errorf("spliced %s: invalid JSON", out)
			}
		}
	}
}

// TestLocateEnd: for an object without the member, LocateEnd finds the place Locate's walk does.
func TestLocateEnd(t *testing.T) {
	for _, body := range []string{`{"a":1 }`, `{ }`, `{}`, " {\n\"a\":{\"k\":1},\"b\":[1, 2] \n}\r\n", `{"a":"}"}`} {
		want, ok := Locate([]byte(body), "k")
		if !ok || want.Found {
			t.Fatalf("Locate(%s) = %+v, %v", body, want, ok)
		}
		if got, ok := LocateEnd([]byte(body)); !ok || got != want {
			t.Errorf("LocateEnd(%q) = %+v, %v; want %+v", body, got, ok, want)
		}
	}
	for _, body := range []string{``, `}`, ` }`, `[1]`, `{"a":1`} {
		if got, ok := LocateEnd([]byte(body)); ok {
			t.Errorf("LocateEnd(%q) = %+v, want not ok", body, got)
		}
	}
}

// TestMatchesAgreesWithDecoding holds matches' byte comparison of plain keys to what
// encoding/json decodes each key to: escaped, non-ASCII and invalid UTF-8 keys among them.
func TestMatchesAgreesWithDecoding(t *testing.T) {
	keys := []string{"model", "é", "x-hayula-privacy", "\ufffd", "a\\b", ""}
	for _, q := range []string{
		`"model"`, `"mod\u0065l"`, `"Model"`, `"é"`, `"\u00e9"`, `"e\u0301"`, "\"\xff\"", `"\ufffd"`,
		`"x-hayula-privacy"`, `"x-hayula-privacy "`, `"a\\b"`, `"a\b"`, `""`, `"\/"`, `"mode"`,
	} {
		var s string
		want := false
		if json.Unmarshal([]byte(q), &s) == nil {
			want = slices.Contains(keys, s)
		}
		if got := matches([]byte(q), keys); got != want {
			t.Errorf("matches(%s) = %v, encoding/json decodes it to %q: %v", q, got, s, want)
		}
	}
}

// TestKeyIsAgrees holds keyIs, which compares a plain name's bytes, to matches, which decodes
// what it must: keys spelled plainly, with escapes of every kind, with invalid UTF-8 and
// non-ASCII runes, shorter, as long as and longer than the names, plain and not.
func TestKeyIsAgrees(t *testing.T) {
	names := []string{"choices", "usage", "error", "a", "", "é", "a\\b", `q"`, "\xff"}
	keys := []string{`"choices"`, `"choice"`, `"choicesx"`, `"Choices"`, `"ch\u006fices"`, `"\u0063hoices"`,
		`"choi\u0063es"`, `"\u0063\u0068\u006f\u0069\u0063\u0065\u0073"`, `"choices\u0000"`, "\"choi\xffs\"",
		"\"\xff\"", `"\ufffd"`, `"é"`, `"\u00e9"`, `"a\\b"`, `"a\b"`, `"q\""`, `""`, `"a"`, `"\u0061"`, `"usage"`,
		`"usag\u0065"`, `"error"`, `"err\/or"`, `"\/"`, `"system_fingerprint"`}
	rng := rand.New(rand.NewPCG(11, 12))
	for range 2000 { // random spellings of the names, some letters escaped
		n := names[rng.IntN(4)]
		var b strings.Builder
		b.WriteByte('"')
		for i := 0; i < len(n); i++ {
			if rng.IntN(4) == 0 {
				fmt.Fprintf(&b, `\u%04x`, n[i])
			} else {
				b.WriteByte(n[i])
			}
		}
		if rng.IntN(5) == 0 {
			b.WriteString("s")
		}
		b.WriteByte('"')
		keys = append(keys, b.String())
	}
	for _, n := range names {
		for _, q := range keys {
			if got, want := keyIs([]byte(q), nameOf(n)), matches([]byte(q), []string{n}); got != want {
				t.Fatalf("keyIs(%s, %q) = %v, matches says %v", q, n, got, want)
			}
		}
	}
}
