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
// byte on every "auto" request, about 50 µs for 16 KB against 5.5 µs kept (BenchmarkRouteLongSystem),
// where the user turn that changes is often a line. What the system prompt adds to a decision depends on its text
// alone: the user turn's words are resolved and matched first, then a break that no term spans,
// then the system prompt's, whose tokens, hits and negation cues are the same wherever they
// start (TestSystemsSameDecisions holds every path to a classifier that keeps nothing).
//
// The cache is two-way set-associative: a prompt has one set of two entries, by a hash of its
// text and its partition, and an entry is replaced, never changed, so readers need no lock. A
// prompt is kept the second time its set sees it miss, not the first: a system prompt written
// afresh for each request (one with the date or a user's name in it) costs a hash and nothing
// more. A set remembers the last two prompts that missed, so that two applications whose prompts
// share a set and take turns are both kept (TestSystemsKeepTwoInASet). Entries are kept per
// partition, the server's API key (RouteMessagesFor): a client whose "auto" request came back
// sooner would otherwise learn that another key had just sent the same system prompt.
type systems struct {
	seed maphash.Seed
	sets [systemSets]systemSet
}

// systemSet is one set: two entries and the hashes of the last two prompts that missed in it,
// each pair replaced in turn, the older first.
type systemSet struct {
	ways     [2]atomic.Pointer[systemPart]
	seen     [2]atomic.Uint64
	nextWay  atomic.Uint32
	nextSeen atomic.Uint32
}

// systemPart is what resolve and match made of one system prompt: its tokens and cues as they
// are (its clauses are numbered from systemClause), its hits' and cues' words counted from its
// first word.
type systemPart struct {
	h             uint64
	part          uint64
	text          string
	toks          []tok
	hits          []hit
	negs          []negSpan
	clauseEnd     int32
	arabic, latin int
}

const (
	// systemSets × 2 is how many system prompts are kept: a gateway's applications, each with
	// its own, are seldom more. A full cache holds at most 32 × maxSystemBytes of text, and its
	// tokens and hits take about twice as much again: 6 MB.
	systemSets = 16
	// minSystemBytes is the shortest system prompt kept: a shorter one costs less to read than
	// an entry is worth ("You are a helpful assistant." is about 2,000 instructions).
	minSystemBytes = 256
	// maxSystemBytes is the longest.
	maxSystemBytes = 64 << 10
)

// key is a system prompt's hash within its partition, and its set.
func (y *systems) key(part uint64, text string) (h uint64, set *systemSet) {
	h = maphash.String(y.seed, text) ^ part*0x9E3779B97F4A7C15
	return h, y.set(h)
}

// set is the set of the prompts of hash h.
func (y *systems) set(h uint64) *systemSet { return &y.sets[h%systemSets] }

// lookup is the entry for text in part, or nil.
func (y *systems) lookup(part uint64, text string) (h uint64, e *systemPart) {
	h, set := y.key(part, text)
	for w := range set.ways {
		if e := set.ways[w].Load(); e != nil && e.h == h && e.part == part && e.text == text {
			return h, e
		}
	}
	return h, nil
}

// missed says whether a prompt that missed with hash h should be kept now: it is one of the
// last two its set saw miss. Otherwise it is remembered in place of the older of them.
func (y *systems) missed(h uint64) bool {
	set := y.set(h)
	if set.seen[0].Load() == h || set.seen[1].Load() == h {
		return true
	}
	set.seen[set.nextSeen.Add(1)&1].Store(h)
	return false
}

// keep stores what s holds of a system prompt, from its first token first (the break after the
// user turn is at first-1) and its first hit and cue at hits and negs: copies, since s goes back
// to the pool and text may lie in the request.
func (y *systems) keep(h, part uint64, text string, s *scratch, first int32, hits, negs int, arabic, latin int) {
	e := &systemPart{h: h, part: part, text: strings.Clone(text), clauseEnd: s.clause, arabic: arabic, latin: latin}
	e.toks = slices.Clone(s.toks[first:])
	e.hits = slices.Clone(s.hits[hits:])
	for k := range e.hits {
		e.hits[k].start -= first
	}
	e.negs = slices.Clone(s.negs[negs:])
	for k := range e.negs {
		e.negs[k].start -= first
		e.negs[k].end -= first
	}
	set := y.set(h)
	set.ways[set.nextWay.Add(1)&1].Store(e) // the older of the two, or an empty way
}

// use appends e's tokens, hits and cues to s, whose user turn and break take s.toks so far.
func (e *systemPart) use(s *scratch) {
	first := int32(len(s.toks))
	s.toks = append(s.toks, e.toks...)
	for _, ht := range e.hits {
		ht.start += first
		s.hits = append(s.hits, ht)
	}
	for _, ng := range e.negs {
		ng.start += first
		ng.end += first
		s.negs = append(s.negs, ng)
	}
	s.clause = e.clauseEnd
}

// KeepsSystem reports whether system, a system prompt as Texts joins it, is kept for partition
// part (RouteMessagesFor): for the tests of a caller that chooses the partitions.
func (c *Classifier) KeepsSystem(part uint64, system string) bool {
	_, e := c.systems.lookup(part, system)
	return e != nil
}
