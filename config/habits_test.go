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
			[]wantErr{{10, `keys[0].rpm: want an integer, got a string (a number is written without quotes: rpm = 20, not rpm = "20")`}}},
		{"bool in quotes", minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\ntools = \"false\"\n",
			[]wantErr{{10, `targets.b.tools: want a boolean, got a string (true or false, without quotes)`}}},
		{"api_base", ollama("url = \"http://x\"\napi_base = \"http://x\"\n"),
			[]wantErr{{10, `unknown key targets.b.api_base (did you mean "url"? api_base is LiteLLM's name for it)`}}},
		{"base_url", ollama("base_url = \"http://x\"\n"),
			[]wantErr{{9, `unknown key targets.b.base_url (did you mean "url"? base_url is the OpenAI SDK's name for it)`}}},
		{"models in a key", minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\nmodels = [\"r\"]\n",
			[]wantErr{{10, `unknown key keys[0].models (did you mean "routes"? models is LiteLLM's name for it)`}}},
		{"rpm_limit in a key", minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\nrpm_limit = 20\n",
			[]wantErr{{10, `unknown key keys[0].rpm_limit (did you mean "rpm"?`}}},
		{"tpm_limit in a key", minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\ntpm_limit = 20000\n",
			[]wantErr{{10, `unknown key keys[0].tpm_limit (did you mean "tpm"? tpm_limit is LiteLLM's name for it)`}}},
		{"a fraction of tokens a minute", minimal + "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\ntpm = 1.5e4\n",
			[]wantErr{{10, `keys[0].tpm: want an integer, got a float (a whole number, without a decimal point)`}}},
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

// TestParseErrorsSpeakTOML covers a wrong type and a key written twice, as a homelab user
// writes them: each is one error, at its line, in TOML's words (an array, a table, an integer;
// not Go's slice, []any or int64), with the line's own value rewritten as it should be.
func TestParseErrorsSpeakTOML(t *testing.T) {
	target := func(rest string) string {
		return minimal + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\n" + rest
	}
	key := "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\n"
	tests := []struct {
		name string
		toml string
		want wantErr
	}{
		{"one target where a list belongs", minimal + "[routes.s]\ntargets = \"a\"\n",
			wantErr{8, `routes.s.targets: want an array, got a string (a list in brackets, even of one: targets = ["a"])`}},
		{"a command line as one string", target("command = \"llama-server -m /m.gguf --port 8080\"\n"),
			wantErr{10, `targets.b.command: want an array, got a string (a list in brackets, even of one: command = ["llama-server", "-m", "/m.gguf", "--port", "8080"])`}},
		{"a list where one name belongs", target("model = [\"m\"]\n"),
			wantErr{10, `targets.b.model: want a string, got an array`}},
		{"a table where a name belongs", target("model = { name = \"m\" }\n"),
			wantErr{10, `targets.b.model: want a string, got a table`}},
		{"a fraction where a count belongs", minimal + key + "rpm = 20.5\n",
			wantErr{10, `keys[0].rpm: want an integer, got a float (a whole number, without a decimal point)`}},
		{"listen as a port number", "listen = 8000\n" + minimal,
			wantErr{1, `listen: want a string, got an integer (host and port in quotes, such as listen = "127.0.0.1:8000")`}},
		{"a duration as a fraction", target("idle_timeout = 1.5   # minutes\n"),
			wantErr{10, `targets.b.idle_timeout: want a string, got a float (a duration is a string with its unit: idle_timeout = "1.5s" for 1.5 seconds, not idle_timeout = 1.5)`}},
		{"a table written twice", minimal + "[routes.s]\ntargets = [\"a\"]\n[routes.r]\ntargets = [\"a\"]\n",
			wantErr{9, `routes.r is defined twice (first at line 5): TOML allows each table and each key once; merge the two, or rename one`}},
		{"a key written twice", target("model = \"m\"\nmodel = \"n\"\n"),
			wantErr{11, `targets.b.model is defined twice (first at line 10)`}},
		{"a key written twice in the second [[keys]] block", minimal + key + "rpm = 1\n" + key + "rpm = 2\nrpm = 3\n",
			wantErr{15, `keys[1].rpm is defined twice (first at line 14)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "bad.toml", nil)
			got := Errors(err)
			if len(got) != 1 {
				t.Fatalf("got %d errors, want 1:\n%v", len(got), err)
			}
			if got[0].Line != tc.want.line || !strings.Contains(got[0].Msg, tc.want.msg) {
				t.Errorf("error = %d: %q, want line %d containing %q", got[0].Line, got[0].Msg, tc.want.line, tc.want.msg)
			}
		})
	}
}

// TestParseOneErrorForEachMistake covers the mistakes a user writing a homelab config by hand
// makes: each gets one error, at its line, saying what to write. A misspelt required key
// ("adpter") used to bring a second error, "adapter: missing", at the table's header; a misspelt
// [auto] key an error about the default it left in place; a misspelt table name ([target.x]) or
// an unquoted dotted name ([targets.qwen2.5]) an error for every route naming the target.
func TestParseOneErrorForEachMistake(t *testing.T) {
	key := "[[keys]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\n"
	tests := []struct {
		name string
		toml string
		env  func(string) string
		want wantErr
	}{
		{"a required target key misspelt", minimal + "[targets.b]\nadpter = \"openai\"\nurl = \"http://x\"\n", nil,
			wantErr{8, `unknown key targets.b.adpter (did you mean "adapter"?)`}},
		{"url misspelt", minimal + "[targets.b]\nadapter = \"ollama\"\nuri = \"http://x\"\n", nil,
			wantErr{9, `unknown key targets.b.uri (did you mean "url"?)`}},
		{"a route's targets misspelt", minimal + "[routes.s]\ntarget = [\"a\"]\n", nil,
			wantErr{8, `unknown key routes.s.target (did you mean "targets"?)`}},
		{"a key's sha256 misspelt", minimal + "[[keys]]\nname = \"k\"\nsha265 = \"" + hashTest + "\"\n", nil,
			wantErr{9, `unknown key keys[0].sha265 (did you mean "sha256"?)`}},
		{"a group's slots misspelt", minimal + "[targets.p]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:{port}/v1\"\n" +
			"command = [\"srv\", \"{port}\"]\ngroup = \"gpu\"\n[groups.gpu]\nslot = 1\n", nil,
			wantErr{13, `unknown key groups.gpu.slot (did you mean "slots"?)`}},
		{"an intent's terms misspelt", minimal + "[auto]\ndefault = \"r\"\n[[auto.intents]]\nname = \"code\"\nroute = \"r\"\nterm = [\"bug\"]\n", nil,
			wantErr{12, `unknown key auto.intents[0].term (did you mean "terms"?)`}},
		{"the auto default misspelt", minimal + "[auto]\ndefualt = \"r\"\n", nil,
			wantErr{8, `unknown key auto.defualt (did you mean "default"?)`}},
		{"a target table misspelt", "[target.a]\nadapter = \"openai\"\nurl = \"http://x\"\n[routes.r]\ntargets = [\"a\"]\n", nil,
			wantErr{1, `unknown table target.a (did you mean targets.a?)`}},
		{"[[key]]", minimal + "[[key]]\nname = \"k\"\nsha256 = \"" + hashTest + "\"\n", nil,
			wantErr{7, `unknown table key[0] (did you mean keys[0]?)`}},
		{"a dotted target name unquoted", "[targets.qwen2.5]\nadapter = \"ollama\"\nurl = \"http://x\"\n[routes.r]\ntargets = [\"qwen2.5\"]\n", nil,
			wantErr{1, `targets.qwen2.5: a name with a dot is written in quotes, [targets."qwen2.5"]: unquoted, the dot makes "5" a table inside a target named "qwen2"`}},
		{"LiteLLM's fallbacks", minimal + "[routes.s]\ntargets = [\"a\"]\nfallbacks = [\"a\"]\n", nil,
			wantErr{9, `unknown key routes.s.fallbacks (did you mean "targets"? fallbacks is LiteLLM's name for it)`}},
		{"the upstream key's variable unset", minimal + key + "[targets.b]\nadapter = \"openai\"\nurl = \"http://x\"\napi_key_env = \"OPENROUTER_API_KEY\"\n", nil,
			wantErr{13, `targets.b.api_key_env: environment variable OPENROUTER_API_KEY is unset or empty: set it where the gateway runs, for check-config as well as serve (export OPENROUTER_API_KEY=…`}},
		{"off loopback without keys", "listen = \"0.0.0.0:8000\"\n" + minimal, nil,
			wantErr{1, `listen: no [[keys]] configured, so the gateway would be open to anyone who can reach "0.0.0.0:8000": an open gateway may only listen on loopback (127.0.0.0/8, ::1, localhost); add a key (gateway keygen) or listen on 127.0.0.1`}},
		{"a strict route of public targets", minimal + "[targets.c]\nadapter = \"openai\"\nurl = \"https://x\"\nclass = \"public\"\napi_key_env = \"K\"\n[routes.s]\ntargets = [\"c\"]\nstrict = true\n",
			env("K", "v"), wantErr{14, `routes.s.strict: every target of this strict route is public`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "bad.toml", tc.env)
			got := Errors(err)
			if len(got) != 1 {
				t.Fatalf("got %d errors, want 1:\n%v", len(got), err)
			}
			if got[0].Line != tc.want.line || !strings.Contains(got[0].Msg, tc.want.msg) {
				t.Errorf("error = %d: %q, want line %d containing %q", got[0].Line, got[0].Msg, tc.want.line, tc.want.msg)
			}
		})
	}
}
