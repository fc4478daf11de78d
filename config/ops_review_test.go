package config

import (
	"strings"
	"testing"
)

// TestUnsetKeyVariableNeverEchoesAKey: a key made only of letters, digits and _ (Hugging Face's
// hf_…, GitHub's ghp_…) passes for a variable name; pasted into api_key_env, it is unset, and
// the message saying so must not repeat it. An upper-case name is repeated, to be findable.
func TestUnsetKeyVariableNeverEchoesAKey(t *testing.T) {
	for _, tc := range []struct {
		env  string
		echo bool
	}{
		{"hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", false},
		{"ghp_0123456789abcdefABCDEF0123456789abcd", false},
		{"OPENROUTER_API_KEY", true},
	} {
		t.Run(tc.env[:3], func(t *testing.T) {
			doc := minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\napi_key_env = \"" + tc.env + "\"\n"
			_, err := Parse([]byte(doc), "s.toml", nil)
			if err == nil {
				t.Fatal("Parse succeeded with the variable unset")
			}
			if got := strings.Contains(err.Error(), tc.env); got != tc.echo {
				t.Errorf("error %q repeats the name: %v, want %v", err, got, tc.echo)
			}
		})
	}
}
