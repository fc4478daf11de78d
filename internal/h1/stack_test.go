package h1

import (
	"runtime"
	"sync"
	"testing"
)

// reserveStack(false) must still grow a fresh goroutine's stack to 16 KB: its frame asks for
// stackReserve bytes in a branch never taken, and a compiler that shrank the frame to what the
// call uses (or inlined it) would leave every connection growing three times on its first
// request again, silently. Goroutines that call it hold, between them, several times the stack
// of goroutines that do not.
func TestReserveStackGrowsTheStack(t *testing.T) {
	const n = 500
	inuse := func(reserve bool) uint64 {
		var before, after runtime.MemStats
		release := make(chan struct{})
		var started, done sync.WaitGroup
		started.Add(n)
		done.Add(n)
		runtime.GC() // frees the stack spans nothing uses: a stack in the cache would not count
		runtime.ReadMemStats(&before)
		for range n {
			go func() {
				defer done.Done()
				if reserve {
					reserveStack(false)
				}
				started.Done()
				<-release
			}()
		}
		started.Wait()
		runtime.ReadMemStats(&after)
		close(release)
		done.Wait()
		return after.StackInuse - before.StackInuse
	}
	plain, reserved := inuse(false), inuse(true)
	// 16 KB each, against 2 KB (or the runtime's adaptive starting size, 4 KB after a few runs).
	if reserved < n*12<<10 || reserved < 2*plain {
		t.Errorf("%d goroutines that called reserveStack hold %d bytes of stack, %d that did not %d; want ≥ %d and twice as many",
			n, reserved, n, plain, n*12<<10)
	}
}
