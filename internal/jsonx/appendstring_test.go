package jsonx

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzAppendStringMatchesEncoding holds AppendString to encoding/json's bytes for the same
// string, with HTML escaping on (json.Marshal) and off (an Encoder with SetEscapeHTML(false)).
func FuzzAppendStringMatchesEncoding(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c", "\b\f\n\r\t\x00\x1f\x7f", "<a href='x'>&amp;</a>",
		"\u2028\u2029", "مرحبا بالعالم", "\xff\xfe invalid", "emoji 😀 and \U0010ffff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		html, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s, true); !bytes.Equal(got, html) {
			t.Errorf("html: %q, encoding/json %q", got, html)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		plain := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		if got := AppendString(nil, s, false); !bytes.Equal(got, plain) {
			t.Errorf("plain: %q, encoding/json %q", got, plain)
		}
		if got := Quote(s); !bytes.Equal(got, plain) {
			t.Errorf("Quote: %q, encoding/json %q", got, plain)
		}
	})
}

// BenchmarkAppendString: what writing a string costs the translated streams (a token, a chunk's
// id) and the requests the translating adapters send (a message's text, English or Arabic).
func BenchmarkAppendString(b *testing.B) {
	const prose = "I am preparing a short talk for my team about how we ship our web application. "
	const arabic = "ممكن تساعدني أرتب الأفكار بشكل منطقي؟ بعد ذلك أريد أن أشرح الفرق بين الطريقتين. "
	for _, tc := range []struct{ name, s string }{
		{"token", " token5"},
		{"id", "chatcmpl-4f9d0c2a7b1e43d5a8c6e0f1b2d3c4a5"},
		{"english 1KB", strings.Repeat(prose, 13)},
		{"arabic 1KB", strings.Repeat(arabic, 7)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			buf := make([]byte, 0, 4<<10)
			for b.Loop() {
				buf = AppendString(buf[:0], tc.s, false)
			}
		})
	}
}

// FuzzAppendCompactMatchesEncoding holds AppendCompact to encoding/json's bytes for a
// json.RawMessage holding the same valid JSON, with HTML escaping on (json.Marshal) and off (an
// Encoder with SetEscapeHTML(false)).
func FuzzAppendCompactMatchesEncoding(f *testing.F) {
	for _, s := range []string{`""`, `"plain"`, `null`, ` 5 `, `-0.5e+3`, `[ 1 , true , null ]`,
		`{ "a" : "b<c>&d" , "e\"<" : [ "\u2028\u003c\\" , { } ] }`, "\"\u2028\u2029 <>& \xe2\x80\"", `"ok \\" <"`,
		"{\n\t\"k\":\r\n\"v\"}", `"مرحبا & \xff"`, "\"\xe2\"", "\"\xe2\x80\"", `{"a":"0123456789abcdef<0123456789abcdef"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if !json.Valid(src) {
			return
		}
		html, err := json.Marshal(json.RawMessage(src))
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendCompact([]byte("x"), src, true); !bytes.Equal(got[1:], html) {
			t.Errorf("html: %q, encoding/json %q", got[1:], html)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(json.RawMessage(src)); err != nil {
			t.Fatal(err)
		}
		plain := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		if got := AppendCompact(nil, src, false); !bytes.Equal(got, plain) {
			t.Errorf("plain: %q, encoding/json %q", got, plain)
		}
	})
}

// FuzzCanonicalMatchesEncoding: a literal Canonical says is written as AppendString writes its
// text is copied by AppendCompact to exactly json.Marshal's bytes for that text; and every string
// json.Marshal writes for a text of valid UTF-8 is one Canonical says so of (invalid UTF-8 is
// written �, which unquotes to the valid U+FFFD that json.Marshal writes as it is).
func FuzzCanonicalMatchesEncoding(f *testing.F) {
	for _, s := range []string{`""`, `"plain"`, `"a\nb\"c\\d\te"`, `"\u003c\u003e\u0026 <>&"`, `"\u0001\u001f"`, `"\u001F"`,
		`"\u000a"`, `"\/"`, `"\u00e9"`, "\"\u2028\"", `"\u2028"`, `"\ud83d\ude00"`, `"\ufffd"`, "\"\xff\"", `"\u007f"`, "\"\x7f\"",
		`"\b\f\r"`, `"\u0008"`, `"x\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		var s string
		if json.Unmarshal(q, &s) == nil {
			q = bytes.TrimSpace(q)
			if q[0] == '"' && Canonical(q) {
				want, _ := json.Marshal(s)
				if got := AppendCompact(nil, q, true); !bytes.Equal(got, want) {
					t.Errorf("Canonical(%q), but AppendCompact writes %q and json.Marshal %q", q, got, want)
				}
			}
		}
		text := string(q)
		if m, _ := json.Marshal(text); utf8.ValidString(text) && !Canonical(m) {
			t.Errorf("json.Marshal(%q) = %q, not Canonical", text, m)
		}
	})
}
