package server

import (
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

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
