package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/metrics"
	"github.com/hayula/gateway/upstream"
)

// Response headers naming who served (x-hayula-chain and so on), in canonical form: Header.Set
// allocates a canonical copy of any other key, on every request.
const (
	hdrChain  = "X-Hayula-Chain"
	hdrRoute  = "X-Hayula-Route"
	hdrTarget = "X-Hayula-Target"
	hdrIntent = "X-Hayula-Intent" // model "auto" only: the classifier's intent
	// Model "auto" only, when it moved the request off the route its text was classified to
	// (autoMove): that route, and the filters that left it no target.
	hdrMovedFrom  = "X-Hayula-Moved-From"
	hdrMoveReason = "X-Hayula-Move-Reason"
)

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	s.serveOp(w, r, core.OpChat)
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	s.serveOp(w, r, core.OpCompletions)
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	s.serveOp(w, r, core.OpEmbeddings)
}

// serveOp serves one request on an OpenAI endpoint through admission, eligibility, the attempt
// loop and the writer.
func (s *Server) serveOp(w http.ResponseWriter, r *http.Request, op core.Op) {
	start := time.Now()
	id := requestIDOf(w)
	st, _ := s.states.Get().(*reqState)
	if st == nil {
		st = new(reqState)
	}
	defer s.release(st)
	// Counted once the answer is out, as the log line is; a panic below, which the recoverer
	// answers 500 (or which cuts off an answer under way), counts as that 500.
	route, status, end := metrics.NoRoute, http.StatusInternalServerError, time.Time{}
	defer func() {
		if end.IsZero() {
			end = time.Now()
		}
		s.metrics.Request(op, route, status, end.Sub(start))
	}()
	req, rs := s.admitOp(w, r, op, st, id, start, &status, &end)
	if rs == nil {
		return
	}
	route = rs.index
	var res result
	s.run(r.Context(), rs, req, st, id, &res)
	s.answerOp(w, r, op, rs, req, st, &res, id, start, &status, &end)
}

// serveOp's admission and its answer are functions of their own so that what each holds (the
// auto-router's pick, a log line's fields, the writer's arguments) is not a part of serveOp's
// frame while the request waits for its upstream: the stack a request waits on is cache lines
// that 64 requests in flight each hold (PERFORMANCE.md, "The stack a request waits on").

// admitOp admits r (admit). Refused, it answers and logs the refusal, sets *status and *end, and
// returns a nil route; admitted by the auto-router, it sets the answer's fields that say so.
//
//go:noinline
func (s *Server) admitOp(w http.ResponseWriter, r *http.Request, op core.Op, st *reqState, id string, start time.Time,
	status *int, end *time.Time) (*core.Request, *routeState) {
	req, rs, pick, e := s.admit(r, op, st, true)
	if e != nil {
		s.unbusy(st) // before the answer goes out, as write gives it back
		writeError(w, e)
		*status, *end = e.Status, time.Now()
		s.logRequest(r, requestLog{key: st.keyName(), id: id}, *status, start, *end)
		return nil, nil
	}
	if pick.intent != "" {
		s.setHeaders(&pick, w.Header())
		if pick.from != nil {
			st.movedFrom = pick.from.Name // the log line's moved_from, and reloadForbids' too
			s.metrics.Moved(pick.from.index, rs.index)
		}
	}
	return req, rs
}

// answerOp writes what the attempt loop ended with (res) and logs the request's line, setting
// *status once the answer is out and *end, the request's, with its line (written).
//
//go:noinline
func (s *Server) answerOp(w http.ResponseWriter, r *http.Request, op core.Op, rs *routeState, req *core.Request, st *reqState,
	res *result, id string, start time.Time, status *int, end *time.Time) {
	if cap(res.chain) > cap(st.chain) {
		st.chain = res.chain[:0] // the array grew: keep the larger one
	}
	var ended string
	*status, ended = s.write(r.Context(), w, rs, req, res, st)
	*end = s.written(r, op, rs, st, res, id, start, *status, ended)
}

// written is what serveOp does once the answer is out: the stream's or the answer's metrics, the
// answer's memory given back, the request's line, whose end it returns. A function of its own
// so that the line's fields are not a part of answerOp's frame, on the stack of every stream
// while it is relayed.
//
//go:noinline
func (s *Server) written(r *http.Request, op core.Op, rs *routeState, st *reqState, res *result, id string, start time.Time,
	status int, ended string) time.Time {
	upID, cut := "", ""
	if res.resp != nil {
		upID = res.resp.UpstreamID
		if res.resp.Stream != nil {
			s.metrics.StreamEnd(op, rs.index, res.target.Index, streamEndOf(ended))
		} else {
			ended, cut = "", ended // a whole answer's: its line's cut=, not stream=
			if cut == "" && status == http.StatusOK && res.resp.Aborted {
				cut = streamAborted // sent as it came, but the upstream's engine gave it up (TestAbortAfterContentIsCut)
			}
		}
		if res.resp.Stream == nil && s.metrics != nil {
			s.countAnswer(st.usageTo(rs), res.target, res.resp) // after the write: not the client's wait
		}
		res.resp.Release() // written: its memory serves the next answer
	}
	end := time.Now()
	s.logRequest(r, requestLog{key: st.keyName(), route: rs.Name, movedFrom: st.movedFrom, chain: res.chain, stream: ended,
		cut: cut, id: id, upstreamID: upID}, status, start, end)
	return end
}

// reqState is what one request on an OpenAI endpoint is built in: the body's buffer, the decoded
// body, the request view and the arrays the attempt loop works in. serveOp lends one from the
// server's pool and returns it when the request is over: nothing of the request outlives serveOp
// (the attempt loop runs on its goroutine, and net/http's Transport copies a body it may read
// later). Each of these was an allocation on every request, and the body a fifth of the bytes the
// gateway allocated under the bench's load.
type reqState struct {
	body  []byte         // the body's buffer
	wire  wireView       // the decoded body
	req   core.Request   // the request view; its Params point into wire
	msgs  []core.Message // the array the decoded messages are built in
	cands []*core.Target // the array eligibility keeps targets in, then the attempt loop's candidates
	open  []*core.Target // the array the attempt loop keeps the candidates its guards let in (openOf)
	chain []string       // the array the targets tried are named in
	lead  []byte         // the array a stream's chunks held before its first event are kept in (firstEvent)
	key   *config.Key    // the key the request came with (its name for the log, its index for metrics); nil for none
	busy  *atomic.Int64  // the key's in-flight count this request is counted in (a slot, under max_concurrent)
	tpm   *tokenBucket   // the key's tpm bucket the answer is to be charged to, until it is (chargeTPM)
	// bridge is the Responses bridge that will translate the answer (decodeResponses); nil for
	// the other endpoints, whose answers go out as the adapter gave them.
	bridge *responsesWriter
	// movedFrom is the route model auto moved the request off ("" when it did not), whose
	// strictness the request keeps (autoMove), a later configuration's too (reloadForbids).
	movedFrom string
}

// readBody reads r's body (see readBody) into st's buffer, which keeps the array it ended up in
// for the next request; a body read in place is the connection's, and not kept.
func (st *reqState) readBody(r *http.Request, limit int64) ([]byte, *apiError) {
	body, inPlace, e := readBody(r, limit, st.body)
	if e == nil && !inPlace {
		st.body = body[:0]
	}
	return body, e
}

// keyName is the name of st's key, for the log line; "" for none.
func (st *reqState) keyName() string {
	if st.key == nil {
		return ""
	}
	return st.key.Name
}

// usageTo is whose tokens the answer to st's request counts as: rs's and its key's.
func (st *reqState) usageTo(rs *routeState) usageTo {
	u := usageTo{route: rs.index, key: -1}
	if st.key != nil {
		u.key = st.key.Index
	}
	return u
}

// release empties st, so that it holds nothing of the request, and puts it back in the pool.
func (s *Server) release(st *reqState) {
	s.unbusy(st)
	// A rare large body or long conversation should not pin its arrays.
	if cap(st.body) > maxPooledBody {
		st.body = nil
	}
	clear(st.msgs[:cap(st.msgs)])
	if cap(st.msgs) > maxPooledMessages {
		st.msgs = nil
	}
	st.wire, st.req, st.key, st.tpm, st.bridge, st.movedFrom = wireView{}, core.Request{}, nil, nil, nil, "" // an answer not charged by now is none
	s.states.Put(st)
}

// maxPooledMessages is the longest messages array kept for the next request.
const maxPooledMessages = 256

// admit is everything before eligibility: auth, the key's caps (with limited), body, decode,
// route. Explain shares it, without the caps: it sends nothing upstream. pick is the
// auto-router's decision when the model was "auto". The request is built in st (nil: a new one),
// which keeps the arrays it ended up in and the key's concurrency slot, if it took one.
func (s *Server) admit(r *http.Request, op core.Op, st *reqState, limited bool) (req *core.Request, rs *routeState, pick autoPick, e *apiError) {
	if st == nil {
		st = new(reqState)
	}
	key, e := s.authenticate(r)
	if e != nil {
		return nil, nil, autoPick{}, e
	}
	if key != nil {
		st.key = key
		if limited {
			s.metrics.Key(key.Index)
		}
		if limited && s.limits != nil {
			if e := s.limit(key, st); e != nil {
				return nil, nil, autoPick{}, e
			}
		}
	}
	body, e := st.readBody(r, s.cfg.MaxBodyBytes)
	if e != nil {
		return nil, nil, autoPick{}, e
	}
	if op == opExplain {
		op = core.OpChat
		if isResponsesBody(body) {
			op = opResponses
		}
	}
	if op == core.OpChat {
		req, e = decodeChat(r, body, st, s.names)
	} else if op == opResponses {
		req, e = s.decodeResponses(r, body, st)
	} else {
		req, e = decodeOther(r, body, op)
	}
	if e != nil {
		return nil, nil, autoPick{}, formNote(r, e)
	}
	rs, pick, e = s.resolve(key, req)
	if e != nil {
		return nil, nil, autoPick{}, e
	}
	if req.PromptTokensMin == 0 && rs.mayOverflow(req) { // autoMove may have counted it
		req.PromptTokensMin = filter.PromptTokensMin(req.Messages)
	}
	// A stream's usage is asked of an OpenAI-compatible target only when something counts it
	// (upstream.Response.UsageAsked): the metrics, the key's tpm, or the Responses bridge, whose
	// response.completed carries it.
	req.CountsUsage = s.metrics != nil || st.tpm != nil || st.bridge != nil
	req.ChargesUsage = st.tpm != nil
	return req, rs, pick, nil
}

// result is how the attempt loop ended.
type result struct {
	resp   *upstream.Response
	first  []byte // a streaming response's first event with something in it, read before the point of no return
	lead   []byte // the chunks with nothing in it held before first (firstEvent), as SSE events; nil for none
	target *core.Target
	flight inflight // the served target's in-flight count
	chain  []string
	err    *apiError // set when nothing answered
	gone   bool      // the client went away
}

// run walks the route's eligible targets: select, attempt, classify, move on or stop, and writes
// how it ended in *res, the caller's (a result returned by value was one more copy of it on the
// stack the request waits on). Its arrays are st's; id is the request's, sent to every target
// asked.
func (s *Server) run(ctx context.Context, rs *routeState, req *core.Request, st *reqState, id string, res *result) {
	if cap(st.cands) < len(rs.Targets) {
		st.cands = make([]*core.Target, 0, max(len(rs.Targets), len(s.cfg.Targets)))
	}
	p := s.plan(rs, req, st.cands)
	if p.err != nil {
		*res = result{err: p.err}
		return
	}
	if len(p.res.FailedOpen) > 0 {
		s.failedOpen.Add(1)
	}
	if len(p.res.Kept) == 0 && len(p.reserve) == 0 {
		*res = result{err: s.noTarget(rs, p.res.Drops)}
		return
	}
	// Kept is in st.cands's array, which can hold every target of the route: the loop removes
	// from it in place, and the reserve fits once it is empty.
	cands := p.res.Kept
	if cands == nil {
		cands = st.cands[:0]
	}
	*res = result{chain: st.chain[:0]}
	var (
		a        attemptResult
		attempts []errmap.Attempt
		classes  []core.Class
		reserved bool
		// recovering: every candidate is one health set aside, already ordered soonest to
		// recover first (fail open, or the reserve); no policy may reorder them.
		recovering = len(p.res.FailedOpen) > 0
		passed     []*core.Target // managed targets passed by cold, started once the request moves on
		forbidden  []filter.Drop  // targets a reload put out of this request's reach (Server.reloadForbids)
	)
	for {
		// A guarded target no failure so far opens stays a candidate for later, when failures may
		// have opened it: the policy picks among the others, so that one picking it first (latency's
		// unmeasured tail, least-busy's idle one) does not lose it (TestGuardWaitsUnderEveryPolicy).
		open := cands
		if rs.guarded {
			open = rs.openOf(cands, classes, p.overflowDrops, &st.open)
		}
		if len(open) == 0 {
			if len(res.chain) > 0 || reserved || len(p.reserve) == 0 {
				break
			}
			// Everything eligible was guarded shut: try the targets health held back.
			reserved, recovering = true, true
			s.failedOpen.Add(1)
			cands = append(cands, p.reserve...)
			continue
		}
		t := open[0]
		if len(open) > 1 && !recovering {
			t = rs.sel.Pick(req, open)
		}
		cands = remove(cands, t)
		if s.reloadForbids(req, rs.Name, st.movedFrom, st.key, t) {
			// A reload made t public, or this request strict, while it was under way: as the
			// privacy filter would drop t now.
			forbidden = forbid(forbidden, t)
			continue
		}
		res.chain = append(res.chain, t.Name)
		s.attemptOn(ctx, rs, st, req, t, cands, classes, p.overflowDrops, !recovering, id, &a)
		if a.forbidden {
			res.chain = res.chain[:len(res.chain)-1]
			forbidden = forbid(forbidden, t)
			continue
		}
		if a.held {
			// Health set t aside since the plan (another request's probe took it, or it was
			// benched): as if the plan had, it waits with the reserve.
			res.chain = res.chain[:len(res.chain)-1]
			p.reserve = append(p.reserve, t)
			sortByRecovery(p.reserve, s.health.Available)
			continue
		}
		if a.err == nil {
			s.metrics.Served(rs.index, t.Index)
			res.resp, res.first, res.lead, res.target, res.flight = a.resp, a.first, a.lead, t, a.end
			if passed != nil {
				s.procs.warmPassed(passed)
			}
			return
		}
		if a.warm {
			passed = append(passed, t)
		}
		attempts = failed(attempts, t, &a)
		s.logAttempt(ctx, rs.Name, t, &a, id)
		classes = append(classes, a.dec.Class)
		if a.dec.Class == core.ClassClientGone || ctx.Err() != nil {
			if passed != nil {
				s.procs.warmPassed(passed)
			}
			res.gone = true
			return
		}
		if req.NoFallback || a.dec.Class == core.ClassRequest || !rs.FallbackOn.Has(a.dec.Class) {
			attempts[len(attempts)-1].Stopped = true // answered as it is (TestChainStopAnswersAsIs)
			break
		}
	}
	if passed != nil {
		s.procs.warmPassed(passed)
	}
	res.err = s.chainFailed(rs, st, &p, cands, classes, attempts, forbidden, reserved, res.chain)
}

// chainFailed is the error run answers when the chain ended with nothing served: the attempts'
// error restored (errmap.Restore), the upstream keys of the targets tried (chain) taken out of
// it; or, with no attempt made, why none could be. A function of its own, so that its locals
// are not a part of run's frame on every request's stack, down to the wait for the answer.
//
//go:noinline
func (s *Server) chainFailed(rs *routeState, st *reqState, p *plan, cands []*core.Target, classes []core.Class,
	attempts []errmap.Attempt, forbidden []filter.Drop, reserved bool, chain []string) *apiError {
	if len(attempts) == 0 {
		if forbidden != nil {
			return s.noTarget(rs, append(p.res.Drops, forbidden...))
		}
		return guardedShut(rs, p.res.Drops, cands)
	}
	ce := errmap.Restore(attempts)
	if ce.ShouldRetry == errmap.RetryNo && untried(rs, cands, classes, p.overflowDrops, p.reserve, reserved, st) {
		// A futile failure of the targets tried says nothing of those the chain did not reach: set
		// aside by health (a cooldown that may end, a probe under way), or left when the chain
		// stopped (a selector may pick them first next time). A retry may be served by one
		// (TestFinalErrorShouldRetryNotWithTargetsUntried).
		ce.ShouldRetry = errmap.RetryUnsaid
	}
	for _, name := range chain {
		if t, ok := s.cfg.Target(name); ok && t.APIKey != "" {
			k := string(t.APIKey)
			ce.Message, ce.Type = redactKey(ce.Message, k), redactKey(ce.Type, k)
			ce.Code, ce.Param = redactKey(ce.Code, k), redactKey(ce.Param, k)
		}
	}
	if st.bridge != nil {
		// A refusal of the chat request the Responses bridge built names what its client sent
		// (TestResponsesAdapterErrorsNameInput).
		ce.Param, ce.Message = st.bridge.clientTerms(ce.Param, ce.Message)
	}
	return &ce
}

// forbid is forbidden with t added as the privacy filter would drop it now: a reload made t
// public, or the request strict, while the request was under way (Server.reloadForbids).
//
//go:noinline
func forbid(forbidden []filter.Drop, t *core.Target) []filter.Drop {
	return append(forbidden, filter.Drop{Target: t.Name, Filter: (filter.Privacy{}).Name(),
		Reason: "strict request: public target (since a reload)"})
}

// failed is attempts with a's failure on t added. forbid and failed are functions of their own
// so that the values they build are not a part of run's frame (see chainFailed).
//
//go:noinline
func failed(attempts []errmap.Attempt, t *core.Target, a *attemptResult) []errmap.Attempt {
	return append(attempts, errmap.Attempt{Target: t.Name, Decision: a.dec, Err: a.err})
}

// untried reports whether the attempt loop ended with a target of the route it could have tried
// left untried: one of cands its guards let in, or, when it did not go on to the reserve, one of
// the reserve (health set aside, or held since the plan).
func untried(rs *routeState, cands []*core.Target, classes []core.Class, overflowDrops int, reserve []*core.Target, reserved bool, st *reqState) bool {
	return !reserved && len(reserve) > 0 || len(rs.openOf(cands, classes, overflowDrops, &st.open)) > 0
}

// openOf is cands without the guarded targets that the failures so far (classes, and overflowDrops
// targets the context filter passed over) do not open, in cands's order. It is cands itself when
// every one is open; otherwise it is built in *buf's array.
func (rs *routeState) openOf(cands []*core.Target, classes []core.Class, overflowDrops int, buf *[]*core.Target) []*core.Target {
	shut := false
	for _, t := range cands {
		if g := rs.guard[t.Index]; g != 0 && !guardOpen(g, classes, overflowDrops) {
			shut = true
			break
		}
	}
	if !shut {
		return cands
	}
	open := (*buf)[:0]
	for _, t := range cands {
		if g := rs.guard[t.Index]; g == 0 || guardOpen(g, classes, overflowDrops) {
			open = append(open, t)
		}
	}
	*buf = open
	return open
}

// guardedShut answers a request whose eligible targets (shut) were all guarded shut: nothing
// failed before them, so none could be entered. Explain predicts it (shutByGuards). When drops
// set public targets aside for a strict request, the targets whose failure would have opened the
// guards were not its to use: no private target can serve it, as noTarget answers, and the
// message says both why the public ones and why the private ones were not tried
// (TestStrictGuardedShutSaysNoPrivateTarget). Otherwise, when the context filter passed a target
// over, that was an overflow failure, and the guards it left shut are shut as after an upstream's
// overflow answer: the request is answered as noTarget answers the drops, 400
// context_length_exceeded for a prompt no target it could try can take, as the overflow answer
// would have been, not 503 no_target, which says no failure came first and which an SDK retries
// in vain (TestGuardShutAfterContextDropIsOverflow).
func guardedShut(rs *routeState, drops []filter.Drop, shut []*core.Target) *apiError {
	var b strings.Builder
	overflowed := false
	for _, d := range drops {
		overflowed = overflowed || d.Filter == (filter.Context{}).Name()
		if d.Filter != (filter.Privacy{}).Name() {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.Target)
		b.WriteString(": ")
		b.WriteString(d.Reason)
	}
	switch {
	case b.Len() == 0 && overflowed:
		return noTarget(rs, drops)
	case b.Len() == 0:
		return &apiError{Status: http.StatusServiceUnavailable, Type: typeUpstream, Code: "no_target",
			Message: "no target of route " + strconv.Quote(rs.Name) +
				" could be tried: the remaining targets are guarded and no earlier failure opened them"}
	}
	b.WriteString("), and its private targets left (")
	for i, t := range shut {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.Name)
	}
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeUpstream, Code: "no_private_target",
		Message: "no private target could serve this strict request on route " + strconv.Quote(rs.Name) +
			": its public targets are not its to use (" + b.String() +
			") are guarded and no earlier failure opened them"}
}

// redactKey is s without the upstream key k. The client's error carries the upstream's own
// message, and the log its whole error: an upstream that repeats the key it refused (quoting the
// Authorization header, LiteLLM's "Received API Key = …") would otherwise hand the gateway's key
// to every client and to the log (TestUpstreamKeyEchoRedacted). Masked echoes go too: a word
// that ends a run of masking with the key's last four characters, as OpenAI's "sk-abc***xyz"
// and LiteLLM's "sk-...8aSP" do, and the key's SHA-256, LiteLLM's "Key Hash (Token)"
// (TestUpstreamKeyMaskedEchoRedacted): together they narrow the key for whoever reads them.
func redactKey(s, k string) string {
	if k == "" {
		return s
	}
	s = strings.ReplaceAll(s, k, "[redacted]")
	if len(k) < 12 {
		return s // a short key's four last characters would be too common a word's
	}
	sum := sha256.Sum256([]byte(k))
	hash := hex.EncodeToString(sum[:])
	s = strings.ReplaceAll(s, hash, "[redacted]")
	s = strings.ReplaceAll(s, strings.ToUpper(hash), "[redacted]")
	tail := k[len(k)-4:]
	var b strings.Builder
	for rest := s; ; {
		i := strings.Index(rest, tail)
		if i < 0 {
			if b.Len() == 0 {
				return s
			}
			b.WriteString(rest)
			return b.String()
		}
		end := i + len(tail)
		start := strings.LastIndexAny(rest[:i], " \t\n\"'`,;:=()[]{}<>") + 1
		if after := rest[end:]; (after == "" || strings.IndexByte(" \t\n\"'`,;.:()[]{}<>", after[0]) >= 0) &&
			strings.ContainsAny(rest[start:i], "*.…") {
			b.WriteString(rest[:start])
			b.WriteString("[redacted]")
		} else {
			b.WriteString(rest[:end])
		}
		rest = rest[end:]
	}
}

// logAttempt writes a failed attempt's whole error to the log: the client reads only a cause
// (errmap hides the upstream's address from it), and the operator needs the rest. A client that
// went away is no fault of the target's, so only the debug log has it. id, the request's, ties
// the line to the request's own.
func (s *Server) logAttempt(ctx context.Context, route string, t *core.Target, a *attemptResult, id string) {
	level := slog.LevelWarn
	if a.dec.Class == core.ClassClientGone {
		level = slog.LevelDebug
	}
	// Never the upstream's words, which may repeat the prompt (errmap.LogText).
	msg := errmap.LogText(a.err)
	if t.APIKey != "" {
		msg = redactKey(msg, string(t.APIKey))
	}
	s.log.Log(ctx, level, "attempt failed", "route", route, "target", t.Name,
		"class", a.dec.Class.String(), "status", a.dec.Status, "error", msg, "request_id", id)
}

func remove(ts []*core.Target, t *core.Target) []*core.Target {
	for i, c := range ts {
		if c == t {
			return append(ts[:i], ts[i+1:]...)
		}
	}
	return ts
}

// inflight is an answer's hold on its target: its in-flight count and, for a managed target, the
// process (lifecycle's release). A struct rather than a func, which would be an allocation per
// attempt.
type inflight struct {
	stats   *core.Stats
	release func()
}

// end lets go of what f holds; the zero inflight holds nothing.
func (f inflight) end() {
	if f.stats != nil {
		f.stats.End()
	}
	if f.release != nil {
		f.release()
	}
}

// attemptResult is one target's answer after its same-target retries.
type attemptResult struct {
	resp  *upstream.Response
	first []byte
	lead  []byte // the chunks held before first (firstEvent), as SSE events
	end   inflight
	dec   errmap.Decision
	err   error
	// warm: a managed target passed by cold, whose process run starts once the request moves on.
	warm bool
	// held: health found the target not available when the attempt claimed it (see
	// health.Tracker.Start); nothing was sent.
	held bool
	// forbidden: a reload put the target out of the request's reach (Server.reloadForbids)
	// while the request waited for its process to start; nothing was sent.
	forbidden bool
}

// attempt asks one target, retrying it with backoff for retryable failures. Every retry happens
// before the first byte reaches the client. With claim, the first try is held (nothing sent) when
// health no longer has t available; retries are never held. The outcome, the last try's, is
// written in *a, the caller's: an attemptResult returned by value was a copy of it in each of
// the frames from run down to the wait for the answer (once, attempt, attemptOn), on every
// request's stack.
func (s *Server) attempt(ctx context.Context, rs *routeState, st *reqState, t *core.Target, req *core.Request, claim bool, id string, a *attemptResult) {
	var bo *backoff.ExponentialBackOff
	for try := 0; ; try++ {
		if try > 0 && s.reloadForbids(req, rs.Name, st.movedFrom, st.key, t) {
			return // a reload put t out of this request's reach since the last try: a is that try's
		}
		s.once(ctx, t, req, st, claim && try == 0, id, a)
		if a.err == nil || a.held {
			return
		}
		if !a.dec.Retry || try >= t.MaxRetries || ctx.Err() != nil {
			return
		}
		if bo == nil {
			bo = backoff.NewExponentialBackOff(
				backoff.WithInitialInterval(s.retry[0]),
				backoff.WithMaxInterval(s.retry[1]),
				backoff.WithMaxElapsedTime(0),
				backoff.WithClockProvider(s.clock))
		}
		wait := bo.NextBackOff()
		if a.dec.RetryAfter > wait {
			wait = a.dec.RetryAfter
		}
		if wait > s.retry[1] {
			return // waiting longer than the retry cap: let the chain move on instead
		}
		if err := s.sleep(ctx, wait); err != nil {
			a.dec = errmap.ClassifyFor(ctx, err)
			a.err = err
			return
		}
	}
}

// once is a single attempt, its outcome written over *a. A stream's first event is read here, so that a stream that fails
// before producing anything can still fall through; so are the chunks with nothing of an answer
// that come before it (firstEvent), kept in st.lead's array. With claim, an attempt health does
// not have t available for is held instead: eligibility was planned earlier, and since then
// another request may have taken the probe after t's cooldown. st.bridge, when the answer is to be
// translated for the Responses API, reads a whole answer or each event read here too: one it
// cannot read is an answer the gateway could not read, which falls through like any other
// (TestInvResponsesUnreadableAnswerFallsThrough).
func (s *Server) once(ctx context.Context, t *core.Target, req *core.Request, st *reqState, claim bool, id string, a *attemptResult) {
	*a = attemptResult{}
	bridge := st.bridge
	ok, probe := s.health.Begin(t)
	if !ok && claim {
		a.held = true
		return
	}
	t.Stats.Begin()
	end := inflight{stats: t.Stats}
	// An adapter that panics (the recoverer answers 500) still gives back what the attempt took:
	// its in-flight count, which least-busy would otherwise read as busy for good, and the probe
	// it may be, which would otherwise leave the target probing for good, passed by while any
	// other target is left (TestPanickingAttemptGivesBack). Not recovered: the recoverer logs the
	// panic with its stack.
	asked := false
	defer func() {
		if !asked {
			end.end()
			if probe {
				s.health.Abandon(t)
			}
		}
	}()
	began := s.clock.Now()
	var (
		resp *upstream.Response
		err  error
	)
	if s.upID != nil {
		resp, err = s.upID.ChatID(ctx, t, req, id)
	} else {
		resp, err = s.up.Chat(ctx, t, req)
	}
	if err == nil && resp.Stream != nil {
		a.first, a.lead, err = firstEvent(t, resp.Stream, bridge, st.lead[:0])
		st.lead = a.lead[:0] // the array, grown or not, for the next attempt's
		if err != nil {
			_ = resp.Stream.Close()
		}
	} else if err == nil && bridge != nil {
		if err = bridge.readable(t, resp.Body, true); err != nil {
			resp.Release()
		}
	}
	asked = true
	if err != nil {
		end.end()
		if ctx.Err() != nil {
			err = ctx.Err() // the client left: whatever the upstream said is moot
		}
		a.dec = errmap.ClassifyFor(ctx, err)
		a.err = err
		bench := a.dec.RetryAfter
		if a.dec.Quota {
			bench = health.Longest // an account out of credit: no use asking again soon
		}
		s.health.Report(t, a.dec.Class, bench)
		if probe && !health.EndsProbe(a.dec.Class) {
			// An outcome that says nothing of t ends only the probe's own attempt's claim on it;
			// another attempt's would leave this one in flight (TestProbeOutlivesOtherAttemptsNonEvidence).
			s.health.Abandon(t)
		}
		if a.dec.Class == core.ClassLoading && a.dec.RetryAfter <= 0 {
			// Loading without a Retry-After (SAIF's or llama-server's bare 503): the client is told
			// the wait health now holds the target back for, as a request after it would be.
			_, until := s.health.Loading(t)
			a.dec.RetryAfter = s.loadingWait(until)
		}
		s.metrics.Attempt(t.Index, a.dec.Class, 0)
		return
	}
	done := s.clock.Now()
	t.Stats.ObserveLatency(done.Sub(began), done)
	s.metrics.Attempt(t.Index, core.ClassNone, done.Sub(began))
	s.health.Report(t, core.ClassNone, 0)
	a.resp, a.end = resp, end
}

// How much of a stream's start firstEvent holds back before its point of no return: chunks with
// nothing of an answer in them (upstream.Contentless), at most maxHeldChunks of them and
// maxHeldBytes of their events. vLLM, SGLang and llama-server send one, the role, before the
// first token; a stream of more commits on the one past the bound, as every stream committed
// on its first event before, so that nothing is held without limit.
const (
	maxHeldChunks = 4
	maxHeldBytes  = 16 << 10
)

// firstEvent reads a stream's first event with something in it (its first event, unless that is
// upstream.Contentless), before anything goes to the client: a failure until then, of the first
// event or of any after the held ones, is a stream that failed before anything was sent, which
// falls through. The held chunks are appended to lead as the SSE events the relay writes before
// first, in order and unchanged, and returned. Each wait for an event is the target's
// idle_timeout, the first's as the held ones' (TestHeldLeadFallsThrough). bridge, when not nil,
// must be able to read every event (Server.once).
func firstEvent(t *core.Target, st upstream.Stream, bridge *responsesWriter, lead []byte) (first, _ []byte, err error) {
	for n := 0; ; n++ {
		first, err = st.Next()
		switch {
		case errors.Is(err, io.EOF):
			// An end before any event ([DONE] at once) is an answer with no choices: relayed, a
			// client's choices[0] is out of range; after chunks with nothing in them, one with no
			// answer. Nothing has gone to the client yet, so it is a stream that broke before
			// anything was sent, and the chain moves on (TestReviewFallThroughBeforeFirstEvent).
			msg := "upstream ended the stream before its first event"
			if n > 0 {
				msg = "upstream ended the stream before any of its answer"
			}
			err = &core.StreamError{Target: t.Name, Message: msg}
		case err == nil && len(first) > maxEventData:
			err = eventTooLong(t.Name, len(first))
		case err == nil && n > 0 && upstream.AbortsEmpty(first):
			// The engine gave the request up after its role chunk: as an abort that is the first
			// event (upstream.AbortedError), the stream failed before its first token.
			err = &core.StreamError{Target: t.Name, Message: upstream.AbortedEarlyMessage}
		}
		if err == nil && bridge != nil {
			err = bridge.readable(t, first, false)
		}
		if err != nil || n == maxHeldChunks || len(lead)+len(sseData)+len(first)+len(sseEnd) > maxHeldBytes ||
			!upstream.Contentless(first) {
			return first, lead, err
		}
		lead = append(append(append(lead, sseData...), first...), sseEnd...)
	}
}

// chainSep separates the targets tried in x-hayula-chain and in the request log line.
const chainSep = "→"

// chainHeader renders the paper's form: "saif", or "saif→deepseek-r1 (served by deepseek-r1)".
func chainHeader(chain []string, served string) string {
	if len(chain) == 1 {
		return chain[0] // served by it, or (for the log line) just its name: no copy
	}
	var b strings.Builder
	for i, n := range chain {
		if i > 0 {
			b.WriteString(chainSep)
		}
		b.WriteString(n)
	}
	if served != "" {
		b.WriteString(" (served by ")
		b.WriteString(served)
		b.WriteString(")")
	}
	return b.String()
}
