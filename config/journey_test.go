package config

import (
	"strings"
	"testing"
)

// TestLiteLLMCopiesSayWhatToWrite covers what a user moving a LiteLLM config.yaml over writes
// by habit, and which no Ollama or environment would ever take: each is refused at its line,
// the message naming what to write. api_key_env = "os.environ/X" was told that it must "not
// hold the key itself", which it did not; an ollama url ending in /v1 (Ollama's OpenAI API,
// which LiteLLM's openai/ models use) loaded, and every request and health check met a 404 at
// /v1/api/chat.
func TestLiteLLMCopiesSayWhatToWrite(t *testing.T) {
	target := func(adapter, url, rest string) string {
		return minimal + "[targets.b]\nadapter = \"" + adapter + "\"\nurl = \"" + url + "\"\n" + rest
	}
	tests := []struct {
		name string
		toml string
		want wantErr
	}{
		{"LiteLLM's os.environ/", target("openai", "https://openrouter.ai/api/v1", "api_key_env = \"os.environ/OPENROUTER_API_KEY\"\n"),
			wantErr{10, `targets.b.api_key_env: "os.environ/OPENROUTER_API_KEY" is LiteLLM's way to name a variable: write api_key_env = "OPENROUTER_API_KEY"`}},
		{"a shell's $", target("openai", "https://openrouter.ai/api/v1", "api_key_env = \"$OPENROUTER_API_KEY\"\n"),
			wantErr{10, `targets.b.api_key_env: "$OPENROUTER_API_KEY" is a shell's way to name a variable: write api_key_env = "OPENROUTER_API_KEY"`}},
		{"a shell's ${}", target("openai", "https://openrouter.ai/api/v1", "api_key_env = \"${OPENROUTER_API_KEY}\"\n"),
			wantErr{10, `targets.b.api_key_env: "${OPENROUTER_API_KEY}" is a shell's way to name a variable: write api_key_env = "OPENROUTER_API_KEY"`}},
		{"a pasted key behind os.environ/ is not repeated", target("openai", "https://openrouter.ai/api/v1", "api_key_env = \"os.environ/sk-or-v1-abc\"\n"),
			wantErr{10, `targets.b.api_key_env: must name an environment variable (letters, digits, _), not hold the key itself`}},
		{"ollama url with /v1", target("ollama", "http://127.0.0.1:11434/v1", ""),
			wantErr{9, `targets.b.url: "http://127.0.0.1:11434/v1" ends in /v1, Ollama's OpenAI-compatible API, but adapter = "ollama" calls Ollama's own API (/api/chat) under the base URL: write url = "http://127.0.0.1:11434", or adapter = "openai" to keep /v1`}},
		{"ollama url with /v1/", target("ollama", "http://gpu.lan:11434/v1/", ""),
			wantErr{9, `write url = "http://gpu.lan:11434", or adapter = "openai"`}},
		{"ollama url with /api", target("ollama", "http://127.0.0.1:11434/api", ""),
			wantErr{9, `targets.b.url: "http://127.0.0.1:11434/api" ends in /api, which adapter = "ollama" adds itself (/api/chat): write url = "http://127.0.0.1:11434"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "bad.toml", env("OPENROUTER_API_KEY", "sk-or-v1-abc"))
			got := Errors(err)
			if len(got) != 1 {
				t.Fatalf("got %d errors, want 1:\n%v", len(got), err)
			}
			if got[0].Line != tc.want.line || !strings.Contains(got[0].Msg, tc.want.msg) {
				t.Errorf("got line %d %q\nwant line %d containing %q", got[0].Line, got[0].Msg, tc.want.line, tc.want.msg)
			}
		})
	}
	// An Ollama behind a reverse proxy under a path of its own still loads.
	if _, err := Parse([]byte(target("ollama", "http://gpu.lan/ollama", "")), "ok.toml", nil); err != nil {
		t.Errorf("an ollama url under a path of its own: %v", err)
	}
}

// TestLiteLLMNamesForTimeoutsRetriesAndMasterKey: the LiteLLM names a homelab config.yaml holds
// for a deployment's timeouts and retries, and its master_key, were each "unknown key" and
// nothing more, no spelling being close; each now names what to write.
func TestLiteLLMNamesForTimeoutsRetriesAndMasterKey(t *testing.T) {
	target := func(rest string) string {
		return minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:2/v1\"\n" + rest
	}
	tests := []struct {
		name string
		toml string
		want wantErr
	}{
		{"num_retries", target("num_retries = 2\n"),
			wantErr{10, `unknown key targets.b.num_retries (did you mean "max_retries"? num_retries is LiteLLM's name for it)`}},
		{"timeout as LiteLLM's request_timeout", target("request_timeout = \"60s\"\n"),
			wantErr{10, `unknown key targets.b.request_timeout (did you mean "timeout"? request_timeout is LiteLLM's name for it)`}},
		{"stream_timeout", target("stream_timeout = \"30s\"\n"),
			wantErr{10, `unknown key targets.b.stream_timeout (did you mean "timeout"? stream_timeout is LiteLLM's name for it)`}},
		{"context_window_fallbacks", minimal + "[routes.s]\ntargets = [\"a\"]\ncontext_window_fallbacks = [\"a\"]\n",
			wantErr{9, `unknown key routes.s.context_window_fallbacks (did you mean "guard"? context_window_fallbacks is LiteLLM's name for it)`}},
		{"master_key", "master_key = \"sk-1234\"\n" + minimal,
			wantErr{1, `unknown key master_key (LiteLLM's; here each client has its own key, a [[keys]] block holding its SHA-256: gateway keygen NAME prints both, and the key is not written in the file)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "bad.toml", nil)
			got := Errors(err)
			if len(got) != 1 {
				t.Fatalf("got %d errors, want 1:\n%v", len(got), err)
			}
			if got[0].Line != tc.want.line || got[0].Msg != tc.want.msg {
				t.Errorf("got line %d %q\nwant line %d %q", got[0].Line, got[0].Msg, tc.want.line, tc.want.msg)
			}
		})
	}
}
