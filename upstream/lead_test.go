package upstream

import (
	"encoding/json"
	"testing"

	"github.com/hayula/gateway/core"
)

// TestContentless: the chunks vLLM, llama-server, SGLang, OpenAI and OpenRouter send before the
// first token carry nothing of an answer; a chunk with text, reasoning, a refusal, a call, a
// finish, logprobs, usage, an error, the gateway's own member or something unknown in it does,
// and so does one that is no chunk.
func TestContentless(t *testing.T) {
	const head = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",`
	choice := func(delta, rest string) string {
		return head + `"choices":[{"index":0,"delta":` + delta + rest + `}]}`
	}
	tests := []struct {
		name  string
		chunk string
		want  bool
	}{
		{"vllm", choice(`{"role":"assistant","content":""}`, `,"logprobs":null,"finish_reason":null`), true},
		{"llama-server", `{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],` +
			`"created":1,"id":"c","model":"m","system_fingerprint":"b6097-9515c613","object":"chat.completion.chunk"}`, true},
		{"sglang", head + `"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":null,"tool_calls":null},` +
			`"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}`, true},
		{"openai", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt","service_tier":"default",` +
			`"system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},` +
			`"logprobs":null,"finish_reason":null}],"obfuscation":"Vd8m"}`, true},
		{"openrouter", `{"id":"gen-1","provider":"OpenAI","model":"m","object":"chat.completion.chunk","created":1,` +
			`"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}`, true},
		{"empty delta", choice(`{}`, `,"finish_reason":null`), true},
		{"no delta", head + `"choices":[{"index":0}]}`, true},
		{"empty finish strings", choice(`{"role":"assistant"}`, `,"finish_reason":""`), true},
		{"null string finish", choice(`{"role":"assistant"}`, `,"finish_reason":"null"`), true},
		{"empty logprobs", choice(`{"role":"assistant"}`, `,"logprobs":{"content":[],"refusal":null}`), true},

		{"completions, no text", `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"text":"","index":0,"logprobs":null,"finish_reason":null}]}`, true},

		{"content", choice(`{"role":"assistant","content":"Hi"}`, ``), false},
		{"content space", choice(`{"content":" "}`, ``), false},
		{"reasoning_content", choice(`{"role":"assistant","content":"","reasoning_content":"Hm"}`, ``), false},
		{"reasoning", choice(`{"role":"assistant","reasoning":"Hm"}`, ``), false},
		{"refusal", choice(`{"role":"assistant","refusal":"No"}`, ``), false},
		{"tool call", choice(`{"role":"assistant","tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":""}}]}`, ``), false},
		{"function call", choice(`{"function_call":{"name":"f"}}`, ``), false},
		{"finish", choice(`{}`, `,"finish_reason":"stop"`), false},
		{"abort", choice(`{}`, `,"finish_reason":"abort"`), false},
		{"logprobs", choice(`{"role":"assistant"}`, `,"logprobs":{"content":[{"token":"a","logprob":0}]}`), false},
		{"unknown delta member", choice(`{"role":"assistant","audio":{"id":"a"}}`, ``), false},
		{"unknown choice member", choice(`{}`, `,"error":{"message":"x"}`), false},
		{"usage", head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}}`, false},
		{"usage only", head + `"choices":[],"usage":{"prompt_tokens":3}}`, false},
		{"error", head + `"choices":[],"error":{"message":"x"}}`, false},
		{"hayula", head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"hayula":{"specialist":"s"}}`, false},
		{"azure filter results", `{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0}]}`, false},
		{"completions text", `{"id":"c","object":"text_completion","choices":[{"text":"a","index":0,"finish_reason":null}]}`, false},
		{"no choices", head + `"usage":null}`, false},
		{"empty choices", head + `"choices":[]}`, false},
		{"choices not an array", head + `"choices":{}}`, false},
		{"choice not an object", head + `"choices":[1]}`, false},
		{"escaped key", choice(`{"con\u0074ent":"Hi"}`, ``), false},
		{"not an object", `[]`, false},
		{"cut short", head + `"choices":[{"index":0,"delta":{"role":"assistant"`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Contentless([]byte(tc.chunk)); got != tc.want {
				t.Errorf("Contentless(%s) = %v, want %v", tc.chunk, got, tc.want)
			}
		})
	}
}

// TestContentlessTranslatedFirstChunk: a translating adapter's first chunk carries the role even
// when its upstream's first event had no text (a think-tags splitter holding "<think>"): that
// chunk is held as an openai target's is; one with text, or that names a SAIF specialist, is not.
func TestContentlessTranslatedFirstChunk(t *testing.T) {
	c := newChunker("x", 1, "m", core.ReasoningPassthrough)
	if p := c.delta("", nil, "", nil, nil); !Contentless(p) {
		t.Errorf("first chunk without text %s: want contentless", p)
	}
	c = newChunker("x", 1, "m", core.ReasoningThinkTags)
	if p := c.delta("<think>", nil, "", nil, nil); !Contentless(p) {
		t.Errorf("first chunk holding <think> %s: want contentless", p)
	}
	c = newChunker("x", 1, "m", core.ReasoningPassthrough)
	if p := c.delta("Hi", nil, "", nil, nil); Contentless(p) {
		t.Errorf("first chunk with text %s: want it to commit", p)
	}
	c = newChunker("x", 1, "m", core.ReasoningPassthrough)
	if p := c.delta("", nil, "", nil, &hayulaJSON{Specialist: "s"}); Contentless(p) {
		t.Errorf("first chunk naming a specialist %s: want it to commit", p)
	}
}

// TestAbortsEmpty: an abort with nothing in it ends a stream before its first token; one with
// text, or another finish, does not.
func TestAbortsEmpty(t *testing.T) {
	for chunk, want := range map[string]bool{
		`{"choices":[{"index":0,"delta":{},"finish_reason":"abort"}]}`:                   true,
		`{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"abort"}]}`:       true,
		`{"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":"abort"}]}`:    false,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`:                    false,
		`{"choices":[{"index":0,"delta":{"content":"abort"},"finish_reason":null}]}`:     false,
		`{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":"abort"}]}`: true,
	} {
		if got := AbortsEmpty([]byte(chunk)); got != want {
			t.Errorf("AbortsEmpty(%s) = %v, want %v", chunk, got, want)
		}
	}
}

// TestContentlessAllocs: the check runs on the first event of every stream the server relays,
// and allocates nothing. CI runs tests named *Alloc* without -race.
func TestContentlessAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	lead := []byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,` +
		`"delta":{"role":"assistant","content":"","reasoning_content":null},"logprobs":null,"finish_reason":null}],"usage":null}`)
	token := []byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,` +
		`"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = Contentless(lead), Contentless(token) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// FuzzContentless: a chunk Contentless holds carries nothing carriesAnswer (the abort and
// choice-error checks' rule, encoding/json's reading) finds in it, and nothing panics.
func FuzzContentless(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}],"id":"c"}`,
		`{"choices":[{"text":"","index":0}]}`,
		`{"choices":[{"delta":{"content":"a"}}]}`,
		`{"choices":[{"delta":{"Content":"a"}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if Contentless(b) && json.Valid(b) && carriesAnswer(b) {
			t.Errorf("Contentless(%s), yet it carries an answer", b)
		}
	})
}

// BenchmarkContentless: the check on every stream's first event. A first event with text is told
// by one search; vLLM's role chunk is walked.
func BenchmarkContentless(b *testing.B) {
	for _, c := range []struct{ name, chunk string }{
		{"text", `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","system_fingerprint":"fp_bench","choices":[{"index":0,"delta":{"role":"assistant","content":" token0"},"logprobs":null,"finish_reason":null}]}`},
		{"role-only", `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`},
	} {
		chunk := []byte(c.chunk)
		want := c.name == "role-only"
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if Contentless(chunk) != want {
					b.Fatal("wrong verdict")
				}
			}
		})
	}
}
