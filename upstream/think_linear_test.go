package upstream

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// TestThinkSplitterLinear: with reasoning = "think-tags" the splitter held the whitespace that
// may come before a <think> or a </think> as one string, and joined each next piece to it
// (held + piece), so a model streaming whitespace a token at a time (one that loops on "\n", as
// small models do) cost time and bytes quadratic in its length: 40,000 newlines copied 800 MB.
// The test counts the bytes split allocates for n and 4n pieces: linear grows about 4 times,
// quadratic 16. The output must stay what one split of the whole text gives.
func TestThinkSplitterLinear(t *testing.T) {
	for _, tc := range []struct {
		name         string
		before, unit string
		after        string
	}{
		{"before the block", "", "\n", "<think>r</think>answer"},
		{"before no block", "", " ", "answer"},
		{"inside the block", "<think>r", "\n", "</think>answer"},
		{"inside, then more reasoning", "<think>r", " ", "more</think>answer"},
		{"inside, never closed", "<think>r", "\t", ""},
		{"after a tag prefix", "<think>r</th", " ", "x</think>a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bytes [2]uint64
			for k, n := range []int{5000, 20000} {
				var s thinkSplitter
				var content, reasoning strings.Builder
				add := func(c, r string) { content.WriteString(c); reasoning.WriteString(r) }
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				add(s.split(tc.before))
				for range n {
					add(s.split(tc.unit))
				}
				add(s.split(tc.after))
				add(s.flush())
				runtime.ReadMemStats(&after)
				bytes[k] = after.TotalAlloc - before.TotalAlloc
				whole := tc.before + strings.Repeat(tc.unit, n) + tc.after
				wantC, wantR := splitThink(whole, core.ReasoningThinkTags)
				if content.String() != wantC || reasoning.String() != wantR {
					t.Fatalf("n=%d: pieces gave content %q reasoning %q; whole gave %q, %q", n,
						clipTail(content.String()), clipTail(reasoning.String()), clipTail(wantC), clipTail(wantR))
				}
			}
			ratio := float64(bytes[1]) / float64(bytes[0])
			t.Logf("5000 pieces: %d B; 20000: %d B (%.1f times)", bytes[0], bytes[1], ratio)
			if ratio > 8 {
				t.Errorf("4 times the pieces allocated %.1f times the bytes (%d -> %d): not linear", ratio, bytes[0], bytes[1])
			}
		})
	}
}

func clipTail(s string) string {
	if len(s) > 40 {
		return "…" + s[len(s)-40:]
	}
	return s
}

// TestThinkStreamUsageChunksLinear: before each usage chunk (a chunk without choices) the
// think-tags stream flushes what its choices' splitters hold, and it looked at the splitter of
// every choice index the stream had named so far, sorted, at each one: an upstream naming n
// choice indices and then sending n usage chunks (2.5 MB at n = 16,000) cost n*n looks, 64 s and
// 7.7 GB. The test counts the bytes the stream allocates for n and 4n of each: linear grows
// about 4 times, quadratic 16. What the stream writes must stay what it was: one closing chunk
// for the one choice that holds bytes, before the first usage chunk.
func TestThinkStreamUsageChunksLinear(t *testing.T) {
	var got [2]uint64
	for k, n := range []int{500, 2000} {
		evs := []string{`{"choices":[{"index":1,"delta":{"content":" <thi"},"finish_reason":null}]}`}
		for i := range n {
			evs = append(evs, fmt.Sprintf(`{"choices":[{"index":%d,"delta":{"content":"x"},"finish_reason":null}]}`, i+2))
		}
		const usage = `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
		for range n {
			evs = append(evs, usage)
		}
		s := newThinkStream(&listStream{evs: evs}, core.ReasoningThinkTags)
		var out []string
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for {
			ev, err := s.Next()
			if err != nil {
				break
			}
			out = append(out, string(ev))
		}
		runtime.ReadMemStats(&after)
		got[k] = after.TotalAlloc - before.TotalAlloc
		if len(out) != 2*n+1 {
			t.Fatalf("n=%d: %d chunks out, want %d", n, len(out), 2*n+1)
		}
		closing := out[n]
		if !strings.Contains(closing, `"content":" <thi"`) || strings.Count(closing, `"index"`) != 1 ||
			!strings.Contains(closing, `"index":1}`) {
			t.Fatalf("n=%d: the closing chunk is %s, want index 1's held \" <thi\" alone", n, closing)
		}
		for _, ev := range out[n+1:] {
			if ev != usage {
				t.Fatalf("n=%d: after the closing chunk came %s, want the usage chunks alone", n, ev)
			}
		}
	}
	ratio := float64(got[1]) / float64(got[0])
	t.Logf("500 indices and usage chunks: %d B; 2000: %d B (%.1f times)", got[0], got[1], ratio)
	if ratio > 8 {
		t.Errorf("4 times the indices and usage chunks allocated %.1f times the bytes (%d -> %d): not linear", ratio, got[0], got[1])
	}
}
