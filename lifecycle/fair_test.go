//go:build unix

package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"
)

// inLine reports whether name's member is in its group's slot line: its Ensure has asked for a
// slot and found the group full. Its waiting count is not enough: it rises before the call's
// start flight reaches the line, and a call made after it could reach the line first
// (TestSlotWaitersServedInArrivalOrder failed about once in fifteen runs of the package so).
func (h *harness) inLine(name string) bool {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	return slices.Contains(h.m.slotLine, h.m.byName[name])
}

// Requests that wait for a slot in a full group get it in the order they came: a router plus
// specialists in few slots, where the specialist asked for first must not be passed over by one
// asked for later each time a slot frees (and then wait out its load_timeout).
func TestSlotWaitersServedInArrivalOrder(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	var specs []Spec
	for _, n := range names {
		specs = append(specs, inGroup("g", fake(n)))
	}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, release, err := h.m.Ensure(ctx, "a")
	if err != nil {
		t.Fatalf("Ensure(a): %v", err)
	}
	type got struct {
		name    string
		release func()
		err     error
	}
	served := make(chan got, 3)
	// b, then c, then d ask while a holds the only slot.
	for _, n := range names[1:] {
		go func() {
			_, rel, err := h.m.Ensure(ctx, n)
			served <- got{n, rel, err}
		}()
		eventually(t, n+" in the slot line", func() bool { return h.inLine(n) })
	}
	release()
	var order []string
	for range 3 {
		g := <-served
		if g.err != nil {
			t.Fatalf("Ensure(%s): %v", g.name, g.err)
		}
		order = append(order, g.name)
		g.release()
	}
	if want := []string{"b", "c", "d"}; !slices.Equal(order, want) {
		t.Errorf("served in order %v, want %v (the order they asked in)", order, want)
	}
}
