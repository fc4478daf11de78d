//go:build unix

package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"
)

// waitingFor reports how many Ensure calls wait for name's member.
func (h *harness) waitingFor(name string) int {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	return h.m.byName[name].waiting
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
		eventually(t, n+" waiting", func() bool { return h.waitingFor(n) == 1 })
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
