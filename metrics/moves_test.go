package metrics

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMovesCounted: model auto's moves are counted by the route the request was classified to
// and the one it went to, go on across a reload that keeps both names, and are forgotten once a
// configuration without one of them serves (Prune), as every route series is; counting one
// allocates nothing.
func TestMovesCounted(t *testing.T) {
	old := New([]string{"r1", "vision", "gone"}, []string{"x"}, time.Unix(0, 0)).WithMoves([]int{0, 1, 2})
	old.Moved(0, 1)
	old.Moved(0, 1)
	old.Moved(2, 1)
	if n := testing.AllocsPerRun(100, func() { old.Moved(1, 0) }); n != 0 {
		t.Errorf("Moved allocates %v times", n)
	}
	old.Moved(-1, 0) // out of range: counts nothing
	old.Moved(0, 3)  // likewise
	old.Moved(1, 1)  // no move: counts nothing
	next := old.Next([]string{"vision", "r1"}, []string{"x"}, time.Unix(0, 0)).WithMoves([]int{0, 1})
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
	back := next.Next([]string{"gone", "vision"}, []string{"x"}, time.Unix(0, 0)).WithMoves([]int{0, 1})
	back.Prune()
	var w2 Writer
	back.Write(&w2, nil)
	if got := parse(t, string(w2.Bytes())); got[`hayula_auto_moves_total{from="gone",to="vision"}`] != "" {
		t.Errorf("a route brought back goes on from its old count:\n%s", w2.Bytes())
	}
}

// TestMoveCellsOnlyAutosPairs: a Set holds a move cell only for each ordered pair of two routes
// auto moves among (WithMoves, given auto's move order), not for every pair of the
// configuration's routes: a route outside the order (one only a client names, such as an
// embeddings route) is in no pair, and a move to or from it counts nothing. A reload whose order
// leaves a pair out forgets its count once its configuration serves (Prune), though both routes
// are still there; a Set given no order holds no move cell at all.
func TestMoveCellsOnlyAutosPairs(t *testing.T) {
	routes := []string{"embed", "r1", "vision", "general"}
	cellsOf := func(s *Set) []string {
		var got []string
		for k := range maps.Keys(s.cells.moves) {
			got = append(got, k.from+"→"+k.to)
		}
		slices.Sort(got)
		return got
	}
	s := New(routes, []string{"x"}, time.Unix(0, 0)).WithMoves([]int{1, 2, 3})
	want := []string{"general→r1", "general→vision", "r1→general", "r1→vision", "vision→general", "vision→r1"}
	if got := cellsOf(s); !slices.Equal(got, want) {
		t.Errorf("move cells %q, want %q", got, want)
	}
	s.Moved(0, 1) // embed is no route of auto's: counts nothing
	s.Moved(1, 0)
	s.Moved(1, 2)
	var w Writer
	s.Write(&w, nil)
	for k, v := range parse(t, string(w.Bytes())) {
		if strings.HasPrefix(k, "hayula_auto_moves_total") && (k != `hayula_auto_moves_total{from="r1",to="vision"}` || v != "1") {
			t.Errorf("%s %s written", k, v)
		}
	}
	if n := len(s.cells.moves); n != len(want) {
		t.Errorf("counting a move auto cannot make left %d move cells, want %d", n, len(want))
	}

	next := s.Next(routes, []string{"x"}, time.Unix(0, 0)).WithMoves([]int{1, 3}) // vision out of the order
	next.Prune()
	if got, want := cellsOf(next), []string{"general→r1", "r1→general"}; !slices.Equal(got, want) {
		t.Errorf("after a reload that takes vision out of the order, move cells %q, want %q", got, want)
	}
	back := next.Next(routes, []string{"x"}, time.Unix(0, 0)).WithMoves([]int{1, 2, 3})
	back.Prune()
	if v := back.cells.moves[routeMove{"r1", "vision"}].Load(); v != 0 {
		t.Errorf("r1→vision brought back into the order goes on from %d", v)
	}

	none := New(routes, []string{"x"}, time.Unix(0, 0))
	none.Moved(1, 2)
	if n := len(none.cells.moves); n != 0 {
		t.Errorf("a Set without auto holds %d move cells", n)
	}
}
