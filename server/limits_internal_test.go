package server

import (
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestRPMRefusalsWaitOneIntervalAtMost: requests refused by an empty bucket at the same moment
// are each told to wait at most one interval (2 s at 30 a minute), however many race. Reserving
// and cancelling let each see the others' reservations: told 3 s and 4 s under the chaos soak.
func TestRPMRefusalsWaitOneIntervalAtMost(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := rate.NewLimiter(rate.Limit(30.0/60), 30)
	for range 30 {
		if d := rpmWait(l, now); d != 0 {
			t.Fatalf("a full bucket refused: wait %v", d)
		}
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		worst time.Duration
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := time.Duration(0)
			for range 5000 {
				local = max(local, rpmWait(l, now))
			}
			mu.Lock()
			worst = max(worst, local)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if worst <= 0 || worst > 2*time.Second {
		t.Errorf("the longest wait told to a refused request was %v; one interval is 2s", worst)
	}
	// Half an interval later half of it is left, and the bucket still holds nothing.
	if d := rpmWait(l, now.Add(time.Second)); d != time.Second {
		t.Errorf("a second later: wait %v, want 1s", d)
	}
	if d := rpmWait(l, now.Add(2*time.Second)); d != 0 {
		t.Errorf("an interval later the request was refused: wait %v", d)
	}
}
