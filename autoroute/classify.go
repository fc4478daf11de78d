package autoroute

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ConfigError is a problem in the [auto] rules, found by New.
type ConfigError struct {
	// Field locates the problem, e.g. "intents[1].terms[4]".
	Field string
	// Problem says what is wrong.
	Problem string
}

func (e *ConfigError) Error() string { return "autoroute: " + e.Field + ": " + e.Problem }

type patKind uint8

const (
	kindTerm patKind = iota
	kindAgainst
	kindNegation
	// kindPairA and kindPairB are a word or phrase of a pair's left and right side (IntentRule.Pairs).
	kindPairA
	kindPairB
)

// pattern is one compiled term: a sequence of vocabulary ids.
type pattern struct {
	ids    []int32
	kind   patKind
	intent int32 // -1 for negation cues
	weight int32
	text   string // as configured, without the weight suffix
	pair   int32  // for kindPairA and kindPairB: the index of its pair in Classifier.pairs
}

// patMatch is the part of a pattern that match and score read: match for every word that
// starts it, score for every match.
type patMatch struct {
	second int32 // the id of the second word, when there is one
	rest   int32 // Classifier.rest[rest:rest+n-2] are the ids of the third word on
	n      int32 // words
	intent int32
	weight int8
	kind   patKind
	last   bool // the last pattern of its first word's run
}

// pairRule is one compiled pair (IntentRule.Pairs): its sides' words are patterns of kind
// kindPairA and kindPairB that name it.
type pairRule struct {
	intent, weight int32
}

// pairState is where score last saw each side of a pair (clause+1, 0 for not yet) and the hit
// it saw there, and whether the pair has counted.
type pairState struct {
	a, b   int32
	ha, hb int32
	done   bool
}

type intent struct {
	name, route string
	min         int32 // in half-points: a user-turn term of weight w scores 2w, a system-prompt one w
	langs       uint8 // bit per Language; 0 = all
	any         bool
}

// systemClause is the number of the system prompt's first clause: above any a user turn reaches
// (a clause break is a byte at least: a user turn would need a GiB of punctuation, where
// max_body_bytes is 10 MiB by default), and far enough below int32's end for any system
// prompt's (pairState keeps a clause plus one).
const systemClause = 1 << 30

// negationReach is how many words after a cue a term is still negated (within the same clause).
// A cue of one word ("not") reaches only the next word, oneWordReach: one word is weaker evidence
// than a phrase ("not asking about"), and "not" reaching six words would negate the malware of
// "not sure if this is malware", while "not step by step" is a clear refusal of the term it
// touches.
const (
	negationReach = 6
	oneWordReach  = 1
)

// Classifier decides the route of a `model: "auto"` request. It is compiled once by New and is
// safe for concurrent use; per-call scratch space comes from a pool, so a call allocates only the
// Decision it returns.
type Classifier struct {
	intents         []intent
	def             string
	specialists     []string
	specialistRoute string
	routes          []string
	moveOrder       int // routes[:moveOrder] are MoveOrder's

	vocab map[string]int32 // used while compiling; the request path reads table
	table vocabTable
	// pats are ordered by first word, and among those longest first (then as configured), so
	// that the patterns a word starts are one run: a word that starts any has the id of its run's
	// first pattern, and the others have ids from len(pats) up. match finds a word's candidates
	// without a lookup of its own, in mpats, which holds what match reads in 16 bytes a pattern
	// (and a hit carries what score needs); pats (56 bytes and an ids array each) is read only for the texts of the terms
	// that matched, by Classify and Explain, never by Route.
	pats  []pattern
	pairs []pairRule
	mpats []patMatch
	rest  []int32 // the ids of the third word on of the longer patterns, see patMatch.rest
	// gate, for each word that starts patterns (indexed by its id, as mpats), says in 4 bytes
	// whether the next word can start a longer term of its run, and holds its single-word term,
	// see gateFor. With cold caches every run match read in mpats was a line, 22 lines on all
	// four pages for the 1 KB bench prompt, for 4 single-word terms that matched and no longer
	// one; through gate it reads 16 lines of one page and one run in mpats.
	gate []uint32

	pool sync.Pool
	// systems keeps what recent long system prompts matched, for RouteMessagesFor.
	systems systems
}

// New compiles and validates rules. Zero fields take their defaults (see Rules). Its error
// joins a *ConfigError for each problem found (errors.Join).
func New(r Rules) (*Classifier, error) {
	c := &Classifier{vocab: map[string]int32{}}
	c.def = r.Default
	if c.def == "" {
		c.def = RouteAverroesQ
	}
	c.specialistRoute = r.SpecialistRoute
	if c.specialistRoute == "" {
		c.specialistRoute = RouteSAIF
	}
	specs := r.Specialists
	if len(specs) == 0 {
		specs = defaultSpecialists()
	}
	// Every problem is reported, not only the first: a config with several is fixed in one go.
	var errs []error
	for i, s := range specs {
		s = strings.TrimSpace(s)
		if s == "" {
			errs = append(errs, &ConfigError{fmt.Sprintf("specialists[%d]", i), "empty name"})
			continue
		}
		c.specialists = append(c.specialists, s)
	}

	rules := r.Intents
	if len(rules) == 0 {
		rules = DefaultRules().Intents
	}
	seen := map[string]bool{}
	dedup := map[string]bool{}
	for i, ir := range rules {
		field := fmt.Sprintf("intents[%d]", i)
		name := strings.TrimSpace(ir.Name)
		bad := len(errs)
		switch {
		case name == "":
			errs = append(errs, &ConfigError{field + ".name", "empty"})
		case name == IntentGeneral || name == IntentHint:
			errs = append(errs, &ConfigError{field + ".name", fmt.Sprintf("%q is reserved", name)})
		case seen[name]:
			errs = append(errs, &ConfigError{field + ".name", fmt.Sprintf("duplicate intent %q", name)})
		}
		if strings.TrimSpace(ir.Route) == "" {
			errs = append(errs, &ConfigError{field + ".route", "empty"})
		}
		switch {
		case ir.MinScore < 0:
			errs = append(errs, &ConfigError{field + ".min_score", "negative"})
		case ir.MinScore > MaxMinScore:
			errs = append(errs, &ConfigError{field + ".min_score",
				fmt.Sprintf("must be from 0 to %d, got %d", MaxMinScore, ir.MinScore)})
		}
		seen[name] = true
		in := intent{name: name, route: strings.TrimSpace(ir.Route), min: int32(2 * ir.MinScore), any: ir.Any}
		if in.min == 0 {
			in.min = 4
		}
		for j, l := range ir.Languages {
			lang, ok := ParseLanguage(strings.ToLower(strings.TrimSpace(l)))
			if !ok {
				errs = append(errs, &ConfigError{fmt.Sprintf("%s.languages[%d]", field, j),
					fmt.Sprintf("unknown language %q (want english, arabic or mixed)", l)})
				continue
			}
			in.langs |= 1 << lang
		}
		terms, against, pairs := ir.Terms, ir.Against, ir.Pairs
		bTerms, bAgainst, bPairs, builtin := builtinTerms(name)
		if len(terms) == 0 && builtin {
			terms = bTerms
		}
		if len(against) == 0 && builtin {
			against = bAgainst
		}
		if len(pairs) == 0 && builtin {
			pairs = bPairs
		}
		if len(pairs) == 1 && pairs[0] == "-" {
			pairs = nil
		}
		if len(terms)+len(ir.AddTerms)+len(pairs) == 0 && !ir.Any {
			errs = append(errs, &ConfigError{field + ".terms", "empty (give terms, or any = true)"})
		}
		errs = c.addPatterns(terms, kindTerm, int32(i), field+".terms", dedup, errs)
		errs = c.addPatterns(ir.AddTerms, kindTerm, int32(i), field+".add_terms", dedup, errs)
		if !(len(against) == 1 && against[0] == "-") {
			errs = c.addPatterns(against, kindAgainst, int32(i), field+".against", dedup, errs)
		}
		errs = c.addPairs(pairs, int32(i), field+".pairs", dedup, errs)
		if len(errs) == bad {
			c.intents = append(c.intents, in)
		}
	}
	negs := r.Negations
	if len(negs) == 0 {
		negs = defaultNegations()
	}
	if !(len(negs) == 1 && negs[0] == "-") {
		errs = c.addPatterns(negs, kindNegation, -1, "negations", dedup, errs)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	c.number()
	c.table = newVocabTable(c.vocab)

	add := func(route string) {
		for _, x := range c.routes {
			if x == route {
				return
			}
		}
		c.routes = append(c.routes, route)
	}
	for _, in := range c.intents {
		add(in.route)
	}
	add(c.def)
	c.moveOrder = len(c.routes)
	add(c.specialistRoute)

	npats, npairs := len(c.pats), len(c.pairs)
	c.pool.New = func() any { return newScratch(npats, len(c.intents), npairs) }
	c.systems.seed = maphash.MakeSeed()
	return c, nil
}

// addPatterns compiles terms of one kind, and appends a ConfigError to errs for each term it
// cannot. The same words listed twice for the same intent and kind (often two spellings that
// stem alike, "virus" and "viruses") are kept once, first weight wins.
func (c *Classifier) addPatterns(terms []string, kind patKind, in int32, field string, dedup map[string]bool, errs []error) []error {
	for j, raw := range terms {
		f := fmt.Sprintf("%s[%d]", field, j)
		text, weight, err := parseTerm(raw)
		if err != nil {
			errs = append(errs, &ConfigError{f, err.Error()})
			continue
		}
		var wc wordCollector
		collect(text, &wc)
		if len(wc.words) == 0 {
			errs = append(errs, &ConfigError{f, fmt.Sprintf("term %q has no words", raw)})
			continue
		}
		ids := make([]int32, len(wc.words))
		for k, w := range wc.words {
			id, ok := c.vocab[w]
			if !ok {
				id = int32(len(c.vocab))
				c.vocab[w] = id
			}
			ids[k] = id
		}
		key := fmt.Sprint(kind, in, ids)
		if dedup[key] {
			continue
		}
		dedup[key] = true
		c.pats = append(c.pats, pattern{ids: ids, kind: kind, intent: in, weight: int32(weight), text: text})
	}
	return errs
}

// addPairs compiles the pairs of one intent (IntentRule.Pairs), and appends a ConfigError to errs
// for each it cannot.
func (c *Classifier) addPairs(pairs []string, in int32, field string, dedup map[string]bool, errs []error) []error {
	for j, raw := range pairs {
		f := fmt.Sprintf("%s[%d]", field, j)
		text, weight, err := parseTerm(raw)
		if err != nil {
			errs = append(errs, &ConfigError{f, err.Error()})
			continue
		}
		sides := strings.Split(text, "&")
		if len(sides) != 2 {
			errs = append(errs, &ConfigError{f, fmt.Sprintf("pair %q must have two sides joined by &", raw)})
			continue
		}
		pair := int32(len(c.pairs))
		bad := false
		var pats []pattern
		for k, side := range sides {
			kind := kindPairA
			if k == 1 {
				kind = kindPairB
			}
			for _, alt := range strings.Split(side, "|") {
				alt = strings.TrimSpace(alt)
				var wc wordCollector
				collect(alt, &wc)
				if len(wc.words) == 0 {
					errs = append(errs, &ConfigError{f, fmt.Sprintf("pair %q has an empty word or side", raw)})
					bad = true
					break
				}
				ids := make([]int32, len(wc.words))
				for m, w := range wc.words {
					id, ok := c.vocab[w]
					if !ok {
						id = int32(len(c.vocab))
						c.vocab[w] = id
					}
					ids[m] = id
				}
				key := fmt.Sprint(kind, in, pair, ids)
				if dedup[key] {
					continue
				}
				dedup[key] = true
				pats = append(pats, pattern{ids: ids, kind: kind, intent: in, weight: int32(weight), text: alt, pair: pair})
			}
		}
		if bad {
			continue
		}
		c.pairs = append(c.pairs, pairRule{intent: in, weight: int32(weight)})
		c.pats = append(c.pats, pats...)
	}
	return errs
}

// number orders the patterns by first word, longest first and then as configured (the order in
// which match must try a word's patterns), and renumbers the words: one that starts patterns
// takes the index of the first of them, the others ids past the last pattern.
func (c *Classifier) number() {
	order := make([]int, len(c.pats)) // new index → index as added
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := c.pats[order[a]].ids, c.pats[order[b]].ids
		if pa[0] != pb[0] {
			return pa[0] < pb[0]
		}
		return len(pa) > len(pb)
	})
	newID := make([]int32, len(c.vocab))
	for i := range newID {
		newID[i] = -1
	}
	for p, old := range order {
		if f := c.pats[old].ids[0]; newID[f] < 0 {
			newID[f] = int32(p)
		}
	}
	next := int32(len(order))
	for i := range newID {
		if newID[i] < 0 {
			newID[i] = next
			next++
		}
	}
	for w, id := range c.vocab {
		c.vocab[w] = newID[id]
	}
	pats := make([]pattern, len(order))
	c.mpats = make([]patMatch, len(order))
	for p, old := range order {
		pat := c.pats[old]
		ids := make([]int32, len(pat.ids))
		for k, id := range pat.ids {
			ids[k] = newID[id]
		}
		pat.ids = ids
		pats[p] = pat
		m := patMatch{n: int32(len(ids)), intent: pat.intent, weight: int8(pat.weight), kind: pat.kind}
		if len(ids) >= 2 {
			m.second = ids[1]
		}
		if len(ids) >= 3 {
			m.rest = int32(len(c.rest))
			c.rest = append(c.rest, ids[2:]...)
		}
		c.mpats[p] = m
	}
	for p := range pats {
		c.mpats[p].last = p+1 == len(pats) || pats[p+1].ids[0] != pats[p].ids[0]
	}
	c.pats = pats
	c.gate = make([]uint32, len(pats))
	for p := 0; p < len(pats); {
		end := p
		for !c.mpats[end].last {
			end++
		}
		c.gate[p] = c.gateFor(int32(p), int32(end))
		p = end + 1
	}
}

// A run's gate word: gateBloom bits of a filter over the second words of its terms of two words
// or more, and, for its single-word term if it has one, that term's offset in the run (plus one;
// 0 for none), weight, kind and intent (plus one), which is all match and score need of it. A
// run that does not fit (a word that is a term of two intents, say) has the gate gateSlow: match
// then reads it in mpats whatever follows, as it does any run whose filter lets the next word in.
const (
	gateSlow      = ^uint32(0)
	gateBloom     = 12
	gateOffShift  = gateBloom
	gateOffBits   = 5
	gateWShift    = gateOffShift + gateOffBits
	gateKindShift = gateWShift + 4
	gateInShift   = gateKindShift + 2
)

func gateBit(second int32) uint32 {
	return 1 << ((uint32(second) * 0x9E3779B1) >> 16 % gateBloom)
}

func (c *Classifier) gateFor(first, last int32) uint32 {
	var g uint32
	for p := first; p <= last; p++ {
		m := &c.mpats[p]
		if m.n >= 2 {
			g |= gateBit(m.second)
			continue
		}
		off, in := uint32(p-first)+1, uint32(m.intent+1)
		// The largest fields are left out so that no gate of a single-word term is gateSlow. A
		// side of a pair has no room in the kind's two bits: its run is always read in mpats.
		if g>>gateOffShift != 0 || off >= 1<<gateOffBits-1 || in >= 1<<(32-gateInShift)-1 || m.weight < 0 || m.weight > 15 ||
			m.kind > kindNegation {
			return gateSlow
		}
		g |= off<<gateOffShift | uint32(m.weight)<<gateWShift | uint32(m.kind)<<gateKindShift | in<<gateInShift
	}
	return g
}

// parseTerm splits "term^N" into the term and its weight (default 2).
func parseTerm(raw string) (string, int, error) {
	t := strings.TrimSpace(raw)
	w := 2
	if n := len(t); n >= 2 && t[n-2] == '^' {
		d := t[n-1]
		if d < '1' || d > '9' {
			return "", 0, fmt.Errorf("weight in %q must be ^1 to ^9", raw)
		}
		w = int(d - '0')
		t = strings.TrimSpace(t[:n-2])
	} else if i := strings.LastIndexByte(t, '^'); i >= 0 && i+1 < len(t) && strings.Trim(t[i+1:], "0123456789.") == "" {
		// "^10" and "^0.5" are weights out of range, not words of the term.
		return "", 0, fmt.Errorf("weight in %q must be ^1 to ^9", raw)
	}
	if t == "" {
		return "", 0, fmt.Errorf("empty term")
	}
	return t, w, nil
}

// Routes lists every route the rules can produce: the intents' routes in precedence order, then the
// default and the specialist route, each once.
func (c *Classifier) Routes() []string { return append([]string(nil), c.routes...) }

// MoveOrder lists the routes a request may be moved to, in order, when the route it was
// classified to cannot serve it (the server decides what can, and moves): the intents' routes in
// precedence order, then the default, each once. The specialist route is among them only when an
// intent or the default names it: a specialist hint, which alone selects it otherwise, is the
// client's choice, and a hinted request is not moved.
func (c *Classifier) MoveOrder() []string { return append([]string(nil), c.routes[:c.moveOrder]...) }

// Intents lists every intent Route and RouteMessagesFor can name: the configured intents in
// precedence order, then IntentGeneral and IntentHint. The strings are the ones they return.
func (c *Classifier) Intents() []string {
	names := make([]string, 0, len(c.intents)+2)
	for _, in := range c.intents {
		names = append(names, in.name)
	}
	return append(names, IntentGeneral, IntentHint)
}

// SpecialistRoute is the route a specialist hint selects.
func (c *Classifier) SpecialistRoute() string { return c.specialistRoute }

// Specialists are the x-route-hint values that select SpecialistRoute, as configured.
func (c *Classifier) Specialists() []string { return append([]string(nil), c.specialists...) }

// HintShadowed lists the routes the rules can produce, other than the specialist route, whose
// name x-route-hint cannot select: the hint is read as a specialist first (case-insensitively),
// so a route named like one is reached by its text alone. Each comes with the specialist whose
// name it has.
func (c *Classifier) HintShadowed() (routes, specialists []string) {
	for _, r := range c.routes {
		if r == c.specialistRoute {
			continue
		}
		for _, sp := range c.specialists {
			if strings.EqualFold(r, sp) {
				routes, specialists = append(routes, r), append(specialists, sp)
				break
			}
		}
	}
	return routes, specialists
}

// Decision is the classifier's answer for one request.
type Decision struct {
	// Route is the route that should serve the request.
	Route string `json:"route"`
	// Intent is the name of the intent that fired, "general" when none did, or "hint" when
	// x-route-hint decided.
	Intent string `json:"intent"`
	// Language is the script of the last user turn (of the system prompt when the user turn has no
	// words).
	Language Language `json:"language"`
	// Matched are the terms that counted for Intent, as configured; for "general" the terms that
	// matched but fell short; for "hint" the hint.
	Matched []string `json:"matched"`
	// Reason is one line for explain and logs, with the scores.
	Reason string `json:"reason"`
}

// scratch is the per-call working memory, pooled.
type scratch struct {
	text   []byte    // the texts of RouteMessagesFor that could not be read in place
	words  []byte    // the words scan builds, where it built them
	refs   []wordRef // the words scan found, in words
	toks   []tok
	hits   []hit
	negs   []negSpan
	seen   []uint64 // a bit per pattern
	points []int32
	pairs  []pairState // a state per pair, reset by score

	clause        int32
	arabic, latin int
	// negSteps counts the cues score compared with a hit, for TestNegationCheckLinear.
	negSteps int
	// noLatin is where scan's last look for a Latin letter ahead (latinAhead) ended without one.
	noLatin int
	// collect, when set, is the collector that collect hands the words to; it counts breaks too.
	collect *wordCollector
}

// scratchBlock is a scratch with its buffers, sized for a prompt of a KB or two, in one
// allocation of about 10 KB. Grown one by one by append they lay in as many spans (pages) as they
// had size classes, and with cold caches every page a call touches costs a page-table walk:
// BenchmarkRoute1KBCold L3 −2.3 µs (paired median of 10 rounds). A longer text grows a buffer
// out of the block as before.
type scratchBlock struct {
	s      scratch
	refs   [256]wordRef
	toks   [256]tok
	hits   [64]hit
	negs   [8]negSpan
	points [8]int32
	seen   [24]uint64
	words  [2048]byte
}

func newScratch(npats, nintents, npairs int) *scratch {
	b := &scratchBlock{}
	s := &b.s
	s.refs, s.toks, s.hits, s.negs = b.refs[:0], b.toks[:0], b.hits[:0], b.negs[:0]
	s.words = b.words[:]
	if n := (npats + 63) / 64; n > len(b.seen) {
		s.seen = make([]uint64, n)
	} else {
		s.seen = b.seen[:n]
	}
	if nintents > len(b.points) {
		s.points = make([]int32, nintents)
	} else {
		s.points = b.points[:nintents]
	}
	if npairs > 0 {
		s.pairs = make([]pairState, npairs)
	}
	return s
}

type tok struct{ id, clause int32 }

// hit carries the intent, weight and kind of its pattern, so that score need not read mpats.
type hit struct {
	pat, start int32
	intent     int32
	weight     int8
	kind       patKind
	system     bool
	negated    bool
	counted    bool
}

// negSpan is a negation cue's words, [start, end), and how many words after them it reaches.
type negSpan struct{ start, end, reach, clause int32 }

// resolve looks up the words scan recorded and appends their tokens.
func (c *Classifier) resolve(s *scratch) {
	t := &c.table
	words := s.words
	toks := slices.Grow(s.toks, len(s.refs))
	base := len(toks)
	toks = toks[:base+len(s.refs)]
	for k, r := range s.refs {
		// w's capacity runs to the end of words, at least maxWordBytes+8 past any word: the
		// eight-byte read below may look past its end.
		w := words[r.off : r.off+r.n]
		id := int32(-1)
		switch r.script {
		case scriptLatin:
			// Plain English words, most of a prompt: stemEnglish's first test, find's prefilter,
			// hashStem and probe are written out for a stem shorter than eight bytes (all over the
			// compiler's inlining budget), so that most such words cost no call.
			s.latin++
			if n := len(w); n > 3 {
				if b := w[n-1]; b == 's' || b == 'e' || b == 'y' {
					w = stemEnglishSuffix(w)
				}
			}
			if q := quickIndex(w); t.quick[q/64]&(1<<(q%64)) != 0 {
				if n := len(w); n < 8 {
					head := binary.LittleEndian.Uint64(w[:8]) & (1<<(8*n) - 1)
					h := uint32((head ^ uint64(n)) * 0x9E3779B97F4A7C15 >> 32)
					for i := h & t.mask; ; i = (i + 1) & t.mask {
						sl := &t.slots[i]
						if sl.n == 0 {
							break
						}
						if sl.head == head && sl.n == int32(n) {
							id = sl.id
							break
						}
					}
				} else {
					id = t.probe(w)
				}
			}
		case scriptArabic:
			s.arabic++
			id = c.lookupArabic(w)
		default:
			countScript(r.script, &s.arabic, &s.latin)
			id = c.lookup(w, r.script)
		}
		toks[base+k] = tok{id: id, clause: r.clause}
	}
	s.toks = toks
	s.refs = s.refs[:0]
}

func (s *scratch) clauseBreak() {
	s.clause++
	if s.collect != nil {
		s.collect.breaks++
	}
}

func (c *Classifier) lookup(w []byte, script uint8) int32 {
	if script == scriptArabic {
		return c.lookupArabic(w)
	}
	return c.find(stem(w, script))
}

// lookupArabic is lookup for an Arabic word; resolve calls it directly for most of them.
func (c *Classifier) lookupArabic(w []byte) int32 {
	// find's prefilter written out: most Arabic stems are in no term, and each word tries
	// up to three.
	t := &c.table
	st := stemArabic(w)
	if q := quickIndex(st); t.quick[q/64]&(1<<(q%64)) != 0 {
		if id := t.probe(st); id >= 0 {
			return id
		}
	}
	for i := 0; i < 2 && clitic(w); i++ {
		w = w[2:]
		st = stemArabic(w)
		if q := quickIndex(st); t.quick[q/64]&(1<<(q%64)) != 0 {
			if id := t.probe(st); id >= 0 {
				return id
			}
		}
	}
	return -1
}

// vocabTable is an open-addressing hash set of stems. It replaces a map lookup on the hot path,
// where hashing and probing every word of the prompt dominated the cost.
//
// A slot holds a stem's first eight bytes and its length inline, so that a probe reads one slot
// and nothing else for the stems of up to eight bytes (most of them); only a longer stem whose head
// matches is compared in full. Half of a prompt's words are in some term (stop words are parts of
// phrases), so the hit path matters as much as the miss path.
//
// In front of it sits a bit set over each stem's length, first two and last byte: a word whose
// bit is clear (most words in no term) is answered from it, without a hash.
//
// Both are sized for a cold cache rather than for the fewest probes: a gateway serving one
// request at a time finds them evicted by the next request, and every distinct cache line (and
// page) a prompt's words touch is then a miss (BenchmarkRoute1KBCold). The slots are kept at most
// two thirds full (half for the built-in rules: 2048 slots, 32 KB, rather than 8192 and 128 KB at
// a quarter); the bit set has 16 Kbit (2 KB, 32 lines that a 1 KB prompt nearly all touches,
// rather than 60 of the 128 lines of 64 Kbit), letting one in about sixteen words in no term
// through to a probe (6% of the bits are set for the built-in rules).
type vocabTable struct {
	mask  uint32
	slots []vocabSlot
	keys  []string // the whole stem, read only for stems longer than eight bytes
	quick [1 << (quickBits - 6)]uint64
}

const quickBits = 14

// quickIndex picks a word's bit in vocabTable.quick. The second byte is there because an Arabic
// letter's first byte (D8 or D9) says little.
func quickIndex(w []byte) uint32 {
	n := len(w)
	if n == 0 {
		return 0
	}
	k := uint32(w[0]) | uint32(w[min(1, n-1)])<<8 | uint32(w[n-1])<<16 | uint32(n)<<24
	return (k * 0x9E3779B1) >> (32 - quickBits)
}

type vocabSlot struct {
	head uint64 // first eight bytes, little-endian, zero-padded (no stem has a zero byte)
	n    int32  // length in bytes; 0 marks an empty slot
	id   int32
}

func newVocabTable(vocab map[string]int32) vocabTable {
	size := uint32(16)
	for size*2 < uint32(len(vocab))*3 {
		size *= 2
	}
	t := vocabTable{mask: size - 1, slots: make([]vocabSlot, size), keys: make([]string, size)}
	for w, id := range vocab {
		head, h := hashStem([]byte(w))
		i := h & t.mask
		for t.slots[i].n != 0 {
			i = (i + 1) & t.mask
		}
		t.slots[i] = vocabSlot{head: head, n: int32(len(w)), id: id}
		t.keys[i] = w
		q := quickIndex([]byte(w))
		t.quick[q/64] |= 1 << (q % 64)
	}
	return t
}

// hashStem returns w's first eight bytes as a word and a hash of the whole of w. It reads eight
// bytes at a time: stems are short, and a byte-at-a-time hash was most of a lookup.
func hashStem(w []byte) (head uint64, h uint32) {
	n := len(w)
	var tail uint64
	switch {
	case n >= 8:
		head = binary.LittleEndian.Uint64(w)
		tail = binary.LittleEndian.Uint64(w[n-8:])
	case cap(w) >= 8:
		// The bytes past len(w) are the scanner's leftovers: mask them off.
		head = binary.LittleEndian.Uint64(w[:8]) & (1<<(8*n) - 1)
	default:
		for i := n - 1; i >= 0; i-- {
			head = head<<8 | uint64(w[i])
		}
	}
	x := (head ^ bits.RotateLeft64(tail, 29) ^ uint64(n)) * 0x9E3779B97F4A7C15
	return head, uint32(x >> 32)
}

func (c *Classifier) find(w []byte) int32 {
	if q := quickIndex(w); c.table.quick[q/64]&(1<<(q%64)) == 0 {
		return -1
	}
	return c.table.probe(w)
}

func (t *vocabTable) probe(w []byte) int32 {
	head, h := hashStem(w)
	n := int32(len(w))
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		sl := &t.slots[i]
		if sl.n == 0 {
			return -1
		}
		if sl.head == head && sl.n == n && (n <= 8 || t.keys[i] == string(w)) {
			return sl.id
		}
	}
}

// Classify looks at the system prompt and the last user turn (text only), and the route hint.
// A hint that names a specialist or one of Routes() decides on its own; otherwise the texts do.
// Texts extracts the two texts from a chat.
func (c *Classifier) Classify(system, lastUser, hint string) Decision {
	s := c.run(system, lastUser)
	d := c.decide(s, hint)
	c.release(s)
	return d
}

// Route is Classify's Route and Intent alone, for a caller that needs nothing else (the server
// on every "auto" request): it skips Matched and Reason, the two allocations of a Classify, and
// the texts altogether when the hint decides. TestDecisionsGolden and FuzzClassify hold it to
// Classify.
func (c *Classifier) Route(system, lastUser, hint string) (route, intent string) {
	if r, _, _ := c.hintRoute(hint); r != "" {
		return r, IntentHint
	}
	return c.routeOf(c.run(system, lastUser))
}

// routeOf is Route's answer from a run, whose scratch it releases.
func (c *Classifier) routeOf(s *scratch) (route, intent string) {
	w := c.winner(s, detectLanguage(s.arabic, s.latin))
	c.release(s)
	if w < 0 {
		return c.def, IntentGeneral
	}
	return c.intents[w].route, c.intents[w].name
}

// run tokenises both texts, matches every pattern and scores each intent.
func (c *Classifier) run(system, user string) *scratch {
	s := c.pool.Get().(*scratch)
	c.runIn(s, system, user, 0, false)
	return s
}

// runIn is run in the scratch s, which system and user may lie in (scratch.text). With kept,
// the system prompt is looked for in c.systems under part, and kept there when it qualifies
// (see systems); without, the classifier reads both texts, as explain and eval do.
func (c *Classifier) runIn(s *scratch, system, user string, part uint64, kept bool) {
	s.toks, s.hits, s.negs = s.toks[:0], s.hits[:0], s.negs[:0]
	s.clause, s.arabic, s.latin = 0, 0, 0
	kept = kept && len(system) >= minSystemBytes && len(system) <= maxSystemBytes
	var h uint64
	var sys *systemPart
	if kept {
		h, sys = c.systems.lookup(part, system)
	}
	n := len(user)
	if sys == nil {
		n += len(system)
	}
	if n > longTextBytes {
		// Room for the tokens of both texts and the break between them, so that the system
		// prompt's few do not copy the user turn's many to a buffer twice as large.
		// No more than the pool keeps, as for scan's word records.
		s.toks = slices.Grow(s.toks, min(n/wordBytes+1, maxPooledWords))
	}

	scan(user, s)
	c.resolve(s)
	userEnd := int32(len(s.toks))
	ua, ul := s.arabic, s.latin
	// A break token keeps phrases from spanning the two texts: no term matches across it, so
	// the user turn's matches end before it and the system prompt's are its own (systems).
	s.toks = append(s.toks, tok{id: -1, clause: s.clause})
	// The system prompt's clauses are numbered from systemClause whatever the user turn's
	// count, so that a kept prompt's tokens and cues are appended as they were kept.
	s.clause = systemClause
	c.match(s, 0, userEnd+1, userEnd)
	if sys != nil {
		sys.use(s)
		s.arabic, s.latin = ua+sys.arabic, ul+sys.latin
	} else {
		first, hits, negs := userEnd+1, len(s.hits), len(s.negs)
		scan(system, s)
		c.resolve(s)
		c.match(s, first, int32(len(s.toks)), userEnd)
		if kept && c.systems.missed(h) {
			c.systems.keep(h, part, system, s, first, hits, negs, s.arabic-ua, s.latin-ul)
		}
	}
	if ua+ul > 0 {
		s.arabic, s.latin = ua, ul
	} else {
		s.arabic, s.latin = s.arabic-ua, s.latin-ul
	}
	c.score(s)
}

// match finds the terms and cues that start at toks[from:to] and end by to, in the user turn
// (up to userEnd) or the system prompt (after it).
func (c *Classifier) match(s *scratch, from, to, userEnd int32) {
	toks := s.toks[:to]
	n := to
	covered := int32(0)
	for i := from; i < n; i++ {
		id := toks[i].id
		if uint32(id) >= uint32(len(c.mpats)) {
			// In no term (-1), or starts none: nothing to match, and i+0 covers no later word.
			continue
		}
		g := c.gate[id]
		if g != gateSlow && (i+1 >= n || g&gateBit(toks[i+1].id) == 0) {
			// No term of two words or more can start here: at most the single word's.
			off := int32(g>>gateOffShift) & (1<<gateOffBits - 1)
			if off == 0 {
				continue
			}
			kind := patKind(g>>gateKindShift) & 3
			if kind == kindNegation {
				s.negs = append(s.negs, negSpan{start: i, end: i + 1, reach: oneWordReach, clause: toks[i].clause})
				continue
			}
			if i+1 > covered {
				s.hits = append(s.hits, hit{pat: id + off - 1, start: i, intent: int32(g>>gateInShift) - 1,
					weight: int8(g>>gateWShift) & 15, kind: kind, system: i > userEnd})
				covered = i + 1
			}
			continue
		}
		best := int32(0)
		for p, more := id, true; more; p++ {
			m := &c.mpats[p]
			more = !m.last
			l := m.n
			if i+l > n || (best > 0 && l < best && m.kind < kindNegation) {
				continue
			}
			if l >= 2 && (toks[i+1].id != m.second || l > 2 && !c.restMatches(toks[i+2:i+l], m.rest)) {
				continue
			}
			if m.kind == kindNegation {
				reach := int32(negationReach)
				if l == 1 {
					reach = oneWordReach
				}
				s.negs = append(s.negs, negSpan{start: i, end: i + l, reach: reach, clause: toks[i].clause})
				continue
			}
			if m.kind > kindNegation {
				// A side of a pair neither hides a term nor is hidden by one: "is it safe"
				// (a term) and its "safe" (a side) both count.
				s.hits = append(s.hits, hit{pat: p, start: i, intent: m.intent, weight: m.weight, kind: m.kind,
					system: i > userEnd})
				continue
			}
			if best == 0 {
				best = l
			}
			if i+l <= covered {
				// Part of a longer term that already matched ("virus" in "computer virus").
				continue
			}
			s.hits = append(s.hits, hit{pat: p, start: i, intent: m.intent, weight: m.weight, kind: m.kind,
				system: i > userEnd})
		}
		if i+best > covered {
			covered = i + best
		}
	}
}

// restMatches reports whether toks are the words of a pattern from its third on.
func (c *Classifier) restMatches(toks []tok, rest int32) bool {
	ids := c.rest[rest : rest+int32(len(toks))]
	for k, t := range toks {
		if t.id != ids[k] {
			return false
		}
	}
	return true
}

func (c *Classifier) score(s *scratch) {
	for k := range s.points {
		s.points[k] = 0
	}
	for k := range s.pairs {
		s.pairs[k] = pairState{}
	}
	s.negSteps = 0
	lo := 0 // negs[:lo] end too early to reach this hit or any later one
	for h := range s.hits {
		ht := &s.hits[h]
		if ht.kind != kindAgainst {
			// Hits and negs are both in order of start, so each hit looks only at the cues that
			// can still reach it: a prompt of many cues and terms costs linear time, not their
			// product (TestNegationCheckLinear). negationReach bounds every cue's reach, so no
			// cue skipped here could have reached this hit.
			for lo < len(s.negs) && s.negs[lo].end+negationReach <= ht.start {
				lo++
			}
			for _, ng := range s.negs[lo:] {
				s.negSteps++
				if ng.start > ht.start {
					break
				}
				if ht.start < ng.end+ng.reach && s.toks[ht.start].clause == ng.clause {
					ht.negated = true
					break
				}
			}
			if ht.negated {
				continue
			}
		}
		if ht.kind > kindNegation {
			c.scorePair(s, int32(h))
			continue
		}
		if s.seen[ht.pat/64]&(1<<(ht.pat%64)) != 0 {
			continue
		}
		s.seen[ht.pat/64] |= 1 << (ht.pat % 64)
		ht.counted = true
		pts := 2 * int32(ht.weight)
		if ht.system {
			pts = int32(ht.weight)
		}
		if ht.kind == kindAgainst {
			pts = -pts
		}
		s.points[ht.intent] += pts
	}
}

// scorePair records the hit h of a side of a pair, and counts the pair, once, when its other side
// was seen in the same clause (clauses never span the user turn and the system prompt).
func (c *Classifier) scorePair(s *scratch, h int32) {
	ht := &s.hits[h]
	k := c.pats[ht.pat].pair
	st := &s.pairs[k]
	clause := s.toks[ht.start].clause + 1
	other, otherHit := st.b, st.hb
	if ht.kind == kindPairA {
		st.a, st.ha = clause, h
	} else {
		st.b, st.hb = clause, h
		other, otherHit = st.a, st.ha
	}
	if st.done || other != clause {
		return
	}
	st.done = true
	ht.counted = true
	s.hits[otherHit].counted = true
	pts := 2 * c.pairs[k].weight
	if ht.system {
		pts = c.pairs[k].weight
	}
	s.points[c.pairs[k].intent] += pts
}

func (c *Classifier) release(s *scratch) {
	for _, h := range s.hits {
		s.seen[h.pat/64] &^= 1 << (h.pat % 64)
	}
	// A rare long chat should not keep its size in every pooled scratch: its words, tokens, hits
	// and cues grow with its text (TestLongTextNotPooled). The next call grows them again, from
	// nothing, only if it is as long.
	if cap(s.text) > maxPooledText {
		s.text = nil
	}
	if cap(s.words) > maxPooledText {
		s.words = nil // scan makes a new one
	}
	if cap(s.refs) > maxPooledWords {
		s.refs = nil
	}
	if cap(s.toks) > maxPooledWords {
		s.toks = nil
	}
	if cap(s.hits) > maxPooledHits {
		s.hits = nil
	}
	if cap(s.negs) > maxPooledHits {
		s.negs = nil
	}
	c.pool.Put(s)
}

// maxPooledText is the largest scratch.text, and scratch.words, kept for the next call.
const maxPooledText = 64 << 10

// maxPooledWords is the most words (and tokens) a scratch keeps room for after a call: those of a
// user turn of 64 KiB and a system prompt of a few KB, as scan and runIn size them for a long text
// (a word per wordBytes). At 8 Ki, the 12,400 words of 64 KiB of English prose
// (BenchmarkRoute64KB) were dropped after every call and grown again, by doubling, in the next:
// about 1 MB allocated a call.
const maxPooledWords = 72 << 10 / wordBytes

// maxPooledHits is the most hits (and negation cues) a scratch keeps room for after a call. Only
// a word that is in a term makes one, so far fewer than the words of a text.
const maxPooledHits = 8 << 10

// wordBytes is the fewest bytes a word takes in the long texts scan sizes its buffers for at
// once (longTextBytes): English prose has about 5.3 bytes a word with its space, Arabic about 11. A
// text with shorter words grows the buffers by appending, as any text did before.
const wordBytes = 4

// longTextBytes is the length from which scan and runIn size the words' buffers for the whole text at
// once, rather than letting appends grow them by doubling: a short prompt's words fit in the
// scratch's block.
const longTextBytes = 4 << 10

// winner is the index of the intent that fires, or -1.
func (c *Classifier) winner(s *scratch, lang Language) int {
	for k, in := range c.intents {
		if in.langs != 0 && in.langs&(1<<lang) == 0 {
			continue
		}
		if in.any || s.points[k] >= in.min {
			return k
		}
	}
	return -1
}

// hintRoute resolves x-route-hint: a specialist name, or a route name, case-insensitively.
func (c *Classifier) hintRoute(hint string) (route, name string, specialist bool) {
	h := strings.TrimSpace(hint)
	if h == "" {
		return "", "", false
	}
	for _, sp := range c.specialists {
		if strings.EqualFold(h, sp) {
			return c.specialistRoute, sp, true
		}
	}
	for _, r := range c.routes {
		if strings.EqualFold(h, r) {
			return r, r, false
		}
	}
	return "", "", false
}

func (c *Classifier) decide(s *scratch, hint string) Decision {
	lang := detectLanguage(s.arabic, s.latin)
	if route, name, spec := c.hintRoute(hint); route != "" {
		why := "x-route-hint " + name + " names a SAIF specialist"
		if !spec {
			why = "x-route-hint names the route " + name
		}
		return Decision{Route: route, Intent: IntentHint, Language: lang, Matched: []string{name}, Reason: why}
	}
	w := c.winner(s, lang)
	d := Decision{Language: lang, Route: c.def, Intent: IntentGeneral}
	if w >= 0 {
		d.Route, d.Intent = c.intents[w].route, c.intents[w].name
	}
	n := 0
	for _, h := range s.hits {
		if h.counted && c.pats[h.pat].kind != kindAgainst && (w < 0 || c.pats[h.pat].intent == int32(w)) {
			n++
		}
	}
	if n > 0 {
		d.Matched = make([]string, 0, n)
		for _, h := range s.hits {
			if h.counted && c.pats[h.pat].kind != kindAgainst && (w < 0 || c.pats[h.pat].intent == int32(w)) {
				d.Matched = append(d.Matched, c.pats[h.pat].text)
			}
		}
	}
	d.Reason = c.reason(s, w, lang)
	return d
}

// reason writes e.g. `security 3≥2 [cve, kernel]; reasoning 0<2; lang=english`. Scores are shown
// in weight units (a system-prompt term counts .5 per weight).
func (c *Classifier) reason(s *scratch, w int, lang Language) string {
	b := make([]byte, 0, 128)
	for k, in := range c.intents {
		if k > 0 {
			b = append(b, "; "...)
		}
		b = append(b, in.name...)
		b = append(b, ' ')
		if in.langs != 0 && in.langs&(1<<lang) == 0 {
			b = append(b, "skipped (language)"...)
			continue
		}
		if in.any {
			b = append(b, "any"...)
			if k == w {
				break
			}
			continue
		}
		b = appendHalves(b, s.points[k])
		if s.points[k] >= in.min {
			b = append(b, "≥"...)
		} else {
			b = append(b, '<')
		}
		b = appendHalves(b, in.min)
		b = c.appendHits(b, s, int32(k))
		if k == w {
			break
		}
	}
	if w < 0 {
		b = append(b, " → general"...)
	}
	return string(b)
}

// appendHits lists an intent's counted terms, against-terms (as -x) and negated terms (as !x).
func (c *Classifier) appendHits(b []byte, s *scratch, in int32) []byte {
	first := true
	for _, h := range s.hits {
		p := &c.pats[h.pat]
		if p.intent != in || !(h.counted || h.negated) {
			continue
		}
		if first {
			b = append(b, " ["...)
			first = false
		} else {
			b = append(b, ", "...)
		}
		switch {
		case h.negated:
			b = append(b, '!')
		case p.kind == kindAgainst:
			b = append(b, '-')
		}
		b = append(b, p.text...)
	}
	if !first {
		b = append(b, ']')
	}
	return b
}

func appendHalves(b []byte, halves int32) []byte {
	if halves < 0 {
		b = append(b, '-')
		halves = -halves
	}
	b = strconv.AppendInt(b, int64(halves/2), 10)
	if halves%2 != 0 {
		b = append(b, ".5"...)
	}
	return b
}

// IntentScore is one intent's part of an Explanation.
type IntentScore struct {
	Intent string  `json:"intent"`
	Route  string  `json:"route"`
	Score  float64 `json:"score"`
	Min    float64 `json:"min_score"`
	// Skipped is true when the intent does not apply to the detected language.
	Skipped bool `json:"skipped,omitempty"`
	// Any is true for an intent that needs no terms.
	Any     bool     `json:"any,omitempty"`
	Terms   []string `json:"terms,omitempty"`
	Against []string `json:"against,omitempty"`
	Negated []string `json:"negated,omitempty"`
}

// Explanation is a Decision with every intent's score, for /v1/route/explain.
type Explanation struct {
	Decision
	Scores []IntentScore `json:"scores"`
}

// Explain classifies like Classify and also reports every intent's score and terms. It allocates
// more than Classify and is meant for the explain endpoint and `gateway route eval`.
func (c *Classifier) Explain(system, lastUser, hint string) Explanation {
	s := c.run(system, lastUser)
	e := Explanation{Decision: c.decide(s, hint)}
	for k, in := range c.intents {
		sc := IntentScore{Intent: in.name, Route: in.route, Score: float64(s.points[k]) / 2,
			Min: float64(in.min) / 2, Any: in.any,
			Skipped: in.langs != 0 && in.langs&(1<<e.Language) == 0}
		for _, h := range s.hits {
			p := &c.pats[h.pat]
			switch {
			case p.intent != int32(k):
			case h.negated:
				sc.Negated = append(sc.Negated, p.text)
			case !h.counted:
			case p.kind == kindAgainst:
				sc.Against = append(sc.Against, p.text)
			default:
				sc.Terms = append(sc.Terms, p.text)
			}
		}
		e.Scores = append(e.Scores, sc)
	}
	c.release(s)
	return e
}
