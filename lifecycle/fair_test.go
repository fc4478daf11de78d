//go:build unix

package lifecycle

import (
	"context"
	"errors"
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

// TestJoinedRequestKeepsPlaceInLine: a request that joined the start of a member another request
// had begun keeps, in its group's slot line, the place of the time it asked when that start ends
// at its first caller's load_timeout. It queued again at the end of the line, behind requests
// that came after it but before that timeout.
func TestJoinedRequestKeepsPlaceInLine(t *testing.T) {
	const long = 10 * time.Minute
	spec := func(n string, load time.Duration) Spec {
		s := inGroup("g", fake(n))
		s.LoadTimeout = load
		return s
	}
	specs := []Spec{spec("a", long), spec("b", time.Minute), spec("c", long), spec("d", long)}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, releaseA, err := h.m.Ensure(ctx, "a")
	if err != nil {
		t.Fatalf("Ensure(a): %v", err)
	}
	type got struct {
		name    string
		release func()
		err     error
	}
	served := make(chan got, 4)
	ask := func(n string) {
		go func() {
			_, rel, err := h.m.Ensure(ctx, n)
			served <- got{n, rel, err}
		}()
	}
	// b's first request, then c's, while a holds the only slot.
	ask("b")
	eventually(t, "b in the slot line", func() bool { return h.inLine("b") })
	ask("c")
	eventually(t, "c in the slot line", func() bool { return h.inLine("c") })
	// Half b's load_timeout on, a second request for b joins its start; then d comes.
	h.clock.Advance(time.Minute / 2)
	ask("b")
	eventually(t, "the second request for b to wait", func() bool { return waitingFor(h, "b") == 2 })
	ask("d")
	eventually(t, "d in the slot line", func() bool { return h.inLine("d") })
	// b's start ends at its first request's load_timeout; the second has half of its own left.
	h.clock.Advance(time.Minute / 2)
	first := <-served
	var lt *LoadTimeoutError
	if first.name != "b" || !errors.As(first.err, &lt) {
		t.Fatalf("first answer: %s %v, want b's load timeout", first.name, first.err)
	}
	eventually(t, "the second request for b alone in line for it", func() bool {
		return waitingFor(h, "b") == 1 && h.inLine("b")
	})

	releaseA()
	var order []string
	for range 3 {
		g := <-served
		if g.err != nil {
			t.Fatalf("Ensure(%s): %v", g.name, g.err)
		}
		order = append(order, g.name)
		g.release()
	}
	if want := []string{"c", "b", "d"}; !slices.Equal(order, want) {
		t.Errorf("served in order %v, want %v (the order they asked in)", order, want)
	}
}

// TestLineLooksAgainWhenPlaceChanges: when the request that gave a member its place in its group's
// slot line leaves while others still wait for it, the member's place moves back to the next
// oldest, and the starts waiting in the line look again. Nobody was woken: a start that had found
// the member ahead of it went on waiting behind it. With the slot already free and the member's
// own start between two flights (leaveLine keeps its place while its first caller, whose
// load_timeout ended the flight, leaves), both then waited for a change that never came, each
// behind the other, until their load_timeouts, while the slot stood free. That interleaving
// cannot be held still from outside, so the test checks what breaks it: the line is told.
func TestLineLooksAgainWhenPlaceChanges(t *testing.T) {
	var specs []Spec
	for _, n := range []string{"a", "x", "y"} {
		specs = append(specs, inGroup("g", fake(n)))
	}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, releaseA, err := h.m.Ensure(ctx, "a")
	if err != nil {
		t.Fatalf("Ensure(a): %v", err)
	}
	type got struct {
		name    string
		release func()
		err     error
	}
	served := make(chan got, 3)
	ask := func(ctx context.Context, n string) {
		go func() {
			_, rel, err := h.m.Ensure(ctx, n)
			served <- got{n, rel, err}
		}()
	}
	// y's first request, then x's, then y's second, while a holds the only slot.
	firstY, leave := context.WithCancel(ctx)
	defer leave()
	ask(firstY, "y")
	eventually(t, "y in the slot line", func() bool { return h.inLine("y") })
	ask(ctx, "x")
	eventually(t, "x in the slot line", func() bool { return h.inLine("x") })
	ask(ctx, "y")
	eventually(t, "the second request for y to wait", func() bool { return waitingFor(h, "y") == 2 })

	h.m.mu.Lock()
	changed := h.m.changed
	h.m.mu.Unlock()
	leave()
	if g := <-served; g.name != "y" || !errors.Is(g.err, context.Canceled) {
		t.Fatalf("first answer: %s %v, want y's first request given up", g.name, g.err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("y's place in line moved behind x's, and the starts in line were not told")
	}

	releaseA()
	var order []string
	for range 2 {
		g := <-served
		if g.err != nil {
			t.Fatalf("Ensure(%s): %v", g.name, g.err)
		}
		order = append(order, g.name)
		g.release()
	}
	if want := []string{"x", "y"}; !slices.Equal(order, want) {
		t.Errorf("served in order %v, want %v (x asked before y's remaining request)", order, want)
	}
}
