//go:build unix

package lifecycle

import (
	"context"
	"slices"
	"testing"
)

// TestShrunkGroupStartsWithinSlots: after a reload leaves a group running more members than its
// new slots, a request for a stopped member evicts as many idle ones as it takes to fit, rather
// than one, so that the newcomer does not run beside more than slots-1 others.
func TestShrunkGroupStartsWithinSlots(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b")), inGroup("g", fake("c")), inGroup("g", fake("d"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 3}}, Options{})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		h.use(t, n)
	}
	if err := h.m.Reload(specs, []GroupSpec{{Name: "g", Slots: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := h.running(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("running after the shrink: %v; nothing is evicted for it", got)
	}
	h.use(t, "d")
	var up []string
	for _, st := range h.m.Status() {
		if st.State != StateStopped {
			up = append(up, st.Name+"="+st.State.String())
		}
	}
	if len(up) > 1 {
		t.Errorf("group of 1 slot runs %v once d is ready", up)
	}
}
