package lifecycle

import "sync"

// Counts are the processes launched for each target name, and those of them launched after a
// crash, for as long as the Counts lives. Every member of a name counts in it: the one a Reload
// put in place of a changed member, one brought back after a reload removed it, and, when a
// process hands one Counts to each Manager it builds (Options.Counts), the members of a later
// Manager too. So a target's counts never go back, as a Prometheus counter must not (a fall
// reads as a reset). The zero value is ready; it is safe for concurrent use.
type Counts struct {
	mu sync.Mutex
	by map[string]*launches
}

type launches struct{ starts, restarts int }

// add counts starts launches of name, restarts of them after a crash.
func (c *Counts) add(name string, starts, restarts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]*launches{}
	}
	l := c.by[name]
	if l == nil {
		l = &launches{}
		c.by[name] = l
	}
	l.starts += starts
	l.restarts += restarts
}

// Launched reports the processes launched for name, and those launched after a crash.
func (c *Counts) Launched(name string) (starts, restarts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.by[name]; l != nil {
		return l.starts, l.restarts
	}
	return 0, 0
}
