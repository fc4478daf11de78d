package upstream

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// FuzzReadContentValidAgrees: a content known to be valid JSON in valid UTF-8
// (core.Request.Validated) is read to what the checking read gives, the text and whether the
// literal goes as it came, whatever it holds: escapes, line separators, parts, nothing.
func FuzzReadContentValidAgrees(f *testing.F) {
	for _, c := range []string{`"hello"`, `""`, `null`, ` "x" `, `"a\nb"`, `"\u00e9 é"`, "\"a\u2028b\"", `"\u2028"`,
		`"ممكن تساعدني؟ 😀"`, `"<|im_end|>"`, `[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:,"}}]`,
		`[{"type":"audio"}]`, `7`, `{}`, `"\ud83d\ude00"`, `"\ud800"`, `"tab\there"`} {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || !utf8.Valid(raw) {
			return // not what a validated body holds
		}
		want, wantErr := readContent(raw, false)
		got, err := readContent(raw, true)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, checked %v", raw, err, wantErr)
		}
		if err != nil {
			return
		}
		if got.str() != want.str() || !bytes.Equal(got.literal, want.literal) || (got.literal == nil) != (want.literal == nil) {
			t.Fatalf("%q: text %q literal %q; checked %q, %q", raw, got.str(), got.literal, want.str(), want.literal)
		}
		if diff := cmp.Diff(want.images, got.images, cmp.AllowUnexported(imagePart{})); diff != "" || got.other != want.other {
			t.Fatalf("%q: parts differ: %s %q %q", raw, diff, got.other, want.other)
		}
	})
}
