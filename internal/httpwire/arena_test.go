package httpwire

import (
	"strings"
	"testing"
)

// A connection's first array holds a head or two; later ones are the usual size; one a large
// head grew is let go; and no string taken from the arena ever changes.
func TestArena(t *testing.T) {
	var a Arena
	head := []byte(strings.Repeat("h", 200) + "\n")
	var kept []string
	take := func() {
		start := a.Append(a.Len(), head)
		kept = append(kept, a.From(start))
	}
	take()
	if c := a.b.Cap(); c > 2*firstArena {
		t.Fatalf("first array %d bytes for a 201-byte head, want at most %d", c, 2*firstArena)
	}
	for range 30 {
		take()
	}
	if c := a.b.Cap(); c < arenaSize {
		t.Fatalf("later array %d bytes, want the usual %d", c, arenaSize)
	}
	big := []byte(strings.Repeat("b", maxArena) + "\n")
	start := a.Append(a.Len(), big[:100])
	start = a.Append(start, big[100:])
	if got := a.From(start); got != string(big) {
		t.Fatalf("a head appended in two pieces reads %d bytes, want %d", len(got), len(big))
	}
	kept = append(kept, a.From(start))
	a.Trim()
	if c := a.b.Cap(); c != 0 {
		t.Fatalf("Trim kept a %d-byte array", c)
	}
	take()
	for i, s := range kept[:len(kept)-1] {
		if want := string(head); i < 31 && s != want {
			t.Fatalf("head %d changed: %.20q", i, s)
		}
	}
	if kept[31] != string(big) {
		t.Fatalf("the large head changed after Trim")
	}
}
