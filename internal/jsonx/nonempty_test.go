package jsonx

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNonEmptyArray(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"id":"x","choices":[{"index":0}]}`, true},
		{`{"id":"x","choices": [ {"index":0} ] }`, true},
		{`{"choices":[1]}`, true},
		{`{"id":"x","choices":[]}`, false},
		{`{"id":"x","choices":[ ]}`, false},
		{`{"id":"x","choices":null}`, false},
		{`{"id":"x","choices":{"0":1}}`, false},
		{`{"id":"x","choices":"[1]"}`, false},
		{`{"id":"x"}`, false},
		{`{"id":"x","nested":{"choices":[1]}}`, false}, // only the top level counts
		{`{"id":"[\"choices\":[1]","x":1}`, false},     // nor a string that looks like it
		{`{"ch\u006fices":[1]}`, true},                 // an escaped key names it too
		{`{"choices":[],"choices":[1]}`, false},        // the first one decides
		{`{"id":"x","choices":`, false},
		{`{"id":"x","choices":[`, false},
		{`[{"choices":[1]}]`, false},
		{``, false},
	} {
		if got := NonEmptyArray([]byte(tc.body), "choices"); got != tc.want {
			t.Errorf("NonEmptyArray(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

func BenchmarkNonEmptyArray(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1764460800,"model":"fake-model","system_fingerprint":"fp_bench","choices":[{"index":0,"message":{"role":"assistant","content":"This is a fixed answer from the benchmark's fake upstream. It is about as long as a short reply."},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":212,"completion_tokens":38,"total_tokens":250}}`)
	for b.Loop() {
		if !NonEmptyArray(body, "choices") {
			b.Fatal("no choices")
		}
	}
}

func TestLast(t *testing.T) {
	for _, tc := range []struct {
		body, want string
		ok         bool
	}{
		{`{"id":"x","usage":{"p":1}}`, `{"p":1}`, true},
		{`{"id":"x","usage":{"p":1},"service_tier":"default","fp":"x"}`, `{"p":1}`, true},
		{`{"id":"x","usage" : {"p":1} }`, `{"p":1}`, true},           // spaced: found by the walk
		{`{"usage":{"p":1},"x":{"usage":{"p":2}}}`, `{"p":1}`, true}, // nested last: the walk
		{`{"x":{"usage":{"p":2}},"y":1}`, ``, false},                 // nested only
		{`{"usage":{"p":1},"usage":{"p":3}}`, `{"p":3}`, true},       // the last, as decoders keep
		{`{"a":"\"usage\":{\"p\":9}","usage":null}`, `null`, true},   // escaped text is no key
		{`{"a":"\"usage\":{\"p\":9}"}`, ``, false},
		{`{"usage":{"p":1}`, ``, false},
		{`{"a\"usage":{"p":1}}`, ``, false},  // a key that ends in "usage"
		{`{"a\\\\":1,"usage":2}`, `2`, true}, // a string that ends in a backslash before it
		{`{"usage"  :  {"p":1}  }`, `{"p":1}`, true},
		{`[{"usage":1}]`, ``, false},
	} {
		got, ok := Last([]byte(tc.body), "usage")
		if string(got) != tc.want || ok != tc.ok {
			t.Errorf("Last(%s) = %s, %v; want %s, %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzLastAndNonEmptyArray holds Last and NonEmptyArray to encoding/json on valid objects: Last's
// value is the one a decoder keeps for the key (the last), NonEmptyArray says whether the first
// one is an array with an element.
func FuzzLastAndNonEmptyArray(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","usage":{"p":1},"service_tier":"default"}`,
		`{"usage":{"p":1},"x":{"usage":{"p":2}}}`,
		`{"a":"\"usage\":{\"p\":9}","usage":null}`,
		`{"usage":1,"usage":2}`,
		`{"usage" : [ 1 ] , "b" : "}"}`,
		`{"choices":[],"choices":[1]}`,
		`{"x":[{"usage":3}],"usage":"u"}`,
		`{"us\u0061ge":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var members map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &members) != nil || !strings.HasPrefix(strings.TrimSpace(body), "{") {
			return
		}
		// Last finds a key as it is written, "usage": (as every server writes it); one written
		// with escapes ("us\u0061ge") is documented as not found.
		if escapedKey(body) {
			return
		}
		for _, key := range []string{"usage", "choices"} {
			want, has := members[key]
			got, ok := Last([]byte(body), key)
			if ok != has || has && !bytes.Equal(got, bytes.TrimSpace(want)) {
				t.Errorf("Last(%s, %q) = %s, %v; encoding/json keeps %s, %v", body, key, got, ok, want, has)
			}
			// The first member of that name: what NonEmptyArray reads.
			first, found := firstMember([]byte(body), key)
			var arr []json.RawMessage
			wantNonEmpty := found && json.Unmarshal(first, &arr) == nil && len(arr) > 0 && bytes.HasPrefix(bytes.TrimSpace(first), []byte("["))
			if got := NonEmptyArray([]byte(body), key); got != wantNonEmpty {
				t.Errorf("NonEmptyArray(%s, %q) = %v, want %v", body, key, got, wantNonEmpty)
			}
		}
	})
}

// firstMember is the value of the first top-level member named key, by the validating walk.
func firstMember(body []byte, key string) ([]byte, bool) {
	it := Object(body, true)
	for {
		k, v, ok := it.Next()
		if !ok {
			return nil, false
		}
		if s, ok := Unquote(k); ok && s == key {
			return v, true
		}
	}
}

// escapedKey reports whether some member name of the object body has an escape in it.
func escapedKey(body string) bool {
	var walk func(v []byte) bool
	walk = func(v []byte) bool {
		switch {
		case len(v) > 0 && v[0] == '{':
			it := Object(v, false)
			for {
				k, val, ok := it.Next()
				if !ok {
					return false
				}
				if bytes.IndexByte(k, '\\') >= 0 || walk(val) {
					return true
				}
			}
		case len(v) > 0 && v[0] == '[':
			it := Array(v, false)
			for {
				_, val, ok := it.Next()
				if !ok {
					return false
				}
				if walk(val) {
					return true
				}
			}
		}
		return false
	}
	return walk(bytes.TrimSpace([]byte(body)))
}

// TestLastByte holds lastByte to bytes.LastIndexByte: the byte at every offset of every length
// up to three words, alone, twice, after and among bytes that differ from it by one bit (its
// high bit's included), from every end.
func TestLastByte(t *testing.T) {
	for _, c := range []byte{':', 0, 0x80, 0xff, 'a'} {
		for n := range 25 {
			for _, fill := range []byte{' ', c ^ 1, c ^ 0x80, c ^ 0x40, c + 1} {
				b := bytes.Repeat([]byte{fill}, n)
				check := func() {
					t.Helper()
					for i := 0; i <= len(b); i++ {
						if got, want := lastByte(b, i, c), bytes.LastIndexByte(b[:i], c); got != want {
							t.Fatalf("lastByte(%q, %d, %q) = %d, want %d", b, i, c, got, want)
						}
					}
				}
				check()
				for k := range n {
					b[k] = c
					check()
					for j := k + 1; j < n; j++ {
						b[j] = c
						check()
						b[j] = fill
					}
					b[k] = fill
				}
			}
		}
	}
}
