package upstream

import (
	"testing"
	"unsafe"
)

// TestStreamResponseSizeClass: every answer of an openai target allocates a streamResponse (the
// adapter's Response with its stream beside it, whole answers too), so a field added to either
// costs every request, and one that takes it past a size class costs 16 bytes or more a request
// (BenchmarkChat1KB's upstream-set and upstream-set-stream: 10772 B/op became 10788 when the
// stream gained a second error for finish_reason "error"). A field that must be added moves this
// bound, measured.
func TestStreamResponseSizeClass(t *testing.T) {
	const sizeClass = 176 // runtime's size classes: … 160, 176, 192 …
	if n := unsafe.Sizeof(streamResponse{}); n > sizeClass {
		t.Errorf("streamResponse is %d bytes, past the %d-byte size class it fitted", n, sizeClass)
	}
}
