//go:build unix

package lifecycle

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDrainEndsSlotWait: a request waiting for a slot in a full group, whose member serves a
// request in flight, gets ErrStopping once Drain is called, rather than waiting for the drain to
// end and the slot to free; the member in use goes on serving.
func TestDrainEndsSlotWait(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a")), inGroup("g", fake("b"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, releaseA, err := h.m.Ensure(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseA()
	waited := make(chan error, 1)
	go func() {
		_, release, err := h.m.Ensure(ctx, "b")
		if err == nil {
			release()
		}
		waited <- err
	}()
	eventually(t, "Ensure(b) to wait for the slot", func() bool {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		return len(h.m.slotLine) == 1 && h.m.slotLine[0] == h.m.byName["b"]
	})
	select {
	case err := <-waited:
		t.Fatalf("Ensure(b) returned %v while the group was full", err)
	default:
	}
	h.m.Drain()
	if err := <-waited; !errors.Is(err, ErrStopping) {
		t.Errorf("Ensure(b) after Drain: %v, want ErrStopping", err)
	}
	if st := h.status(t, "a"); st.State != StateReady {
		t.Errorf("a is %s after Drain, want ready while its request runs", st.State)
	}
}
