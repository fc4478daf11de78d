//go:build linux

package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// TestParseStackDump reads a real dump (a chat request waiting for its answer, the gateway of
// 68b0fad under GOTRACEBACK=system): the request's goroutine is the one running serveOp, its
// depth is from its first frame's top to its last frame's stack pointer, and the frames are
// contiguous, so that their sizes add up to it.
func TestParseStackDump(t *testing.T) {
	b, err := os.ReadFile("testdata/stackdump.txt")
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseStackDump(string(b), "server.(*Server).serveOp")
	if err != nil {
		t.Fatal(err)
	}
	if d.depth != 5528 {
		t.Errorf("depth %d, want 5528", d.depth)
	}
	sum := 0
	for _, f := range d.frames {
		sum += f.size
	}
	if sum != d.depth {
		t.Errorf("the frames add up to %d, the depth is %d", sum, d.depth)
	}
	if got := d.frames[0].fn; got != "runtime.gopark" {
		t.Errorf("innermost frame %q, want runtime.gopark", got)
	}
	want := map[string]int{"github.com/hayula/gateway/server.(*Server).run": 776, "github.com/hayula/gateway/upstream.(*h1Transport).exchange": 240}
	for _, f := range d.frames {
		if n, ok := want[f.fn]; ok {
			if f.size != n {
				t.Errorf("%s: %d bytes, want %d", f.fn, f.size, n)
			}
			delete(want, f.fn)
		}
	}
	if len(want) > 0 {
		t.Errorf("frames not found: %v", want)
	}
	if _, err := parseStackDump(string(b), "server.(*Server).noSuchHandler"); err == nil {
		t.Error("a dump without the marker's goroutine was measured")
	}
	// A dump taken without GOTRACEBACK=system has no fp= and sp=.
	plain := strings.NewReplacer(" fp=", " xx=", " sp=", " yy=").Replace(string(b))
	if _, err := parseStackDump(plain, "server.(*Server).serveOp"); err == nil || !strings.Contains(err.Error(), "GOTRACEBACK") {
		t.Errorf("a dump without frame pointers: %v", err)
	}
}

// TestStacks measures the gateway as --stacks does: at each wait, the request's goroutine is
// found parked where it waits (the answer's wait in the upstream client, a stream's in its
// reader, below the relay once the first event went out).
func TestStacks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway")
	}
	gw, dir := built(t, "./cmd/gateway")
	e := &environment{dir: dir, logf: t.Logf, opts: options{PromptBytes: 1024}}
	ds, err := stackDepths(context.Background(), e, gw)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != len(stackWaits) {
		t.Fatalf("%d waits measured, want %d", len(ds), len(stackWaits))
	}
	// Each wait's frames: those it must hold, and the attempt's, which a stream relayed past its
	// first event has left. And each wait's depth is held to a budget, as the allocation tests
	// hold allocations: a change that grows a frame on the way down past it fails here (with
	// go1.26, 5,528, 4,664 and 3,960 bytes; 8,440, 6,680 and 6,320 before the thirty-ninth
	// session, PERFORMANCE.md's "The stack a request waits on").
	for i, c := range []struct {
		has, hasNot string
		budget      int
	}{
		{"upstream.(*h1Transport).exchange", "", 6 << 10},
		{"server.(*Server).once", "server.(*Server).relay", 5 << 10},
		{"server.(*Server).relay", "server.(*Server).once", 9 << 9},
	} {
		d := ds[i]
		fns := map[string]bool{}
		sum := 0
		for _, f := range d.frames {
			fns[strings.TrimPrefix(f.fn, "github.com/hayula/gateway/")] = true
			sum += f.size
		}
		if d.depth <= 0 || sum != d.depth || !fns[c.has] || fns[c.hasNot] {
			t.Errorf("%s: depth %d (frames %d), %s in it %v, %s in it %v", d.wait, d.depth, sum, c.has, fns[c.has], c.hasNot, fns[c.hasNot])
		}
		if d.depth > c.budget {
			t.Errorf("%s: the request's stack is %d bytes deep, over its budget of %d:\n%s", d.wait, d.depth, c.budget, stacksMarkdown(ds[i:i+1], 200))
		}
	}
	md := stacksMarkdown(ds, 200)
	for _, w := range stackWaits {
		if !strings.Contains(md, "| "+w.name+" | ") {
			t.Errorf("the report has no row for %q:\n%s", w.name, md)
		}
	}
}

// --stacks is a run of its own: taken alone, refused beside --count.
func TestStacksOption(t *testing.T) {
	o, err := parseOptions([]string{"--stacks"}, io.Discard)
	if err != nil || !o.Stacks {
		t.Errorf("--stacks: %+v, %v", o, err)
	}
	if _, err := parseOptions([]string{"--stacks", "--count", "10"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--stacks") {
		t.Errorf("--stacks --count 10: %v, want an error about --stacks", err)
	}
}
