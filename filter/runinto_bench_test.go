package filter

import (
	"testing"
	"time"

	"github.com/hayula/gateway/core"
)

// allAvail is an Availability with every target available.
type allAvail struct{}

func (allAvail) Available(*core.Target) (bool, time.Time) { return true, time.Time{} }

// BenchmarkRunIntoPlain is the gateway's chain (Standard) over a route's three targets for a
// request that is not strict and has neither images nor tools, as nearly every request: the
// privacy, vision and tools stages pass it whole (passer), and context and cooldown ask each
// target (under callgrind 1,239 instructions when every stage asked each, 919 now).
func BenchmarkRunIntoPlain(b *testing.B) {
	targets := []*core.Target{{Name: "a", ContextWindow: 32768}, {Name: "b", ContextWindow: 32768}, {Name: "c", ContextWindow: 32768}}
	stages := Standard(allAvail{})
	req := &core.Request{Model: "bench", Messages: []core.Message{{Role: "user", Content: []byte(`"hello there"`)}}}
	kept := make([]*core.Target, 0, 3)
	for b.Loop() {
		if r := RunInto(kept, req, targets, stages); len(r.Kept) != 3 {
			b.Fatal(r)
		}
	}
}
