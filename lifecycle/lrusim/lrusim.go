// Package lrusim owns the offline replay of a request trace against a group's slots: it counts
// hits, misses and modeled swap time under LRU (what lifecycle does), LFU and Belady's optimal (the
// offline limit no online policy can beat), so that users can size `slots` before buying memory.
// It also generates representative traces (Zipf popularity with temporal locality) and is the body
// of `gateway lru-sim`.
//
// Model: every slot holds one member. Pinned members are resident from the start, occupy slots
// (slots is how many members may run at once, as in lifecycle) and their requests are hits; the
// other members share what is left and start cold, so each one's first request is a miss. Every
// miss is one swap, costing Config.Swap.
package lrusim

import (
	"errors"
	"fmt"
	"time"
)

// Policy chooses which resident member a miss evicts.
type Policy uint8

const (
	// LRU evicts the member used longest ago.
	LRU Policy = iota
	// LFU evicts the member requested least often since the trace began (counting requests made
	// while it was not resident), the least recently used among equals.
	LFU
	// Belady evicts the member whose next request is farthest away (never = farthest), the least
	// recently used among equals. It needs the future, so it only bounds what a policy can reach.
	Belady
)

// Policies lists every policy in report order.
var Policies = [...]Policy{LRU, LFU, Belady}

func (p Policy) String() string {
	switch p {
	case LRU:
		return "LRU"
	case LFU:
		return "LFU"
	case Belady:
		return "Belady"
	}
	return "unknown"
}

// Config is the group being modeled.
type Config struct {
	// Slots is how many members may be resident at once, pinned ones included. At least 1 more
	// than len(Pinned).
	Slots int
	// Pinned members are always resident.
	Pinned []string
	// Swap is the modeled cost of one miss; 0 = no swap time reported.
	Swap time.Duration
}

// Result is one policy's outcome on a trace.
type Result struct {
	Policy   Policy
	Requests int
	Hits     int
	Misses   int
	// SwapTime is Misses × Config.Swap.
	SwapTime time.Duration
}

// HitRate is Hits / Requests; 0 for an empty trace.
func (r Result) HitRate() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Hits) / float64(r.Requests)
}

// SimulateAll runs every policy over the trace, in the order of Policies.
func SimulateAll(trace []string, c Config) ([]Result, error) {
	out := make([]Result, 0, len(Policies))
	for _, p := range Policies {
		r, err := Simulate(p, trace, c)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Simulate replays trace under policy p.
func Simulate(p Policy, trace []string, c Config) (Result, error) {
	pinned := make(map[string]bool, len(c.Pinned))
	for _, name := range c.Pinned {
		if name == "" {
			return Result{}, errors.New("lrusim: empty pinned name")
		}
		pinned[name] = true
	}
	capacity := c.Slots - len(pinned)
	if capacity < 1 {
		return Result{}, fmt.Errorf("lrusim: %d slots leave no room beside %d pinned", c.Slots, len(pinned))
	}
	if p > Belady {
		return Result{}, fmt.Errorf("lrusim: unknown policy %d", p)
	}
	var next []int
	if p == Belady {
		next = nextUse(trace)
	}

	resident := make(map[string]*entry, capacity)
	freq := make(map[string]int)
	r := Result{Policy: p, Requests: len(trace)}
	for i, name := range trace {
		freq[name]++
		if pinned[name] {
			r.Hits++
			continue
		}
		if e := resident[name]; e != nil {
			r.Hits++
			e.last = i
			if next != nil {
				e.next = next[i]
			}
			continue
		}
		r.Misses++
		if len(resident) == capacity {
			// Every resident has a distinct last use, so "least recently used among equals" makes
			// the choice independent of map order.
			var victim string
			var v *entry
			for n, e := range resident {
				if v == nil || worse(p, e, v, freq[n], freq[victim]) {
					victim, v = n, e
				}
			}
			delete(resident, victim)
		}
		e := &entry{last: i}
		if next != nil {
			e.next = next[i]
		}
		resident[name] = e
	}
	r.SwapTime = time.Duration(r.Misses) * c.Swap
	return r, nil
}

// entry is a resident member: the position of its last request and of its next one (Belady).
type entry struct{ last, next int }

// worse reports whether a is a better eviction victim than b under p.
func worse(p Policy, a, b *entry, freqA, freqB int) bool {
	switch p {
	case LFU:
		if freqA != freqB {
			return freqA < freqB
		}
	case Belady:
		if a.next != b.next {
			return a.next > b.next
		}
	}
	return a.last < b.last
}

// nextUse returns, for each position, the position of the same name's next request, or len(trace)
// when there is none.
func nextUse(trace []string) []int {
	next := make([]int, len(trace))
	seen := make(map[string]int)
	for i := len(trace) - 1; i >= 0; i-- {
		if j, ok := seen[trace[i]]; ok {
			next[i] = j
		} else {
			next[i] = len(trace)
		}
		seen[trace[i]] = i
	}
	return next
}
