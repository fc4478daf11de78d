package h1

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// reqCtx is a request's context: context.Background's but cancelled when the client leaves
// (the watcher), when Close aborts the connection, and when the handler returns, as net/http
// promises. context.WithCancel cost two allocations a request (and its Done channel a third,
// when asked for); a reqCtx is a slot of a slab (see reqSlot), and its cancellation machinery,
// a context.WithCancel, is made only when something asks for its Done channel: a child
// context, context.AfterFunc, a select. Err, all that the gateway's server and upstream client
// call on the request path, reads atomics.
type reqCtx struct {
	mu        sync.Mutex  // serialises arm and cancel
	armed     atomic.Bool // inner and stop are set, for good
	cancelled atomic.Bool
	inner     context.Context
	stop      context.CancelFunc
}

var _ context.Context = (*reqCtx)(nil)

func (x *reqCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

func (x *reqCtx) Done() <-chan struct{} {
	if !x.armed.Load() {
		x.arm()
	}
	return x.inner.Done()
}

// Err is nil until the context is cancelled, then context.Canceled; never non-nil before Done
// (if it was asked for) is closed: cancel closes it first, and arm closes it before Err reads
// it.
func (x *reqCtx) Err() error {
	if x.armed.Load() {
		return x.inner.Err()
	}
	if x.cancelled.Load() {
		return context.Canceled
	}
	return nil
}

// Value is context.Background's (nil), except once armed, when the context package's own key
// finds inner's cancelCtx: a child context asks for it (after Done, so after arm) and then
// joins inner's children instead of starting a goroutine to wait on Done.
func (x *reqCtx) Value(key any) any {
	if x.armed.Load() {
		return x.inner.Value(key)
	}
	return nil
}

func (x *reqCtx) String() string { return "h1.requestContext" }

// arm makes the cancellation machinery, cancelled at once if the context is.
func (x *reqCtx) arm() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.armed.Load() {
		return
	}
	x.inner, x.stop = context.WithCancel(context.Background())
	if x.cancelled.Load() {
		x.stop()
	}
	x.armed.Store(true)
}

func (x *reqCtx) cancel() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.armed.Load() {
		x.stop()
	}
	x.cancelled.Store(true)
}

// reqSlot is the memory of one request that may be kept after it: its context and its body's
// handle. A connection takes its requests' slots in turn from a slab and never reuses one, so
// that a context or a body kept past its request stays as that request left it (cancelled,
// closed) whatever the connection serves next.
type reqSlot struct {
	ctx  reqCtx
	body bodyHandle
}

// slabSlots is how many slots one allocation makes: 64 bytes each, so 1 KB. A slab rides with
// the connection's buffers, so a thousand open streams hold a thousand of them: 64 slots were
// 3.5 MB at 1,000 connections, to save one allocation in 64 requests rather than in 16.
const slabSlots = 16

// slot is the next unused slot.
func (b *connBufs) slot() *reqSlot {
	if len(b.slots) == 0 {
		b.slots = make([]reqSlot, slabSlots)
	}
	x := &b.slots[0]
	b.slots = b.slots[1:]
	return x
}
