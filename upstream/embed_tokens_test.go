package upstream

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// TestOllamaEmbedTokensRefusedCheaply: the ollama adapter refuses an embeddings input of token
// ids, which Ollama cannot take, by trying to decode it as an array of strings: encoding/json
// then goes through the whole array, growing a []string and building an error for every
// number, so a body of n tokens (OpenAI's API takes them) allocated about 86 times its size
// before the refusal (a 10 MiB body, some 900 MB). The kinds of the elements are now looked at
// first. The test counts the bytes the refusal allocates against the body's size.
func TestOllamaEmbedTokensRefusedCheaply(t *testing.T) {
	a := &openaiOllama{t: &core.Target{Name: "ol", Model: "m"}, now: fixedNow}
	for _, input := range []string{
		"[" + strings.TrimSuffix(strings.Repeat("1,", 1<<19), ",") + "]",
		`["a",` + strings.TrimSuffix(strings.Repeat("1,", 1<<19), ",") + "]",
		"[[" + strings.TrimSuffix(strings.Repeat("1,", 1<<19), ",") + "]]",
	} {
		body := []byte(`{"model":"m","input":` + input + `}`)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := a.embed(context.Background(), &core.Request{Op: core.OpEmbeddings, Body: body})
		runtime.ReadMemStats(&after)
		var re *core.StatusError
		if !errors.As(err, &re) || re.Code != "unsupported_input" {
			t.Fatalf("%.20s…: %v, want the refusal of tokens", input, err)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%.20s…: a %d-byte body, %d bytes allocated (%.1f times)", input, len(body), alloc, float64(alloc)/float64(len(body)))
		if alloc > 4*uint64(len(body)) {
			t.Errorf("%.20s…: refusing a %d-byte body allocated %d bytes (%.1f times)", input, len(body), alloc, float64(alloc)/float64(len(body)))
		}
	}
}

// TestSAIFPromptArrayRefusedCheaply: the saif adapter completes one prompt string; it learned that
// a completions prompt of token ids, or of many strings, was not one by decoding the whole array
// into a []string (an error built for every number, or every string copied), some 86 or 24 bytes
// allocated for each byte of the body before the refusal. The elements are now counted first.
func TestSAIFPromptArrayRefusedCheaply(t *testing.T) {
	a := &openaiSAIF{t: &core.Target{Name: "saif", Model: "m"}, now: fixedNow, newID: func() string { return "x" }}
	for _, prompt := range []string{
		"[" + strings.TrimSuffix(strings.Repeat("1,", 1<<19), ",") + "]",
		"[" + strings.TrimSuffix(strings.Repeat(`"a",`, 1<<18), ",") + "]",
		"[[" + strings.TrimSuffix(strings.Repeat("1,", 1<<19), ",") + "]]",
	} {
		body := []byte(`{"model":"m","prompt":` + prompt + `}`)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := a.fromCompletions(&core.Request{Op: core.OpCompletions, Body: body}, &saifRequest{})
		runtime.ReadMemStats(&after)
		var se *core.StatusError
		if !errors.As(err, &se) || se.Code != "unsupported_prompt" {
			t.Fatalf("%.20s…: %v, want the refusal of a batch or tokens", prompt, err)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%.20s…: a %d-byte body, %d bytes allocated (%.1f times)", prompt, len(body), alloc, float64(alloc)/float64(len(body)))
		if alloc > 4*uint64(len(body)) {
			t.Errorf("%.20s…: refusing a %d-byte body allocated %d bytes (%.1f times)", prompt, len(body), alloc, float64(alloc)/float64(len(body)))
		}
	}
	// One string in an array is still a prompt.
	var out saifRequest
	if err := a.fromCompletions(&core.Request{Op: core.OpCompletions, Body: []byte(`{"model":"m","prompt":[ "hi" ]}`)}, &out); err != nil || out.Prompt != "hi" {
		t.Errorf("[\"hi\"]: %v, prompt %q", err, out.Prompt)
	}
}
