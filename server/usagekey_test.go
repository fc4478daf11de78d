package server

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// fakeChunk is the bench's fake upstream's content chunk (bench/upstream.go).
const fakeChunk = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1764460800,"model":"fake-model",` +
	`"system_fingerprint":"fp_bench","choices":[{"index":0,"delta":{"content":" token7"},"logprobs":null,"finish_reason":null}]}`

// TestHasUsageKeyAgrees holds hasUsageKey to bytes.Contains, on chunks and on near misses of
// the key strung together at random, at every place in a word.
func TestHasUsageKeyAgrees(t *testing.T) {
	pieces := []string{`u`, `usage`, `usage"`, `sage"`, `usag`, `"`, `x`, `uu`, `null`, `"usage":`, `é`}
	inputs := []string{``, `u`, `usage`, `usage"`, `"usage"`, fakeChunk, fakeChunk + `usage"`, `usage"` + fakeChunk,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		b.WriteString(strings.Repeat("x", rng.IntN(40)))
		for range rng.IntN(10) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		inputs = append(inputs, b.String())
	}
	for _, in := range inputs {
		if got, want := hasUsageKey([]byte(in)), bytes.Contains([]byte(in), []byte(usageKey)); got != want {
			t.Errorf("hasUsageKey(%q) = %v, want %v", in, got, want)
		}
	}
}

func FuzzHasUsageKey(f *testing.F) {
	for _, s := range []string{fakeChunk, `usage"`, `uusage"u`, `usage`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, ev []byte) {
		if got, want := hasUsageKey(ev), bytes.Contains(ev, []byte(usageKey)); got != want {
			t.Errorf("hasUsageKey(%q) = %v, want %v", ev, got, want)
		}
	})
}

// BenchmarkHasUsageKey is the search every event of a stream passed through gets when its
// tokens are counted (streamUsage.see): the bench's chunk, which has none, and the usage chunk.
func BenchmarkHasUsageKey(b *testing.B) {
	for _, e := range []struct{ name, ev string }{
		{"chunk", fakeChunk},
		{"usage chunk", `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`},
	} {
		b.Run(e.name, func(b *testing.B) {
			ev := []byte(e.ev)
			for b.Loop() {
				hasUsageKey(ev)
			}
		})
	}
}
