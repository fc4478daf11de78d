package httpwire

import "strings"

// Arena is where a connection keeps the heads it reads, so that a head's strings (method,
// path, status, field values) are slices of one copy rather than a copy each. It is built on
// strings.Builder, which only ever appends to its array: what a string taken from it covers is
// never written again, so every string stays as it was for as long as something holds it, and
// an array is dropped (to the collector) rather than reused when it is full.
//
// The internal/h1 server keeps one per connection for request heads, the upstream client one
// per connection for answer heads. The zero Arena is ready to use; it is not safe for
// concurrent use.
type Arena struct {
	b     strings.Builder
	grown bool // the first array has been made (firstArena)
}

const (
	arenaSize = 4 << 10  // the usual array: ten or twenty heads
	maxArena  = 16 << 10 // an array grown past this for a large head is not kept
	// firstArena is a connection's first array: a head or two. Most connections of a busy
	// gateway carry many heads, but a thousand streams opened at once are a thousand
	// connections with one each, and 4 KB arrays on both sides were 8 MB of them.
	firstArena = 512
)

// Len is where the next head begins.
func (a *Arena) Len() int { return a.b.Len() }

// From returns the arena's bytes from start on: the head that begins there.
func (a *Arena) From(start int) string { return a.b.String()[start:] }

// Append appends frag to the head that begins at start, and returns where that head begins
// now: at 0 in a new array when the old one has no room for frag (the head so far is copied
// there, never the heads before it).
func (a *Arena) Append(start int, frag []byte) int {
	b := &a.b
	if b.Cap()-b.Len() < len(frag) {
		sofar := b.String()[start:]
		size := arenaSize
		if !a.grown {
			size, a.grown = firstArena, true
		}
		b.Reset()
		b.Grow(max(size, 2*(len(sofar)+len(frag))))
		b.WriteString(sofar)
		start = 0
	}
	b.Write(frag)
	return start
}

// Trim lets go of an array that a large head grew past maxArena, before the next head: that
// head starts a new array of the usual size.
func (a *Arena) Trim() {
	if a.b.Cap() > maxArena {
		a.b.Reset()
	}
}
