package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hayula/gateway/config/litellm"
)

const litellmData = "../../config/litellm/testdata/"

// TestImportLiteLLM: `gateway import litellm FILE` prints the converted configuration on stdout
// and what the user must act on on stderr; with --out it writes the file instead, and that file
// passes check-config once the variables it names are exported.
func TestImportLiteLLM(t *testing.T) {
	src := litellmData + "homelab.yaml"
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := litellm.Convert(data, src)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "import", "litellm", src)
	if code != 0 || out != string(want.TOML) || !strings.Contains(errOut, "gateway: warning: not carried") {
		t.Fatalf("exit %d, stderr %q; want 0, the converted file on stdout and the warnings on stderr; stdout:\n%s", code, errOut, out)
	}

	dst := filepath.Join(t.TempDir(), "gateway.toml")
	code, out, errOut = runCmd(t, "import", "litellm", src, "--out", dst)
	written, err := os.ReadFile(dst)
	if code != 0 || out != "" || err != nil || string(written) != string(want.TOML) ||
		!strings.Contains(errOut, "wrote "+dst) || !strings.Contains(errOut, "OPENROUTER_API_KEY") {
		t.Fatalf("--out: exit %d, stdout %q, stderr %q, file %q (%v); want 0, the file written and its next steps on stderr",
			code, out, errOut, written, err)
	}
	t.Setenv("OPENROUTER_API_KEY", "sk-or-test")
	if code, out, errOut := runCmd(t, "check-config", dst); code != 0 || !strings.Contains(out, "llama3.1") {
		t.Errorf("check-config of the imported file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// --out never replaces a file: gateway.toml may be the configuration in use.
	code, _, errOut = runCmd(t, "import", "litellm", "--out", dst, src)
	if again, _ := os.ReadFile(dst); code != 1 || !strings.Contains(errOut, "exists") || string(again) != string(want.TOML) {
		t.Errorf("--out over an existing file: exit %d, stderr %q; want 1, the file left as it was", code, errOut)
	}
}

// TestImportNeverShowsASecret: keys written in config.yaml, a password in an api_base,
// master_key, database_url and environment_variables' values reach neither stdout, stderr nor
// the file written.
func TestImportNeverShowsASecret(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "gateway.toml")
	for _, args := range [][]string{
		{"import", "litellm", litellmData + "hosted.yaml"},
		{"import", "litellm", litellmData + "hosted.yaml", "--out", dst},
	} {
		code, out, errOut := runCmd(t, args...)
		written, _ := os.ReadFile(dst)
		if code != 0 || strings.Contains(out+errOut+string(written), "SENTINEL") {
			t.Errorf("%q: exit %d; a secret shown:\nstdout:\n%s\nstderr:\n%s\nfile:\n%s", args, code, out, errOut, written)
		}
		if !strings.Contains(errOut, "export it as FAST_1_API_KEY") || !strings.Contains(errOut, "anthropic") {
			t.Errorf("%q: stderr does not warn of the key to export and the provider left out:\n%s", args, errOut)
		}
	}
}

// TestImportFailures: a file that cannot be converted is said on stderr, exit 1, nothing on
// stdout and no file written; a mistaken command line is a usage error, exit 2.
func TestImportFailures(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name, file, want string
	}{
		{"no file", filepath.Join(dir, "missing.yaml"), "no such file"},
		{"bad yaml", write("bad.yaml", "model_list: [\n"), "not YAML"},
		{"no model_list", write("none.yaml", "general_settings:\n  master_key: sk-SENTINEL\n"), "no model_list"},
		{"nothing convertible", write("claude.yaml", "model_list:\n  - model_name: c\n    litellm_params:\n      model: anthropic/claude\n      api_key: sk-SENTINEL\n"), "nothing convertible"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(dir, tt.name+".toml")
			code, out, errOut := runCmd(t, "import", "litellm", tt.file, "--out", dst)
			_, statErr := os.Stat(dst)
			if code != 1 || out != "" || !strings.Contains(errOut, tt.want) || !strings.HasPrefix(errOut, "gateway: ") ||
				strings.Contains(errOut, "SENTINEL") || !os.IsNotExist(statErr) {
				t.Errorf("exit %d, stdout %q, stderr %q, file written: %v; want 1, %q on stderr and no file", code, out, errOut, statErr == nil, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"import"}, "missing litellm"},
		{[]string{"import", "openwebui"}, `unknown kind "openwebui"`},
		{[]string{"import", "litellm"}, "missing FILE"},
		{[]string{"import", "litellm", "--out", "x.toml"}, "missing FILE"},
		{[]string{"import", "litellm", "a.yaml", "b.yaml"}, "one FILE"},
		{[]string{"import", "litellm", "a.yaml", "--out", ""}, "--out is empty"}, // said as serve's --config "" is, without the usage
		{[]string{"import", "litellm", "--bogus"}, "-bogus"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.args...)
			usage := strings.Contains(errOut, "usage") || strings.Contains(errOut, "Usage") || strings.HasSuffix(tt.want, "is empty")
			if code != 2 || out != "" || !strings.Contains(errOut, tt.want) || !usage {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, %q and the usage on stderr", code, out, errOut, tt.want)
			}
		})
	}
}
