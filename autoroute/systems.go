package autoroute

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"
)

// systems keeps what the classifier made of recent long system prompts, so that a chat whose
// system prompt it has read before pays for reading its last user turn alone. An application's
// system prompt is the same on every request it sends, and often long (an agent's instructions
// and tool descriptions run to 10-40 KB): read word by word it cost about 60 instructions a
// byte on every "auto" request, 46 µs for 16 KB against 6.4 µs kept (BenchmarkRouteLongSystem),
// where the user turn that changes is often a line. What the system prompt adds to a decision depends on its text
// alone: the user turn's words are resolved and matched first, then a break that no term spans,
// then the system prompt's, whose tokens, hits and negation cues are the same wherever they
// start (TestSystemsSameDecisions holds every path to a classifier that keeps nothing).
//
// The cache is direct-mapped: a prompt has one slot, by a hash of its text and its partition,
// and an entry is replaced, never changed, so readers need no lock. A prompt is kept the second
// time its slot sees it running, not the first: a system prompt written afresh for each request
// (one with the date or a user's name in it) costs a hash and nothing more. Entries are kept per
// partition, the server's API key (RouteMessagesFor): a client whose "auto" request came back
// sooner would otherwise learn that another key had just sent the same system prompt.
type systems struct {
	seed  maphash.Seed
	slots [systemSlots]systemSlot
}

type systemSlot struct {
	entry atomic.Pointer[systemPart]
	seen  atomic.Uint64 // the hash of the last prompt that missed here, kept on its next miss
}

// systemPart is what resolve and match made of one system prompt, counted from its own start:
// toks' clauses from its first clause, hits' and cues' words from its first word.
type systemPart struct {
	part          uint64
	text          string
	toks          []tok
	hits          []hit
	negs          []negSpan
	clauses       int32
	arabic, latin int
}

const (
	// systemSlots is how many system prompts are kept: a gateway's applications, each with its
	// own, are seldom more. A full cache holds at most systemSlots × maxSystemBytes of text, and
	// its tokens and hits take about twice as much again: 6 MB.
	systemSlots = 32
	// minSystemBytes is the shortest system prompt kept: a shorter one costs less to read than
	// an entry is worth ("You are a helpful assistant." is about 2,000 instructions).
	minSystemBytes = 256
	// maxSystemBytes is the longest.
	maxSystemBytes = 64 << 10
)

// key is a system prompt's hash within its partition, and its slot.
func (y *systems) key(part uint64, text string) (h uint64, slot *systemSlot) {
	h = maphash.String(y.seed, text) ^ part*0x9E3779B97F4A7C15
	return h, &y.slots[h%systemSlots]
}

// lookup is the entry for text in part, or nil.
func (y *systems) lookup(part uint64, text string) (h uint64, e *systemPart) {
	h, sl := y.key(part, text)
	if e := sl.entry.Load(); e != nil && e.part == part && e.text == text {
		return h, e
	}
	return h, nil
}

// missed says whether a prompt that missed with hash h should be kept now: it is its slot's
// second miss in a row.
func (y *systems) missed(h uint64) bool {
	sl := &y.slots[h%systemSlots]
	return sl.seen.Swap(h) == h
}

// keep stores what s holds of a system prompt, from its first token first (the break after the
// user turn is at first-1) and its first clause clause0: copies, since s goes back to the pool
// and text may lie in the request.
func (y *systems) keep(h, part uint64, text string, s *scratch, first int32, hits, negs int, clause0 int32, arabic, latin int) {
	e := &systemPart{part: part, text: strings.Clone(text), clauses: s.clause - clause0, arabic: arabic, latin: latin}
	e.toks = slices.Clone(s.toks[first:])
	for k := range e.toks {
		e.toks[k].clause -= clause0
	}
	e.hits = slices.Clone(s.hits[hits:])
	for k := range e.hits {
		e.hits[k].start -= first
	}
	e.negs = slices.Clone(s.negs[negs:])
	for k := range e.negs {
		e.negs[k].start -= first
		e.negs[k].end -= first
		e.negs[k].clause -= clause0
	}
	y.slots[h%systemSlots].entry.Store(e)
}

// use appends e's tokens, hits and cues to s, whose user turn and break take s.toks so far.
func (e *systemPart) use(s *scratch) {
	first, clause0 := int32(len(s.toks)), s.clause
	s.toks = slices.Grow(s.toks, len(e.toks))[:int(first)+len(e.toks)]
	toks := s.toks[first:]
	for k, t := range e.toks[:len(toks)] {
		toks[k] = tok{id: t.id, clause: t.clause + clause0}
	}
	for _, ht := range e.hits {
		ht.start += first
		s.hits = append(s.hits, ht)
	}
	for _, ng := range e.negs {
		ng.start += first
		ng.end += first
		ng.clause += clause0
		s.negs = append(s.negs, ng)
	}
	s.clause += e.clauses
}

// KeepsSystem reports whether system, a system prompt as Texts joins it, is kept for partition
// part (RouteMessagesFor): for the tests of a caller that chooses the partitions.
func (c *Classifier) KeepsSystem(part uint64, system string) bool {
	_, e := c.systems.lookup(part, system)
	return e != nil
}
