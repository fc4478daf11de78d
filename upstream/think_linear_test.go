package upstream

import (
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
