package upstream

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hayula/gateway/core"
)

// TestNamedToolLinear: namedTool looked for each function an allowed_tools choice lists by
// decoding the tools one after another from the first, and checked each name against every name
// listed before it, so a body listing n tools and allowing them all in reverse order cost about
// n*n/2 decodes: 4,000 tools took 8 million. It now decodes each tool once. The test counts the
// allocations of n and 4n tools (a decode allocates): linear work grows about 4 times, quadratic 16.
func TestNamedToolLinear(t *testing.T) {
	tgt := &core.Target{Name: "ol", Model: "m"}
	build := func(n int) (tools, choice []byte) {
		var tb, cb strings.Builder
		tb.WriteByte('[')
		cb.WriteString(`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[`)
		for i := range n {
			if i > 0 {
				tb.WriteByte(',')
				cb.WriteByte(',')
			}
			fmt.Fprintf(&tb, `{"type":"function","function":{"name":"f%d","parameters":{}}}`, i)
			fmt.Fprintf(&cb, `{"type":"function","function":{"name":"f%d"}}`, n-1-i)
		}
		tb.WriteByte(']')
		cb.WriteString(`]}}`)
		return []byte(tb.String()), []byte(cb.String())
	}
	var allocs [2]float64
	for k, n := range []int{250, 1000} {
		tools, choice := build(n)
		out, err := namedTool(tgt, tools, choice)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(out), `"type":"function"`); got != n {
			t.Fatalf("%d tools allowed, %d offered", n, got)
		}
		if !strings.HasPrefix(string(out), fmt.Sprintf(`[{"type":"function","function":{"name":"f%d"`, n-1)) {
			t.Fatalf("not in the order allowed: %.80s", out)
		}
		allocs[k] = testing.AllocsPerRun(2, func() { _, _ = namedTool(tgt, tools, choice) })
	}
	ratio := allocs[1] / allocs[0]
	t.Logf("250 tools: %.0f allocations; 1000: %.0f (%.1f times)", allocs[0], allocs[1], ratio)
	if ratio > 8 {
		t.Errorf("4 times the tools cost %.1f times the allocations (%.0f -> %.0f): not linear", ratio, allocs[0], allocs[1])
	}
}
