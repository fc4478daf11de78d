//go:build unix

package lifecycle

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Two requests for different members of a one-slot group, each coming back as soon as it is
// served: each must be served, and a member that became ready for a waiting request must not be
// evicted before that request gets it.
func TestNoEvictionBeforeWaiterAcquires(t *testing.T) {
	specs := []Spec{inGroup("g", fake("a", "-delay", "50ms")), inGroup("g", fake("b", "-delay", "50ms"))}
	h := newHarness(t, specs, []GroupSpec{{Name: "g", Slots: 1}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		served []string
	)
	errs := make(chan error, 2)
	for _, name := range []string{"a", "b"} {
		wg.Go(func() {
			for range 5 {
				_, release, err := h.m.Ensure(ctx, name)
				if err != nil {
					errs <- err
					return
				}
				// The slot holds one member, so the order of these appends is the serving order.
				mu.Lock()
				served = append(served, name)
				mu.Unlock()
				release()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Ensure: %v", err)
	}
	// Each change of member in the serving order needs one start; a start beyond those is a member
	// that loaded and was evicted before the request it loaded for got it.
	want := 1
	for i := 1; i < len(served); i++ {
		if served[i] != served[i-1] {
			want++
		}
	}
	if got := h.status(t, "a").Starts + h.status(t, "b").Starts; got != want {
		t.Errorf("%d starts for serving order %v, want %d", got, served, want)
	}
}
