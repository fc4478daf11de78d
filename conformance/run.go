package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"
)

// check is one graded assertion about one or more probes.
type check struct {
	id    string
	grade Grade
	title string
	// probes the check judges; the first is quoted in evidence unless the
	// verdict names another. Nil: judged last, over every exchange.
	probes []probeID
	// anyOf: judge whichever of probes gave a usable answer (dropping the
	// skipped and failed ones) instead of gating on each of them.
	anyOf bool
	// also: further probes judged beside probes when they gave a usable answer. One that did
	// not (refused, skipped, broken) is dropped, never this check's to report: its own gate
	// says what went wrong, and an optional request refused must not fail a check about
	// another. The stream checks judge every streamed chat answer this way.
	also  []probeID
	judge func(j *judge) verdict
}

// verdict is a judge's finding before grading turns it into a Result.
type verdict struct {
	skip     string
	fail     bool
	expected string
	seen     string
	x        *exchange
	// focus, when found in the answer, is where the excerpt starts, so a
	// fault deep in a stream is quoted instead of its first chunks.
	focus string
	// grade, when set, grades a failure in place of the check's own: a
	// check standing in for its request's gate, filtered out by --only,
	// fails as the gate would.
	grade Grade
}

func pass() verdict                        { return verdict{} }
func skip(reason string) verdict           { return verdict{skip: reason} }
func fail(expected, seen string) verdict   { return verdict{fail: true, expected: expected, seen: seen} }
func (v verdict) from(x *exchange) verdict { v.x = x; return v }
func (v verdict) at(focus string) verdict  { v.focus = focus; return v }

// judge is what a check sees: its exchanges and the run's settings.
type judge struct {
	o   *Options
	now time.Time
	ex  map[probeID]*exchange
}

func (j *judge) x(id probeID) *exchange { return j.ex[id] }

type runner struct {
	o Options
	c *client
	// embedding is the model the embeddings requests name (see chooseEmbedding); set before the
	// probes are built.
	embedding string
	// mct: the server refused max_tokens as OpenAI's reasoning models do, so chat requests
	// name their limit max_completion_tokens (see send).
	mct atomic.Bool
}

// Run executes the suite against o.BaseURL and returns the report. It
// returns a *UsageError for bad options, an *UnreachableError when the
// server cannot be reached at all, and ctx's error when cancelled; check
// failures are in the report, never an error. Neither holds o.APIKey: a
// server that repeats the key it was sent has it replaced by [redacted]
// wherever the report quotes the server (see hideKey).
func Run(ctx context.Context, o Options) (rep *Report, err error) {
	defer func() { hideKey(rep, err, o.APIKey) }()
	root, err := o.normalize()
	if err != nil {
		return nil, err
	}
	if o.HTTPClient == nil {
		// A private transport, so a library call leaves no idle
		// connections (and their goroutines) behind.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		o.HTTPClient = &http.Client{Transport: tr}
	}
	r := &runner{o: o, c: &client{root: root, apiKey: o.APIKey, hc: o.HTTPClient, timeout: o.Timeout, now: o.Now, sleep: o.Sleep}}
	started := r.o.Now()

	// /v1/models is both the reachability test and model discovery, so it
	// runs first and alone; its answer is reused by the models checks.
	models := r.c.do(ctx, request{method: http.MethodGet, path: "/models"})
	// An answer that broke off after its head came from a reachable
	// server: models.list.status reports it, like any other broken answer.
	if models.err != nil && models.status == 0 {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &UnreachableError{URL: root, Err: models.err, Timeout: r.o.Timeout}
	}
	choice := modelChoice{model: r.o.Model, why: "given by --model"}
	modelGiven := r.o.Model != ""
	if !modelGiven {
		if choice, err = r.chooseModel(ctx, models); err != nil {
			return nil, err
		}
		r.o.Model = choice.model
	}
	// Before the probes are built: the embeddings requests name the model.
	var embedWhy string
	r.embedding, embedWhy = r.chooseEmbedding(choice, modelGiven)

	probes := map[probeID]*probe{}
	var order []*probe
	for _, p := range r.probes() {
		probes[p.id] = p
		order = append(order, p)
	}
	var selected []*check
	isSelected := map[string]bool{}
	grades := map[string]Grade{}
	for _, c := range catalogue() {
		grades[c.id] = c.grade
		if r.o.selects(c.id) {
			selected = append(selected, c)
			isSelected[c.id] = true
		}
	}
	if len(selected) == 0 {
		return nil, &UsageError{Msg: fmt.Sprintf("--only %q matches no check", r.o.Only)}
	}

	s := &schedule{
		r: r, probes: probes, selected: isSelected, grades: grades,
		ex:        map[probeID]*exchange{},
		waiting:   map[probeID][]int{},
		remaining: make([]int, len(selected)),
		results:   make([]CheckResult, len(selected)),
		checks:    selected,
		total:     len(selected),
	}
	need := map[probeID]bool{}
	for i, c := range selected {
		for _, id := range c.allProbes() {
			if _, ok := probes[id]; !ok {
				panic("conformance: check " + c.id + " names unknown probe " + string(id))
			}
			need[id] = true
			s.waiting[id] = append(s.waiting[id], i)
			s.remaining[i]++
		}
	}
	s.progressf("conformance: %d checks against %s (model %s: %s)\n", len(selected), root, r.o.Model, choice.why)
	if need["embeddings"] {
		s.progressf("conformance: embeddings with model %s: %s\n", r.embedding, embedWhy)
	}

	s.finish(probes["models.list"], models)
	// The request that chose the model is chat.basic's, sent already.
	if choice.basic != nil && need["chat.basic"] {
		s.finish(probes["chat.basic"], choice.basic)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.o.Concurrency)
	for _, p := range order {
		if !need[p.id] || p.id == "models.list" || (p.id == "chat.basic" && choice.basic != nil) {
			continue
		}
		g.Go(func() error {
			s.finish(p, p.run(gctx, r))
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, c := range selected {
		if c.probes == nil {
			s.judgeAt(i)
		}
	}
	return &Report{
		BaseURL:         redactURL(root),
		Model:           r.o.Model,
		ModelChoice:     choice.why,
		EmbeddingModel:  r.embedding,
		EmbeddingChoice: embedWhy,
		Strict:          r.o.Strict,
		Started:         started,
		Duration:        r.o.Now().Sub(started),
		Checks:          s.results,
	}, nil
}

// schedule judges each check as soon as its probes are in, so progress is
// live while the report keeps catalogue order.
type schedule struct {
	r        *runner
	probes   map[probeID]*probe
	selected map[string]bool
	grades   map[string]Grade // every check's, by id
	checks   []*check

	mu        sync.Mutex
	ex        map[probeID]*exchange
	waiting   map[probeID][]int
	remaining []int
	results   []CheckResult
	done      int
	total     int
}

func (s *schedule) finish(p *probe, x *exchange) {
	if x.skip == "" {
		x.skip = p.notOffered(x)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ex[p.id] = x
	for _, i := range s.waiting[p.id] {
		s.remaining[i]--
		if s.remaining[i] == 0 {
			s.judgeLocked(i)
		}
	}
}

func (s *schedule) judgeAt(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.judgeLocked(i)
}

func (s *schedule) judgeLocked(i int) {
	c := s.checks[i]
	ex := map[probeID]*exchange{}
	if c.probes == nil {
		for id, x := range s.ex {
			ex[id] = x
		}
	} else {
		for _, id := range c.allProbes() {
			ex[id] = s.ex[id]
		}
	}
	res := s.evaluate(c, ex)
	s.results[i] = res
	s.done++
	s.progressf("[%*d/%d] %-42s %-4s  %d left\n", width(s.total), s.done, s.total, c.id, res.Result, s.total-s.done)
}

func (s *schedule) progressf(format string, args ...any) {
	if s.r.o.Progress != nil {
		// The model id comes from the server.
		fmt.Fprint(s.r.o.Progress, printable(fmt.Sprintf(format, args...)))
	}
}

func width(n int) int { return len(fmt.Sprint(n)) }

func (s *schedule) evaluate(c *check, ex map[probeID]*exchange) CheckResult {
	res := CheckResult{ID: c.id, Grade: c.grade, Title: c.title}
	v, gated := s.gate(c, ex)
	if !gated {
		v = c.judge(&judge{o: &s.r.o, now: s.r.o.Now(), ex: ex})
	}
	switch {
	case v.skip != "":
		res.Result = Skip
		res.Reason = v.skip
		return res
	case !v.fail:
		res.Result = Pass
		return res
	}
	grade := c.grade
	if v.grade != "" {
		grade = v.grade
	}
	res.Result = s.outcome(grade)
	x := v.x
	if x == nil && len(c.probes) > 0 {
		x = ex[c.probes[0]]
	}
	res.Reason = clip(v.seen, 200)
	res.Evidence = &Evidence{Expected: v.expected, Seen: v.seen}
	if x != nil && (x.method != "" || x.err != nil) {
		res.Evidence.Excerpt = x.excerptAt(v.focus)
	}
	return res
}

// outcome is what a failure graded g reports: FAIL for MUST (and STRICT with --strict), WARN
// otherwise.
func (s *schedule) outcome(g Grade) Result {
	if g == Must || (g == Strict && s.r.o.Strict) {
		return Fail
	}
	return Warn
}

// gate turns an unusable probe into one FAIL (on the probe's gate check, or
// on any check when the gate was not selected) and SKIPs elsewhere.
func (s *schedule) gate(c *check, ex map[probeID]*exchange) (verdict, bool) {
	if c.anyOf {
		var standIn *verdict
		for _, id := range c.probes {
			p, x := s.probes[id], ex[id]
			if x.skip != "" || !p.usable(x) {
				// A request that got no usable answer is its gate's to
				// report; with the gate left out by --only, this check
				// reports it, as for any other check.
				if x.skip == "" && !s.selected[p.gate] && standIn == nil {
					v := s.forGate(p, x)
					standIn = &v
				}
				delete(ex, id)
			}
		}
		if standIn == nil && len(ex) == 0 {
			return skip("none of its requests got an answer to judge"), true
		}
		if standIn == nil {
			return verdict{}, false
		}
		// The stand-in is graded as the gate it stands for, which may be milder than this
		// check: a warning for a STRICT request that got no answer must not hide a MUST
		// failure in the answers that did come.
		if len(ex) > 0 {
			if own := c.judge(&judge{o: &s.r.o, now: s.r.o.Now(), ex: ex}); own.fail && s.outcome(c.grade) == Fail && s.outcome(standIn.grade) != Fail {
				return own, true
			}
		}
		return *standIn, true
	}
	for _, id := range c.probes {
		p, x := s.probes[id], ex[id]
		if x.skip != "" {
			return skip(x.skip), true
		}
		if p.usable(x) {
			continue
		}
		if c.id == p.gate {
			_, focus := x.errorInsideMessage()
			return fail(p.expectation(), p.unusableWhy(x)).from(x).at(focus), true
		}
		if !s.selected[p.gate] {
			return s.forGate(p, x), true
		}
		return skip("no usable answer to judge; see " + p.gate), true
	}
	for _, id := range c.also {
		if x := ex[id]; x.skip != "" || !s.probes[id].usable(x) {
			delete(ex, id)
		}
	}
	return verdict{}, false
}

// allProbes is every probe c judges: its own, then those it also judges.
func (c *check) allProbes() []probeID {
	if len(c.also) == 0 {
		return c.probes
	}
	return append(append([]probeID{}, c.probes...), c.also...)
}

// forGate is the failure of p's unusable answer x, reported by a check
// standing in for p's gate, which --only left out. The failure is the
// gate's, a MUST for most requests, and graded so: a SHOULD check that
// reports it must not turn it into a warning.
func (s *schedule) forGate(p *probe, x *exchange) verdict {
	_, focus := x.errorInsideMessage()
	v := fail(fmt.Sprintf("%s (for %s, %s, left out by --only)", p.expectation(), p.gate, s.grades[p.gate]), p.unusableWhy(x)).from(x).at(focus)
	v.grade = s.grades[p.gate]
	return v
}

func (p *probe) expectation() string {
	switch {
	case !p.wantOK:
		return "an HTTP response"
	case p.stream:
		return "HTTP 200 with an event stream"
	}
	return "HTTP 200 with a JSON body"
}

func (p *probe) unusableWhy(x *exchange) string {
	if x.err == nil && x.status == http.StatusOK {
		if where, ok := x.errorInside(); ok {
			msg, _ := x.errorInsideMessage()
			return fmt.Sprintf("%s but %s is an error, not a result: %s", x.statusLine(), where, msg)
		}
		if p.stream {
			return x.statusLine() + " but the body is not an event stream"
		}
		if x.jsonErr != nil {
			return "HTTP 200 but the body is not JSON: " + x.jsonErr.Error()
		}
		if len(bytes.TrimSpace(x.body)) > 0 {
			// It decoded, to nothing: the literal null.
			return x.statusLine() + " but the body is JSON null"
		}
		return x.statusLine() + " but the body is empty"
	}
	return x.statusLine()
}

// hideKey replaces key with [redacted] in every text of rep and in a
// usage error's message. A server that repeats the key it was sent
// (LiteLLM's "Received API Key = …", a proxy that quotes the request's
// headers) would otherwise put it into the evidence, and reports are pasted
// into issues and kept as CI artifacts. A key shorter than 8 bytes is left:
// it is no secret worth a report where every word holding it is cut. Where
// the key's digits are part of a longer number (see redactKey), they stay.
func hideKey(rep *Report, err error, key string) {
	if len(key) < minHiddenKey {
		return
	}
	hide := func(s *string) { *s = redactKey(*s, key) }
	var ue *UsageError
	if errors.As(err, &ue) {
		hide(&ue.Msg)
	}
	if rep == nil {
		return
	}
	hide(&rep.BaseURL)
	hide(&rep.Model)
	hide(&rep.ModelChoice)
	hide(&rep.EmbeddingModel)
	hide(&rep.EmbeddingChoice)
	for i := range rep.Checks {
		c := &rep.Checks[i]
		hide(&c.Reason)
		if e := c.Evidence; e != nil {
			hide(&e.Expected)
			hide(&e.Seen)
			hide(&e.Excerpt)
		}
	}
}

// minHiddenKey is the shortest key hideKey and hideKeyIn remove.
const minHiddenKey = 8

// hideKeyIn is b with key replaced by [redacted] (see hideKey).
func hideKeyIn(b []byte, key string) []byte {
	if len(key) < minHiddenKey || !bytes.Contains(b, []byte(key)) {
		return b
	}
	return []byte(redactKey(string(b), key))
}

// redactKey is s with key replaced by [redacted] wherever it stands as itself. The one place it
// stays is where a key of digits alone is part of a longer JSON number outside any string (more
// digits, a sign, decimals or an exponent beside it): "created": 1750000000 holding 17500000,
// a logprob -17500000 or -0.17500000. There it is a coincidence, not the key, and cutting it made
// the answer no JSON, so that a conforming server failed the checks that read it, and the report
// showed numbers the server never sent (TestNumericKeyInsideANumberStays,
// TestKeyBesideAMinusSignStays). A key with a letter in it, or one inside a string (a message
// quoting it, an id holding its digits), is cut, letters or digits beside it or not: a key
// echoed with a character after it is still the key, a string stays a string with [redacted]
// in it, and a secret shown is worse than a word cut (TestKeyRedactedWhereItStandsAlone).
func redactKey(s, key string) string {
	if len(key) < minHiddenKey || !strings.Contains(s, key) {
		return s
	}
	numeric := strings.IndexFunc(key, func(r rune) bool { return !isDigit(r) }) < 0
	var b strings.Builder
	from := 0 // s[:from] is written
	for search := 0; ; {
		i := strings.Index(s[search:], key)
		if i < 0 {
			break
		}
		i += search
		end := i + len(key)
		if numeric && (numberBefore(s[:i]) || numberAfter(s[end:])) && !inString(s[:i]) {
			search = i + 1
			continue
		}
		b.WriteString(s[from:i])
		b.WriteString("[redacted]")
		from, search = end, end
	}
	if from == 0 {
		return s
	}
	b.WriteString(s[from:])
	return b.String()
}

// numberBefore reports whether before ends with what continues a JSON number leftwards into
// digits that follow it: a digit, a decimal point or an exponent's e after a digit, or a sign
// where a number may begin (after a non-word character, or an exponent's after a digit and e or
// E). A hyphen after a word ("sk-", "key-") is no sign.
func numberBefore(before string) bool {
	r, n := utf8.DecodeLastRuneInString(before)
	rest := before[:len(before)-n]
	switch {
	case isDigit(r):
		return true
	case r == '.' || r == 'e' || r == 'E':
		p, _ := utf8.DecodeLastRuneInString(rest)
		return isDigit(p)
	case r == '-' || r == '+':
		p, pn := utf8.DecodeLastRuneInString(rest)
		if p == 'e' || p == 'E' {
			q, _ := utf8.DecodeLastRuneInString(rest[:len(rest)-pn])
			return isDigit(q)
		}
		return r == '-' && (rest == "" || !isWord(p))
	}
	return false
}

// numberAfter reports whether after begins with what continues a JSON number rightwards from
// digits before it: a digit, a decimal point before a digit, or an exponent (e or E, a sign
// perhaps, a digit).
func numberAfter(after string) bool {
	r, n := utf8.DecodeRuneInString(after)
	rest := after[n:]
	switch {
	case isDigit(r):
		return true
	case r == '.':
		p, _ := utf8.DecodeRuneInString(rest)
		return isDigit(p)
	case r == 'e' || r == 'E':
		p, pn := utf8.DecodeRuneInString(rest)
		if p == '-' || p == '+' {
			p, _ = utf8.DecodeRuneInString(rest[pn:])
		}
		return isDigit(p)
	}
	return false
}

// inString reports whether the end of before is inside a JSON string: an odd number of quotes,
// not escaped, since its last line began (a JSON string never holds a newline, so a line that
// began elsewhere, an excerpt's or an event's, starts outside one).
func inString(before string) bool {
	if i := strings.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	in := false
	for i := 0; i < len(before); i++ {
		switch before[i] {
		case '\\':
			if in {
				i++
			}
		case '"':
			in = !in
		}
	}
	return in
}

func isWord(r rune) bool { return isDigit(r) || r == '_' || unicode.IsLetter(r) }

func isDigit(r rune) bool { return '0' <= r && r <= '9' }
