package config

import (
	"strings"
	"testing"
)

// TestParseErrorsSayWhatToWrite covers what a user coming from another gateway (LiteLLM's
// api_base and "ollama/llama3.1", an adapter named after the provider) or writing a number in
// quotes gets told: each message names what to write instead.
func TestParseErrorsSayWhatToWrite(t *testing.T) {
	ollama := func(rest string) string {
		return minimal + "[targets.b]\nadapter = \"ollama\"\n" + rest
	}
	tests := []struct {
		name string
		toml string
		want []wantErr
	}{
		{"integer in quotes", minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\nrpm = \"20\"\n",
			[]wantErr{{10, `keys[0].rpm: incompatible types: TOML value has type string; destination has type integer (a number is written without quotes: rpm = 20, not rpm = "20")`}}},
		{"bool in quotes", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\ntools = \"false\"\n",
			[]wantErr{{10, `destination has type boolean (true or false, without quotes)`}}},
		{"api_base", ollama("url = \"http://x\"\napi_base = \"http://x\"\n"),
			[]wantErr{{10, `unknown key targets.b.api_base (did you mean "url"? api_base is LiteLLM's name for it)`}}},
		{"base_url", ollama("base_url = \"http://x\"\n"),
			[]wantErr{{7, `targets.b.url: missing`}, {9, `unknown key targets.b.base_url (did you mean "url"? base_url is the OpenAI SDK's name for it)`}}},
		{"models in a key", minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\nmodels = [\"r\"]\n",
			[]wantErr{{10, `unknown key keys[0].models (did you mean "routes"? models is LiteLLM's name for it)`}}},
		{"rpm_limit in a key", minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\nrpm_limit = 20\n",
			[]wantErr{{10, `unknown key keys[0].rpm_limit (did you mean "rpm"?`}}},
		{"max_parallel_requests in a key", minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\nmax_parallel_requests = 2\n",
			[]wantErr{{10, `unknown key keys[0].max_parallel_requests (did you mean "max_concurrent"?`}}},
		{"provider as adapter", minimal + "[targets.b]\nadapter = \"openrouter\"\nurl = \"https://openrouter.ai/api/v1\"\n",
			[]wantErr{{8, `unknown adapter "openrouter" (want openai, ollama or saif; OpenRouter, vLLM, llama-server and LM Studio speak openai)`}}},
		{"ollama url missing", ollama(""),
			[]wantErr{{7, `targets.b.url: missing: the target's base URL, such as "http://127.0.0.1:11434" (Ollama's, without /v1)`}}},
		{"litellm provider prefix on an ollama model", ollama("url = \"http://x\"\nmodel = \"ollama/llama3.1\"\n"),
			[]wantErr{{10, `targets.b.model: "ollama/llama3.1" is LiteLLM's provider/model form; adapter = "ollama" already says the provider: write the Ollama tag, "llama3.1"`}}},
		{"ollama_chat prefix", ollama("url = \"http://x\"\nmodel = \"ollama_chat/qwen2.5:7b\"\n"),
			[]wantErr{{10, `write the Ollama tag, "qwen2.5:7b"`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "bad.toml", nil)
			if err == nil {
				t.Fatal("Parse succeeded, want errors")
			}
			got := Errors(err)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(got), len(tc.want), err)
			}
			for i, w := range tc.want {
				if got[i].Line != w.line || !strings.Contains(got[i].Msg, w.msg) {
					t.Errorf("error %d = %d: %q, want line %d containing %q", i, got[i].Line, got[i].Msg, w.line, w.msg)
				}
			}
		})
	}
}

// TestOllamaNamespacedModelAccepted keeps the provider-prefix check narrow: an Ollama model in a
// namespace of its own ("hf.co/…", "user/model") is a real tag.
func TestOllamaNamespacedModelAccepted(t *testing.T) {
	for _, m := range []string{"hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF", "library/llama3.1", "averroes-q:7b"} {
		toml := minimal + "[targets.b]\nadapter = \"ollama\"\nurl = \"http://x\"\nmodel = \"" + m + "\"\n"
		if _, err := Parse([]byte(toml), "ok.toml", nil); err != nil {
			t.Errorf("model %q: %v", m, err)
		}
	}
}
