package config

import (
	"strings"
	"testing"
)

// TestCommandHoldsNoSecret: the config file holds no secret, and check-config prints a command
// whole, so a key written into a target's command (llama-server's and vLLM's --api-key, or the
// value some api_key_env gives) is refused at load, without the message repeating it. The key
// reaches the process through the environment instead (its own target's api_key_env stays).
func TestCommandHoldsNoSecret(t *testing.T) {
	const upKey = "sk-local-secret-5e1c9f"
	env := map[string]string{"LLAMA_API_KEY": upKey, "OPENROUTER_API_KEY": "sk-or-v1-0123456789"}
	doc := func(cmd string) string {
		return `[targets.local]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ` + cmd + `
api_key_env = "LLAMA_API_KEY"
[targets.cloud]
adapter = "openai"
url = "https://openrouter.ai/api/v1"
class = "public"
api_key_env = "OPENROUTER_API_KEY"
[routes.r]
targets = ["local", "cloud"]
`
	}
	for _, tc := range []struct {
		name, cmd string
		refused   bool
	}{
		{"no key", `["llama-server", "--port", "{port}"]`, false},
		{"a key file", `["llama-server", "--port", "{port}", "--api-key-file", "/etc/llama/keys"]`, false},
		{"its own key", `["llama-server", "--port", "{port}", "--api-key", "sk-local-secret-5e1c9f"]`, true},
		{"its own key, joined", `["llama-server", "--port", "{port}", "--api-key=sk-local-secret-5e1c9f"]`, true},
		{"another target's key", `["proxy", "--port", "{port}", "--upstream-auth", "Bearer sk-or-v1-0123456789"]`, true},
		{"a literal key", `["vllm", "serve", "m", "--port", "{port}", "--api-key", "token-abc123"]`, true},
		{"a literal key, joined", `["vllm", "serve", "m", "--port", "{port}", "--API_KEY=token-abc123"]`, true},
		{"a token", `["vllm", "serve", "m", "--port", "{port}", "--hf-token", "hf_abcdef"]`, true},
		// One string instead of a list: the error's hint spells the list to write, without the key.
		{"one string", `"vllm serve m --port {port} --api-key token-abc123"`, true},
		{"one string, joined", `"vllm serve m --port {port} --api-key=token-abc123"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(doc(tc.cmd)), "c.toml", func(k string) string { return env[k] })
			if (err != nil) != tc.refused {
				t.Fatalf("Parse(command = %s): %v, want refused %v", tc.cmd, err, tc.refused)
			}
			if err == nil {
				return
			}
			msg := err.Error()
			for _, secret := range []string{upKey, "sk-or-v1-0123456789", "token-abc123", "hf_abcdef"} {
				if strings.Contains(msg, secret) {
					t.Errorf("the message repeats the secret %q: %s", secret, msg)
				}
			}
			if !strings.Contains(msg, "command") {
				t.Errorf("the message does not name the command: %s", msg)
			}
		})
	}
}

// TestHealthPathHoldsNoSecret: a health_path whose query carries a credential (?api_key=…,
// ?token=…) is refused at load, without the message repeating it: check-config prints the
// health URL, and a failed check's debug line logs it.
func TestHealthPathHoldsNoSecret(t *testing.T) {
	for _, tc := range []struct {
		path    string
		refused bool
	}{
		{"/health", false},
		{"/health?verbose=1", false},
		{"http://127.0.0.1:9000/health?format=json", false},
		{"/health?api_key=s3cr3t-value", true},
		{"/health?x=1&TOKEN=s3cr3t-value", true},
		{"http://127.0.0.1:9000/health?access_token=s3cr3t-value", true},
		{"/health?api-key=s3cr3t-value", true},
		{"/health?key=s3cr3t-value", true},
		{"/health?password=s3cr3t-value", true},
	} {
		t.Run(tc.path, func(t *testing.T) {
			doc := "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:9000/v1\"\nhealth_path = \"" + tc.path +
				"\"\n[routes.a]\ntargets = [\"a\"]\n"
			_, err := Parse([]byte(doc), "h.toml", nil)
			if (err != nil) != tc.refused {
				t.Fatalf("Parse(health_path = %q): %v, want refused %v", tc.path, err, tc.refused)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t-value") {
				t.Errorf("the message repeats the secret: %v", err)
			}
		})
	}
}

// TestPublicHostLeftPrivateWarned: a target without a class is private, so strict requests may
// reach it; when its url names a host on the internet (a cloud API, a public address) the
// config loads but Warnings says so, naming the target and its host, which check-config prints.
// A local address or name, or a class written out, warns of nothing.
func TestPublicHostLeftPrivateWarned(t *testing.T) {
	for _, tc := range []struct {
		url, class string
		warn       bool
	}{
		{"https://api.openai.com/v1", "", true},
		{"https://openrouter.ai/api/v1", "", true},
		{"http://203.0.113.7:8000/v1", "", true},
		{"http://[2001:db8::1]:8000/v1", "", true},
		{"https://api.openai.com/v1", "public", false},
		{"https://gpu.example.com/v1", "private", false},
		{"http://127.0.0.1:8000/v1", "", false},
		{"http://localhost:8000/v1", "", false},
		{"http://192.168.1.20:8000/v1", "", false},
		{"http://10.0.0.5:8000/v1", "", false},
		{"http://100.101.102.103:8000/v1", "", false},
		{"http://[fd00::5]:8000/v1", "", false},
		{"http://vllm:8000/v1", "", false},
		{"http://gpu-box.lan:8000/v1", "", false},
		{"http://gpu-box.local:8000/v1", "", false},
		{"http://gpu.tail1234.ts.net:8000/v1", "", false},
		{"http://127.0.0.1:{port}/v1", "", false},
	} {
		t.Run(tc.url+" "+tc.class, func(t *testing.T) {
			class := ""
			if tc.class != "" {
				class = "class = \"" + tc.class + "\"\n"
			}
			if strings.Contains(tc.url, "{port}") {
				class += "command = [\"srv\", \"{port}\"]\n"
			}
			doc := "[targets.a]\nadapter = \"openai\"\nurl = \"" + tc.url + "\"\n" + class + "[routes.a]\ntargets = [\"a\"]\n"
			cfg, err := Parse([]byte(doc), "w.toml", nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range cfg.Warnings() {
				if strings.Contains(w, "class is private") {
					got = append(got, w)
				}
			}
			if (len(got) > 0) != tc.warn {
				t.Fatalf("warnings %q, want a class warning %v", got, tc.warn)
			}
			if tc.warn && (!strings.Contains(got[0], "target a") || !strings.Contains(cfg.Summary(), got[0])) {
				t.Errorf("the warning does not name the target, or check-config does not print it: %q", got)
			}
		})
	}
}

// TestCleartextKeyWarned: a target whose key would cross the internet in cleartext (an http://
// url on a public host, or a health check there) is warned of; https, or a local http server, is not.
func TestCleartextKeyWarned(t *testing.T) {
	for _, tc := range []struct {
		url, extra string
		warn       bool
	}{
		{"http://api.example.com/v1", "", true},
		{"https://api.example.com/v1", `health_path = "http://api.example.com/health"`, false}, // elsewhere: sent without the key
		{"https://api.example.com/v1", "", false},
		{"http://192.168.1.20:8000/v1", "", false},
		{"http://gpu-box:8000/v1", "", false},
	} {
		t.Run(tc.url+" "+tc.extra, func(t *testing.T) {
			doc := "[targets.a]\nadapter = \"openai\"\nclass = \"public\"\napi_key_env = \"K\"\nurl = \"" + tc.url + "\"\n" +
				tc.extra + "\n[routes.a]\ntargets = [\"a\"]\n"
			cfg, err := Parse([]byte(doc), "w.toml", func(string) string { return "sk-cleartext-0123" })
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range cfg.Warnings() {
				if strings.Contains(w, "cleartext") {
					got = append(got, w)
				}
			}
			if (len(got) > 0) != tc.warn {
				t.Fatalf("warnings %q, want a cleartext warning %v", got, tc.warn)
			}
			if tc.warn && strings.Contains(got[0], "sk-cleartext") {
				t.Errorf("the warning holds the key: %s", got[0])
			}
		})
	}
}
