package tomlx

import (
	"testing"

	"github.com/BurntSushi/toml"
)

// TestStringRoundTrips: every string written comes back the same through a TOML decoder, control
// characters, quotes, backslashes and non-ASCII included.
func TestStringRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "tab\tnew\nline\x00\x7f", "ما هي", "\u2028"} {
		var v struct{ K string }
		if _, err := toml.Decode("K = "+String(s), &v); err != nil || v.K != s {
			t.Errorf("String(%q) = %s: decoded %q, %v", s, String(s), v.K, err)
		}
	}
}
