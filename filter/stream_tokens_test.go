package filter

import (
	"encoding/json"
	"testing"
)

// TestTextTokensAsWhole: a text counted piece by piece as a stream relays it counts as the same
// text counted whole, however it is cut (a word, a number, an escape split across pieces), so
// that a stream's bound does not depend on how its upstream chunked it.
func TestTextTokensAsWhole(t *testing.T) {
	for _, text := range []string{
		"Hello, world! The answer is 12345.",
		"línea uno\nlínea dos: \"citado\" y <|im_end|> fin",
		"x = f(a, b) // 42\n/path/to",
		"emoji 😀 and tabs\tand 日本語のテキスト",
		"",
	} {
		want := textTokensMin(text)
		for cut := 1; cut <= len(text)+1; cut++ {
			var tt TextTokens
			rs := []rune(text)
			for i := 0; i < len(rs); i += cut {
				q, _ := json.Marshal(string(rs[i:min(i+cut, len(rs))]))
				tt.AddLiteral(q)
			}
			if got := tt.Min(); got != want {
				t.Errorf("%q in pieces of %d runes: %d, whole: %d", text, cut, got, want)
			}
		}
	}
	var tt TextTokens
	tt.AddLiteral([]byte(`{"not":"a literal"}`))
	if tt.Min() != 0 {
		t.Errorf("an object counted %d", tt.Min())
	}
}
