//go:build unix

package lifecycle

import (
	"context"
	"testing"
	"time"
)

// TestReloadPinnedStartsWhenSlotFrees: a pinned member that a reload adds to a group whose every
// slot serves a request cannot start at once; it starts as soon as one of them is released, not
// only when a request asks for it.
func TestReloadPinnedStartsWhenSlotFrees(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 2}}, Options{})
	if err := h.m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, releaseA, err := h.m.Ensure(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	_, releaseB, err := h.m.Ensure(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	if err := h.m.Reload(append(specs, inGroup("g", fake("p"))),
		[]GroupSpec{{Name: "g", Slots: 2, Pinned: []string{"p"}}}); err != nil {
		t.Fatal(err)
	}
	if st := h.m.State("p"); st != StateStopped {
		t.Fatalf("p is %s while every slot serves a request", st)
	}
	releaseA()
	eventually(t, "pinned p to start once a slot could be freed", func() bool { return h.m.State("p") == StateReady })
	if st := h.m.State("a"); st != StateStopped {
		t.Errorf("a is %s; it should have made room for p", st)
	}
}
