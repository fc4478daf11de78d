package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoadsButCannotWork holds configs that decode cleanly but could never serve what they
// promise; each must be refused at load, at the line of the key that makes it unusable.
func TestLoadsButCannotWork(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want []wantErr
	}{
		{"url with {port} and a command without it", minimal + `[targets.m]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["llama-server", "--port", "8080"]
`, []wantErr{{9, "targets.m.url: uses {port} but command does not"}}},
		{"a strict route of public targets only", `[targets.cloud]
adapter = "openai"
url = "http://127.0.0.1:1/v1"
class = "public"

[routes.r]
targets = ["cloud"]
strict = true
`, []wantErr{{8, "routes.r.strict: every target of this strict route is public"}}},
		{"a saif target declared with tools or images", minimal + `[targets.s]
adapter = "saif"
url = "http://127.0.0.1:2"
tools = true
vision = true
`, []wantErr{{10, "targets.s.tools: the saif protocol carries no tools"}, {11, "targets.s.vision: the saif protocol carries no vision"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.toml), "bad.toml", nil)
			if err == nil {
				t.Fatalf("Parse succeeded, want errors; summary:\n%s", cfg.Summary())
			}
			got := Errors(err)
			var gotLines, wantLines []int
			for _, e := range got {
				gotLines = append(gotLines, e.Line)
			}
			for _, w := range tc.want {
				wantLines = append(wantLines, w.line)
			}
			if diff := cmp.Diff(wantLines, gotLines); diff != "" {
				t.Fatalf("error lines mismatch (-want +got):\n%s\nerrors:\n%v", diff, err)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Msg, w.msg) {
					t.Errorf("error %d = %q, want it to contain %q", i, got[i].Msg, w.msg)
				}
			}
		})
	}
}

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
