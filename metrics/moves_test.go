package metrics

import (
	"strings"
	"testing"
	"time"
)

// TestMovesCounted: model auto's moves are counted by the route the request was classified to
// and the one it went to, go on across a reload that keeps both names, and are forgotten once a
// configuration without one of them serves (Prune), as every route series is; counting one
// allocates nothing.
func TestMovesCounted(t *testing.T) {
	old := New([]string{"r1", "vision", "gone"}, []string{"x"}, time.Unix(0, 0))
	old.Moved(0, 1)
	old.Moved(0, 1)
	old.Moved(2, 1)
	if n := testing.AllocsPerRun(100, func() { old.Moved(1, 0) }); n != 0 {
		t.Errorf("Moved allocates %v times", n)
	}
	old.Moved(-1, 0) // out of range: counts nothing
	old.Moved(0, 3)  // likewise
	old.Moved(1, 1)  // no move: counts nothing
	next := old.Next([]string{"vision", "r1"}, []string{"x"}, time.Unix(0, 0))
	next.Moved(1, 0) // r1 → vision
	next.Prune()
	var w Writer
	next.Write(&w, nil)
	got := parse(t, string(w.Bytes()))
	for k, v := range map[string]string{
		`hayula_auto_moves_total{from="r1",to="vision"}`: "3",
		`hayula_auto_moves_total{from="vision",to="r1"}`: "101",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if strings.Contains(k, `"gone"`) || strings.Contains(k, `from="r1",to="r1"`) {
			t.Errorf("%s written", k)
		}
	}
	if n := len(next.cells.moves); n != 2 {
		t.Errorf("after Prune the process keeps %d move cells, want 2 (r1→vision, vision→r1)", n)
	}
	back := next.Next([]string{"gone", "vision"}, []string{"x"}, time.Unix(0, 0))
	back.Prune()
	var w2 Writer
	back.Write(&w2, nil)
	if got := parse(t, string(w2.Bytes())); got[`hayula_auto_moves_total{from="gone",to="vision"}`] != "" {
		t.Errorf("a route brought back goes on from its old count:\n%s", w2.Bytes())
	}
}
