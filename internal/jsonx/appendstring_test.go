package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"
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
