package httpwire

import (
	"sync"
	"testing"
)

// The first Take makes the buffer; while it is taken, Take gets none (and makes no other); given
// back, the next Take gets that one, as it was left. Many taking at once get it one at a time.
func TestScratch(t *testing.T) {
	var s Scratch
	b := s.Take()
	if b == nil {
		t.Fatal("the first Take made no buffer")
	}
	if s.Take() != nil {
		t.Fatal("a Take while the buffer is taken got one")
	}
	copy(b[:], "left")
	s.Give(b)
	s.Give(nil)
	if again := s.Take(); again != b || string(again[:4]) != "left" {
		t.Fatalf("after Give, Take got %p, want %p as it was left", again, b)
	}
	s.Give(b)

	var wg sync.WaitGroup
	var mu sync.Mutex
	holders := 0
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				got := s.Take()
				if got == nil {
					continue
				}
				mu.Lock()
				holders++
				if holders > 1 {
					t.Error("two holders of the buffer at once")
				}
				mu.Unlock()
				mu.Lock()
				holders--
				mu.Unlock()
				s.Give(got)
			}
		})
	}
	wg.Wait()
	if s.Take() != b {
		t.Error("the buffer was not back after the takers")
	}
}
