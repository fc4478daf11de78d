package server

import (
	"fmt"
	"math"
	"math/bits"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/metrics"
)

// keyLimit is one key's caps (rpm, tpm, max_concurrent) and what they count. The counts are
// pointers so that a reload can hand them to the server that replaces this one (newKeyLimits):
// the replaced server's requests still under way hold slots of the same count; they charge their
// answers to the key's tpm bucket of the latest configuration (tpmNow), the same one unless a
// reload changed the key's tpm.
type keyLimit struct {
	rpm *rate.Limiter // nil: no rpm cap
	tpm *tokenBucket  // nil: no tpm cap
	max int64         // 0: no max_concurrent cap
	// busy counts the key's requests in flight, whatever its caps: a reload that gives the key a
	// max_concurrent (or lowers it) finds the requests already under way in it, where counting
	// only under a cap let the key run max_concurrent new requests on top of them
	// (TestReloadAddingMaxConcurrentCountsRequestsUnderWay). A request gives back to the count
	// it took from, whatever the caps are when it ends, so that none is given back twice or
	// never (TestReloadRemovingAndReaddingMaxConcurrent).
	busy *atomic.Int64
}

// keySlots are the in-flight counts of keys a reload removed, by sha256, carried from one
// configuration to the next while requests of the key may still be under way, so that a later
// reload that brings the key back counts them (TestReloadRemovingAndReaddingKeyCountsRequestsUnderWay).
type keySlots map[[32]byte]*atomic.Int64

// newKeyLimits builds the caps and in-flight counts of keys, by config.Key.Index, and the counts
// of the keys the previous configuration had and keys no longer has (gone); nil when there are
// no keys, so that an open gateway looks at nothing more than a nil slice. On a reload prev is the
// replaced server's (its keys prevKeys, the counts it carried prevGone): a key of the same sha256,
// whatever its name, goes on with its count of requests in flight, so that those still under way
// on the replaced server hold their slots, and, when its rpm (tpm) is unchanged, with its bucket
// as spent; a changed rpm (tpm) starts a full bucket of the new size. The caps are the
// credential's, not the name's: matched by name, a key rotated under the same name (the old one
// leaked) inherited the leaked key's slots and debt, and two keys whose names a reload swapped
// each other's buckets (TestKeyCapsFollowTheKeyNotItsName).
//
// A removed key's count is carried in gone through the reload that removes it whatever it reads
// (the replaced server admits requests until Live.Replace, after this), and through later ones
// while it is above zero: once the removal is applied, a request of the key counts on a server
// that had it only if it reached that server before the swap and took its slot after
// authenticating, a moment later. Only one whose authentication outlasted the whole next reload
// would be missed, and only by a reload that brings the key back.
func newKeyLimits(keys []config.Key, prev []keyLimit, prevKeys []config.Key, prevGone keySlots) (out []keyLimit, gone keySlots) {
	if len(keys) > 0 {
		out = make([]keyLimit, len(keys))
	}
	kept := make(map[[32]byte]bool, len(keys))
	for i, k := range keys {
		kept[k.SHA256] = true
		var was *keyLimit
		for j := range prevKeys {
			if prevKeys[j].SHA256 == k.SHA256 && j < len(prev) && prev[j].busy != nil {
				was = &prev[j]
				break
			}
		}
		l := &out[i]
		l.max = int64(k.MaxConcurrent)
		switch {
		case was != nil:
			l.busy = was.busy
		case prevGone[k.SHA256] != nil:
			l.busy = prevGone[k.SHA256]
		default:
			l.busy = new(atomic.Int64)
		}
		if k.RPM > 0 {
			if was != nil && was.rpm != nil && was.rpm.Burst() == k.RPM {
				l.rpm = was.rpm
			} else {
				l.rpm = rate.NewLimiter(rate.Limit(float64(k.RPM)/60), k.RPM) // full at its first use
			}
		}
		if k.TPM > 0 {
			if was != nil && was.tpm != nil && was.tpm.tpm == k.TPM {
				l.tpm = was.tpm
			} else {
				l.tpm = newTokenBucket(k.TPM)
			}
		}
	}
	carry := func(sha [32]byte, busy *atomic.Int64) {
		if gone == nil {
			gone = keySlots{}
		}
		gone[sha] = busy
	}
	for sha, busy := range prevGone {
		if !kept[sha] && busy.Load() > 0 {
			carry(sha, busy)
		}
	}
	for j := range prevKeys {
		if sha := prevKeys[j].SHA256; !kept[sha] && j < len(prev) && prev[j].busy != nil {
			carry(sha, prev[j].busy)
		}
	}
	return out, gone
}

// limit takes one request of key's rpm and one of its slots (under max_concurrent, refused when
// none is free; without, counted all the same: keyLimit.busy), which st then holds until serveOp
// releases it, and admits the request under tpm while that bucket is
// not in debt (st then holds the bucket, to charge the answer's tokens to: chargeTPM). A request
// over any cap is answered 429 as OpenAI answers one over its rate limits, with the Retry-After
// the bucket predicts (a second for the concurrency cap). tpm is asked first, since asking it
// takes nothing: a request tpm refuses has spent no request of its rpm, and held no slot even
// for a moment, which would have had a request of the key that came in meanwhile refused for
// the concurrency cap while the slot was free (TestTPMRefusalHoldsNoSlot). rpm is looked at
// before the slot is taken too, taking nothing, and taken from after, so that a request the
// concurrency cap refuses spends none of it: one refused for an empty bucket holds no slot
// either (TestRPMRefusalHoldsNoSlot), unless another request took the bucket's last between the
// look and the take. A key without max_concurrent has no slot to hold and skips the look.
func (s *Server) limit(key *config.Key, st *reqState) *apiError {
	if key == nil || key.Index >= len(s.limits) {
		return nil
	}
	l := &s.limits[key.Index]
	now := s.clock.Now()
	if l.tpm != nil {
		if d, used := l.tpm.admit(now); d > 0 {
			s.metrics.Limited(key.Index, metrics.CapTPM)
			return &apiError{Status: http.StatusTooManyRequests, Type: "tokens", Code: "rate_limit_exceeded",
				RetryAfter: d,
				Message: fmt.Sprintf("Rate limit reached for key %s on tokens per min (TPM): Limit %d, Used %d. Please try again in %s.",
					key.Name, l.tpm.tpm, used, openAIWait(d))}
		}
	}
	if l.rpm != nil && l.max > 0 {
		if d := rpmEmpty(l.rpm, now); d > 0 {
			return s.rpmRefusal(key, l, d)
		}
	}
	if l.max > 0 {
		if !takeSlot(l.busy, l.max) {
			s.metrics.Limited(key.Index, metrics.CapConcurrent)
			return &apiError{Status: http.StatusTooManyRequests, Type: "requests", Code: "rate_limit_exceeded",
				RetryAfter: time.Second,
				Message: fmt.Sprintf("Rate limit reached for key %s on concurrent requests: Limit %d. Try again when one of them has ended.",
					key.Name, l.max)}
		}
	} else {
		l.busy.Add(1) // counted all the same, for a reload that gives the key a cap
	}
	st.busy = l.busy
	if l.rpm != nil {
		if d := rpmWait(l.rpm, now); d > 0 {
			s.unbusy(st)
			return s.rpmRefusal(key, l, d)
		}
	}
	st.tpm = l.tpm
	return nil
}

// rpmRefusal counts and says the refusal of a request of key by its rpm, told to wait d.
func (s *Server) rpmRefusal(key *config.Key, l *keyLimit, d time.Duration) *apiError {
	s.metrics.Limited(key.Index, metrics.CapRPM)
	return &apiError{Status: http.StatusTooManyRequests, Type: "requests", Code: "rate_limit_exceeded",
		RetryAfter: d,
		Message: fmt.Sprintf("Rate limit reached for key %s on requests per min (RPM): Limit %d, Used %d. Please try again in %s.",
			key.Name, l.rpm.Burst(), l.rpm.Burst(), openAIWait(d))}
}

// openAIWait says d as OpenAI's rate-limit messages say a wait ("644ms", "9.816s", "6m54.72s",
// "1h23m45.6s"), which clients' retry helpers parse: Go's duration form, rounded up to a
// millisecond. A tpm bucket's wait can be days long, which %g wrote as 1.2e+06s
// (TestKeyTPMRefusalSaysWaitAsOpenAI).
func openAIWait(d time.Duration) string {
	if r := d % time.Millisecond; r != 0 && d <= math.MaxInt64-time.Millisecond {
		d += time.Millisecond - r
	}
	return d.String()
}

// rpmWait takes one request from the bucket at now, or says how long until it holds one. A
// refusal takes nothing: reserving and then cancelling, as this did first, let requests refused
// at the same moment each see the others' reservations, and a client was told to wait two or
// three intervals when one would do (TestRPMRefusalsWaitOneIntervalAtMost).
func rpmWait(l *rate.Limiter, now time.Time) time.Duration {
	if l.AllowN(now, 1) {
		return 0
	}
	// Another request may take a token between the two calls; what is left then is still at
	// least zero, so the wait is never over one interval.
	if d := rpmEmpty(l, now); d > 0 {
		return d
	}
	return time.Nanosecond // a token came back in between: wait as little as can be said
}

// rpmEmpty is how long until the bucket holds a request at now, taking nothing: 0 when it holds
// one already.
func rpmEmpty(l *rate.Limiter, now time.Time) time.Duration {
	need := 1 - l.TokensAt(now)
	if need <= 0 {
		return 0
	}
	return time.Duration(need / float64(l.Limit()) * float64(time.Second))
}

// takeSlot counts one more request in busy unless max are in flight. It never counts one over
// max, even for a moment: adding first and taking back a refusal, as this did first, let a
// request that came in meanwhile see max+1 and be refused while a slot was free
// (TestKeySlotsNeverCountedOverMax).
func takeSlot(busy *atomic.Int64, max int64) bool {
	for {
		n := busy.Load()
		if n >= max {
			return false
		}
		if busy.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// unbusy gives back the concurrency slot st holds, if any.
func (s *Server) unbusy(st *reqState) {
	if st.busy != nil {
		st.busy.Add(-1)
		st.busy = nil
	}
}

// chargeTPM charges the tpm bucket st holds, if any, with the tokens of the answer to req, once
// (st lets go of the bucket): prompt plus completion when the answer reported usage (ok), and
// otherwise the lower bound of the prompt that the context filter computes (nothing for a prompt
// it does not count: completions, embeddings) plus completion, which the caller then gives as a
// lower bound of the completion's tokens: the bound of the answer's text (answerText), a
// stream's that of the text it relayed (chargeStream). It is called before the answer's end goes
// out, so that a client that sends its next request once it has the answer finds the debt.
func (s *Server) chargeTPM(st *reqState, req *core.Request, prompt, completion uint64, ok bool) {
	b := st.tpm
	if b == nil {
		return
	}
	st.tpm = nil
	if s.successor.Load() != nil {
		b = s.tpmNow(st.key, b)
	}
	n, carry := bits.Add64(prompt, completion, 0)
	if carry != 0 {
		n = math.MaxUint64
	}
	if !ok {
		low := req.PromptTokensMin // computed when the route may overflow a window
		if low == 0 {
			low = filter.PromptTokensMin(req.Messages)
		}
		n, carry = bits.Add64(uint64(max(low, 0)), completion, 0)
		if carry != 0 {
			n = math.MaxUint64
		}
	}
	b.charge(s.clock.Now(), n)
}

// tpmNow is the bucket to charge an answer of key's to when a reload has replaced s since the
// request was admitted with b, s's bucket for key: the bucket of the key of the same sha256 in
// the latest configuration, which is b when the reloads left its tpm alone and a new one when
// they changed it. Charged to b, the answer of a key whose tpm a reload changed went uncounted
// (TestKeyTPMAnswerUnderWayAcrossReload). b when the latest configuration has no such key (it
// was removed, or rotated: a new sha256 under its name, TestKeyCapsFollowTheKeyNotItsName) or
// gives it no tpm: nothing reads b then, and nothing is held back by the answer.
func (s *Server) tpmNow(key *config.Key, b *tokenBucket) *tokenBucket {
	last := s.successor.Load()
	if last == nil || key == nil {
		return b
	}
	for n := last.next.Load(); n != nil; n = n.next.Load() {
		last = n
	}
	if tb := last.tpm[key.SHA256]; tb != nil {
		return tb
	}
	return b
}

// tokenBucket is a key's tpm cap: a bucket that holds tpm tokens and refills tpm a minute, on
// the server's clock. A request is admitted while the bucket holds a token (its cost is known
// only from its answer, so none is taken then); its answer's tokens are charged after, which
// can put the bucket in debt, and requests are refused until the refill has paid the debt and
// brought a token back. Requests admitted together overshoot by what they use, as LiteLLM's do.
//
// Tokens are counted whole, and the refill toward the next one is carried exactly (part), so
// that the refill over any stretch of time is the same however the charges and admissions
// during it cut it up: nothing is lost to rounding, or to concurrent requests, whose updates a
// mutex orders (TestTPMChargesUnderConcurrency).
type tokenBucket struct {
	tpm int // the bucket's size and its refill a minute

	mu    sync.Mutex
	level int64     // whole tokens at `at`; negative: the debt
	part  uint64    // the refill toward the next whole token, in 1/minuteNs of a token
	at    time.Time // the time level and part count to; zero before the first use
}

const (
	minuteNs = uint64(time.Minute)
	// maxTPM bounds the size the bucket counts with, so that its products fit 128 bits; a cap
	// above it (70 million tokens a second) is as good as none.
	maxTPM = 1 << 32
	// maxDebt bounds the debt, so that an upstream reporting absurd usage cannot overflow it.
	maxDebt = 1 << 62
)

func newTokenBucket(tpm int) *tokenBucket {
	return &tokenBucket{tpm: tpm}
}

// size is the bucket's size as counted: tpm, at most maxTPM.
func (b *tokenBucket) size() int64 { return int64(min(b.tpm, maxTPM)) }

// refill brings the bucket to now; b.mu is held. A bucket is full at its first use. A time
// before the bucket's is none: concurrent requests read the clock in any order, and the
// bucket's time only goes forward.
func (b *tokenBucket) refill(now time.Time) {
	size := b.size()
	if b.at.IsZero() {
		b.level, b.part, b.at = size, 0, now
		return
	}
	el := now.Sub(b.at)
	if el <= 0 {
		return
	}
	b.at = now
	if b.level >= size {
		return
	}
	// el·size + part < 2⁶³·2³² + 2³⁶: the high word is below minuteNs, as Div64 needs.
	hi, lo := bits.Mul64(uint64(el), uint64(size))
	lo, carry := bits.Add64(lo, b.part, 0)
	add, part := bits.Div64(hi+carry, lo, minuteNs)
	if add >= uint64(size-b.level) {
		b.level, b.part = size, 0
		return
	}
	b.level += int64(add)
	b.part = part
}

// admit reports how long until the bucket holds a token at now: 0 when it does, and the
// request is admitted, taking nothing. used is what the bucket has spent (its size less what it
// holds), for the refusal's message.
func (b *tokenBucket) admit(now time.Time) (wait time.Duration, used int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.level > 0 {
		return 0, 0
	}
	size := uint64(b.size())
	// (1 - level) tokens less the part already refilled, at size tokens a minute, rounded up to
	// a nanosecond: need·minuteNs < 2⁶³·2³⁶.
	hi, lo := bits.Mul64(uint64(1-b.level), minuteNs)
	lo, borrow := bits.Sub64(lo, b.part, 0)
	hi -= borrow
	lo, carry := bits.Add64(lo, size-1, 0)
	hi += carry
	used = b.size() - b.level
	if hi >= size {
		return math.MaxInt64, used
	}
	ns, _ := bits.Div64(hi, lo, size)
	// Counted from the bucket's time, which may be after now (refill): the refill starts there,
	// so a request that read the clock before it waits that much more (TestTPMWaitFromNow).
	// Both terms are below 2⁶³ when added.
	if ahead := b.at.Sub(now); ahead > 0 && ns <= math.MaxInt64 {
		ns += uint64(ahead)
	}
	if ns > math.MaxInt64 {
		return math.MaxInt64, used
	}
	return time.Duration(ns), used
}

// charge takes n tokens, an answer's, from the bucket at now, into debt if need be.
func (b *tokenBucket) charge(now time.Time, n uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if n > uint64(b.level+maxDebt) {
		b.level = -maxDebt
		return
	}
	b.level -= int64(n)
}

// levelAt is the whole tokens the bucket holds at now (negative: its debt).
func (b *tokenBucket) levelAt(now time.Time) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	return b.level
}
