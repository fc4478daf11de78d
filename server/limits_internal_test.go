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

// TestKeySlotsHammeredAcrossReload: eight clients of a key with max_concurrent = 2 hammer the
// replaced server and the one a reload built from it (newKeyLimits with prev) at once: never
// more than two hold a slot, a refused request holds none, and once all have ended the count is
// back at zero on both servers, the count they share. Twice: without rpm, where the cap refuses
// (the clients start together, and each holds its slot across a yield, so a third finds two
// held); and with rpm = 60 on a clock that refills the bucket as they go, where the bucket runs
// dry and refuses too (and takes the slot and gives it back when another request took the
// bucket's last between the look and the take). One run of both kinds at once left which
// refusals came to the scheduler: on a loaded machine now none by the bucket, now none by the
// cap, in one run of fifteen.
func TestKeySlotsHammeredAcrossReload(t *testing.T) {
	for _, rpm := range []int{0, 60} {
		served, capped, spent := hammerKeySlots(t, config.Key{Name: "k", MaxConcurrent: 2, RPM: rpm})
		t.Logf("rpm %d: served %d, refused by the cap %d, by the bucket %d", rpm, served, capped, spent)
		if served == 0 || rpm == 0 && capped == 0 || rpm > 0 && spent == 0 {
			t.Errorf("rpm %d: a path was not taken: served %d, refused by the cap %d, by the bucket %d",
				rpm, served, capped, spent)
		}
	}
}

// hammerKeySlots runs TestKeySlotsHammeredAcrossReload's eight clients of key and reports what
// became of their requests.
func hammerKeySlots(t *testing.T, key config.Key) (served, capped, spent int64) {
	t.Helper()
	keys := []config.Key{key}
	clock := health.NewManualClock(time.Unix(1_800_000_000, 0))
	old := &Server{clock: clock, limits: limitsOf(keys, nil, nil)}
	cur := &Server{clock: clock, limits: limitsOf(keys, old.limits, keys)}
	var (
		wg            sync.WaitGroup
		holding, peak atomic.Int64
		n, c, r       atomic.Int64
	)
	start := make(chan struct{}) // the clients begin together
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := new(reqState)
			<-start
			for i := range 2000 {
				if g == 0 && i%50 == 0 {
					clock.Advance(time.Second) // one request back, at rpm = 60
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
						c.Add(1)
					} else {
						r.Add(1)
					}
					continue
				}
				h := holding.Add(1)
				for p := peak.Load(); h > p && !peak.CompareAndSwap(p, h); p = peak.Load() {
				}
				runtime.Gosched()
				holding.Add(-1)
				s.unbusy(st)
				n.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if p := peak.Load(); p > 2 {
		t.Errorf("%d held a slot at once; max_concurrent is 2", p)
	}
	if a, b := old.limits[0].busy.Load(), cur.limits[0].busy.Load(); a != 0 || b != 0 {
		t.Errorf("with every request ended the key's count is %d (replaced) and %d (current), want 0", a, b)
	}
	return n.Load(), c.Load(), r.Load()
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

// TestTPMChargesUnderConcurrency: 8 goroutines charging answers and admitting requests against
// one key's tpm bucket while the injected clock moves lose no update: the bucket ends where the
// same charges made one after another leave it (it starts deep in debt, so that it never fills
// and the refill is exactly the time that passed at tpm a minute). Admissions take nothing.
func TestTPMChargesUnderConcurrency(t *testing.T) {
	const (
		tpm     = 7 // a token every 8.57… s: the refill's remainder must carry exactly
		workers = 8
		rounds  = 5000
		debt    = 1 << 40
	)
	start := time.Unix(1_800_000_000, 0)
	clock := health.NewManualClock(start)
	b := newTokenBucket(tpm)
	b.charge(start, debt)
	var wg sync.WaitGroup
	charged := make([]uint64, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				n := uint64(1 + (w*31+i)%97)
				b.charge(clock.Now(), n)
				charged[w] += n
				if d, _ := b.admit(clock.Now()); d <= 0 {
					t.Errorf("a bucket in debt admitted a request")
					return
				}
				if w == 0 && i%10 == 0 {
					clock.Advance(1234567 * time.Microsecond)
				}
			}
		}()
	}
	wg.Wait()
	end := clock.Now()
	sum := uint64(0)
	for _, c := range charged {
		sum += c
	}
	refill := int64(end.Sub(start)) * tpm / int64(time.Minute)
	want := tpm - debt - int64(sum) + refill
	if got := b.levelAt(end); got != want {
		t.Errorf("level after %d concurrent charges: %d, want %d (%d tokens off)", workers*rounds, got, want, got-want)
	}

	// One after another, on a fresh bucket, the same charges at the same times end the same.
	seq := newTokenBucket(tpm)
	seq.charge(start, debt)
	seq.charge(end, sum)
	if got := seq.levelAt(end); got != want {
		t.Errorf("sequential level %d, want %d", got, want)
	}
}

// TestTPMWait: the wait told to a refused request is the time until the bucket holds a token
// again, exact to the nanosecond, and the bucket holds no more than tpm however long it was idle.
func TestTPMWait(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := newTokenBucket(100)
	if d, _ := b.admit(now); d != 0 {
		t.Fatalf("a fresh bucket refused: %v", d)
	}
	b.charge(now, 150)
	if d, used := b.admit(now); d != 30600*time.Millisecond || used != 150 {
		t.Errorf("50 in debt at 100 a minute: wait %v, used %d; want 30.6s, 150", d, used)
	}
	if d, _ := b.admit(now.Add(30 * time.Second)); d != 600*time.Millisecond {
		t.Errorf("repaid, empty: wait %v, want 600ms", d)
	}
	if d, _ := b.admit(now.Add(30600 * time.Millisecond)); d != 0 {
		t.Errorf("a token back: wait %v, want 0", d)
	}
	if got := b.levelAt(now.Add(time.Hour)); got != 100 {
		t.Errorf("after an idle hour the bucket holds %d, want 100", got)
	}
}

// TestTPMRefusalHoldsNoSlot: a key in tpm debt with max_concurrent = 1, hammered by 8 clients
// at once, refuses every request for its tokens: none is told the concurrency cap is reached
// (Retry-After: 1, counted as cap="max_concurrent"), since no request holds a slot. Asking tpm
// after taking a slot had each tpm refusal hold one for a moment: 837 and 25,338 of the
// 160,000 refusals were max_concurrent's in two runs.
func TestTPMRefusalHoldsNoSlot(t *testing.T) {
	t.Parallel()
	keys := []config.Key{{Name: "k", Index: 0, MaxConcurrent: 1, TPM: 1}}
	now := time.Unix(1_800_000_000, 0)
	s := &Server{clock: health.NewManualClock(now), limits: limitsOf(keys, nil, nil)}
	s.limits[0].tpm.charge(now, 1000)
	var concurrent atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := new(reqState)
			for range 20000 {
				e := s.limit(&keys[0], st)
				if e == nil {
					t.Error("a key in debt was admitted")
					return
				}
				if e.Type != "tokens" {
					concurrent.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := concurrent.Load(); n > 0 {
		t.Errorf("%d of a key's requests in tpm debt were refused by max_concurrent, with no slot taken", n)
	}
	if n := s.limits[0].busy.Load(); n != 0 {
		t.Errorf("%d slots left taken", n)
	}
}

// TestTPMWaitFromNow: the wait told to a refused request is counted from the time it was asked
// at, also when that reads before the bucket's own time (a request that read the clock before
// another's charge, or an injected clock set back): the bucket refills only from its own time
// on, so the wait is that much longer. It was counted from the bucket's time: a clock set back
// ten minutes had a key in debt told 30.6 s, and refused again then, for ten minutes.
func TestTPMWaitFromNow(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, back := range []time.Duration{0, time.Millisecond, 10 * time.Minute} {
		b := newTokenBucket(100)
		b.charge(now, 150)
		at := now.Add(-back)
		d, _ := b.admit(at)
		if want := back + 30600*time.Millisecond; d != want {
			t.Errorf("asked %v before the charge: wait %v, want %v", back, d, want)
		}
		if d, _ := b.admit(at.Add(d)); d != 0 {
			t.Errorf("asked %v before the charge, and again after the wait told: refused for %v more", back, d)
		}
	}
}

// limitsOf is newKeyLimits's caps, for a reload that carries no removed key's count.
func limitsOf(keys []config.Key, prev []keyLimit, prevKeys []config.Key) []keyLimit {
	l, _ := newKeyLimits(keys, prev, prevKeys, nil)
	return l
}

// TestRPMRefusalHoldsNoSlot: a key whose rpm bucket is empty, with max_concurrent = 1, hammered
// by 8 clients at once on a clock that stands still, refuses every request for its rpm: none is
// told the concurrency cap is reached (Retry-After: 1, counted as cap="max_concurrent"), since no
// request is served and none holds a slot. Taking the slot before asking rpm had each rpm
// refusal hold one for a moment, as asking tpm after the slot did (TestTPMRefusalHoldsNoSlot).
func TestRPMRefusalHoldsNoSlot(t *testing.T) {
	t.Parallel()
	keys := []config.Key{{Name: "k", Index: 0, MaxConcurrent: 1, RPM: 1}}
	now := time.Unix(1_800_000_000, 0)
	s := &Server{clock: health.NewManualClock(now), limits: limitsOf(keys, nil, nil)}
	if !s.limits[0].rpm.AllowN(now, 1) {
		t.Fatal("a fresh bucket held no request")
	}
	var concurrent atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := new(reqState)
			for range 20000 {
				e := s.limit(&keys[0], st)
				if e == nil {
					t.Error("a key with an empty rpm bucket was admitted")
					return
				}
				if strings.Contains(e.Message, "concurrent") {
					concurrent.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := concurrent.Load(); n > 0 {
		t.Errorf("%d of a key's requests refused for its rpm were refused by max_concurrent, with no request served", n)
	}
	if n := s.limits[0].busy.Load(); n != 0 {
		t.Errorf("%d slots left taken", n)
	}
}
