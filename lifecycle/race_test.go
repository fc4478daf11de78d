//go:build unix

package lifecycle

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSpecialistsChurnFourResident: SAIF's shape, six specialists sharing four slots, asked for
// by eight clients at once, 12 requests each, some of whom give up their wait. Never more than
// four processes are alive at once; a process a request holds keeps answering it as itself until
// it lets go (it is neither evicted nor its port given to another); and once every request is
// over nothing is held, waited for or queued, and each port left is held by its process alone.
func TestSpecialistsChurnFourResident(t *testing.T) {
	names := []string{"code", "math", "law", "med", "chem", "poetry"}
	var specs []Spec
	for _, n := range names {
		specs = append(specs, inGroup("saif", fake(n)))
	}
	h := newHarness(t, specs, []GroupSpec{{Name: "saif", Slots: 4}}, Options{StopGrace: 50 * time.Millisecond})
	h.passGraces()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var most atomic.Int64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			n := 0
			for _, st := range h.m.Status() {
				if st.PID != 0 {
					n++
				}
			}
			if int64(n) > most.Load() {
				most.Store(int64(n))
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var served, gaveUp atomic.Int64
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := range 12 {
				name := names[(c*5+i*7)%len(names)]
				rctx := ctx
				if (c+i)%5 == 0 { // a client that leaves while it waits (or not: it may be served first)
					var stop context.CancelFunc
					rctx, stop = context.WithCancel(ctx)
					go func() { runtime.Gosched(); stop() }()
				}
				url, release, err := h.m.Ensure(rctx, name)
				if err != nil {
					if rctx != ctx && errors.Is(err, context.Canceled) {
						gaveUp.Add(1)
						continue
					}
					t.Errorf("client %d: Ensure(%s): %v", c, name, err)
					return
				}
				for range 2 { // a request held across the others' loads and evictions
					if model, err := chat(url); err != nil || model != name {
						t.Errorf("client %d: %s while held: model %q, err %v", c, name, model, err)
					}
					runtime.Gosched()
				}
				release()
				served.Add(1)
			}
		})
	}
	wg.Wait()
	close(done)
	<-sampled
	t.Logf("served %d, gave up %d", served.Load(), gaveUp.Load())
	if n := most.Load(); n > 4 {
		t.Errorf("%d processes alive at once in a group of four slots", n)
	}
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	for _, mem := range h.m.members {
		if mem.busy != 0 || mem.waiting != 0 {
			t.Errorf("%s: busy %d, waiting %d with every request over", mem.spec.Name, mem.busy, mem.waiting)
		}
	}
	if len(h.m.slotLine) != 0 {
		t.Errorf("%d left in the slot line with every request over", len(h.m.slotLine))
	}
	for port, n := range h.m.ports {
		if n != 1 {
			t.Errorf("port %d has %d holders with every request over, want its process alone", port, n)
		}
	}
}
