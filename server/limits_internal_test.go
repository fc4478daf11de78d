package server

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/health"
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

// TestKeySlotsHammeredAcrossReload: eight clients of a key with max_concurrent = 2 and rpm = 600
// hammer the replaced server and the one a reload built from it (newKeyLimits with prev) at
// once, on a clock that refills the bucket as they go: never more than two hold a slot, whether
// refused by the cap or by the bucket (which takes the slot and gives it back), and once all have
// ended the count is back at zero on both servers, the count they share.
func TestKeySlotsHammeredAcrossReload(t *testing.T) {
	keys := []config.Key{{Name: "k", MaxConcurrent: 2, RPM: 600}}
	clock := health.NewManualClock(time.Unix(1_800_000_000, 0))
	old := &Server{clock: clock, limits: newKeyLimits(keys, nil, nil)}
	cur := &Server{clock: clock, limits: newKeyLimits(keys, old.limits, keys)}
	var (
		wg                    sync.WaitGroup
		holding, peak         atomic.Int64
		served, capped, spent atomic.Int64
	)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := new(reqState)
			for i := range 2000 {
				if g == 0 && i%50 == 0 {
					clock.Advance(100 * time.Millisecond) // one request back
				}
				s := old
				if (g+i)%2 == 1 {
					s = cur
				}
				if e := s.limit(&keys[0], st); e != nil {
					if st.busy != nil {
						t.Error("a refused request holds a slot")
						return
					}
					if strings.Contains(e.Message, "concurrent") {
						capped.Add(1)
					} else {
						spent.Add(1)
					}
					continue
				}
				n := holding.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				runtime.Gosched()
				holding.Add(-1)
				s.unbusy(st)
				served.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("served %d, refused by the cap %d, by the bucket %d", served.Load(), capped.Load(), spent.Load())
	if p := peak.Load(); p > 2 {
		t.Errorf("%d held a slot at once; max_concurrent is 2", p)
	}
	if n, m := old.limits[0].busy.Load(), cur.limits[0].busy.Load(); n != 0 || m != 0 {
		t.Errorf("with every request ended the key's count is %d (replaced) and %d (current), want 0", n, m)
	}
	if served.Load() == 0 || capped.Load() == 0 || spent.Load() == 0 {
		t.Errorf("not every path was taken: served %d, refused by the cap %d, by the bucket %d",
			served.Load(), capped.Load(), spent.Load())
	}
}

// TestKeySlotsNeverCountedOverMax: a key's count of requests in flight never goes over its
// max_concurrent, even while refusals race with takes and releases, so that no request is
// refused for a slot another's refusal held for a moment. Each client looks at the count while
// it holds a slot, when the count is at its highest.
func TestKeySlotsNeverCountedOverMax(t *testing.T) {
	const max = 2
	busy := new(atomic.Int64)
	var over atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := int64(0)
			for range 20000 {
				if takeSlot(busy, max) {
					for range 16 {
						if busy.Load() > max {
							seen++
						}
					}
					busy.Add(-1)
				}
			}
			over.Add(seen)
		}()
	}
	wg.Wait()
	if n := over.Load(); n > 0 {
		t.Errorf("the count was seen over max_concurrent %d times", n)
	}
	if n := busy.Load(); n != 0 {
		t.Errorf("%d slots left taken", n)
	}
}
