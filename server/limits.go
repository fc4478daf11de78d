package server

import (
	"fmt"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/metrics"
)

// keyLimit is one key's caps (rpm, max_concurrent) and what they count. Both counts are
// pointers so that a reload can hand them to the server that replaces this one (newKeyLimits):
// the replaced server's requests still under way hold slots of the same count.
type keyLimit struct {
	rpm  *rate.Limiter // nil: no rpm cap
	max  int64         // 0: no max_concurrent cap
	busy *atomic.Int64 // requests of the key in flight, counted when max > 0
}

// newKeyLimits builds the caps of keys, by config.Key.Index; nil when no key has one, so that a
// gateway without caps looks at nothing more than a nil slice. On a reload prev is the replaced
// server's (its keys prevKeys): a key of the same name goes on with its count of requests in
// flight, so that those still under way on the replaced server hold their slots, and, when its
// rpm is unchanged, with its bucket as spent; a changed rpm starts a full bucket of the new size.
func newKeyLimits(keys []config.Key, prev []keyLimit, prevKeys []config.Key) []keyLimit {
	var out []keyLimit
	for i, k := range keys {
		if k.RPM == 0 && k.MaxConcurrent == 0 {
			continue
		}
		if out == nil {
			out = make([]keyLimit, len(keys))
		}
		var was *keyLimit
		for j := range prevKeys {
			if prevKeys[j].Name == k.Name && j < len(prev) && prev[j].busy != nil {
				was = &prev[j]
				break
			}
		}
		l := &out[i]
		l.max = int64(k.MaxConcurrent)
		if was != nil {
			l.busy = was.busy
		} else {
			l.busy = new(atomic.Int64)
		}
		if k.RPM > 0 {
			if was != nil && was.rpm != nil && was.rpm.Burst() == k.RPM {
				l.rpm = was.rpm
			} else {
				l.rpm = rate.NewLimiter(rate.Limit(float64(k.RPM)/60), k.RPM) // full at its first use
			}
		}
	}
	return out
}

// limit takes one request of key's rpm and, under max_concurrent, one of its slots, which st
// then holds until serveOp releases it. A request over either cap is answered 429 as OpenAI
// answers one over its rate limits, with the Retry-After the bucket predicts (a second for the
// concurrency cap).
func (s *Server) limit(key *config.Key, st *reqState) *apiError {
	if key == nil || key.Index >= len(s.limits) {
		return nil
	}
	l := &s.limits[key.Index]
	if l.max > 0 {
		if !takeSlot(l.busy, l.max) {
			s.metrics.Limited(key.Index, metrics.CapConcurrent)
			return &apiError{Status: http.StatusTooManyRequests, Type: "requests", Code: "rate_limit_exceeded",
				RetryAfter: time.Second,
				Message: fmt.Sprintf("Rate limit reached for key %s on concurrent requests: limit %d. Try again when one of them has ended.",
					key.Name, l.max)}
		}
		st.busy = l.busy
	}
	if l.rpm != nil {
		if d := rpmWait(l.rpm, s.clock.Now()); d > 0 {
			s.unbusy(st)
			s.metrics.Limited(key.Index, metrics.CapRPM)
			return &apiError{Status: http.StatusTooManyRequests, Type: "requests", Code: "rate_limit_exceeded",
				RetryAfter: d,
				Message: fmt.Sprintf("Rate limit reached for key %s on requests per min (RPM): limit %d. Please try again in %.3gs.",
					key.Name, l.rpm.Burst(), math.Ceil(d.Seconds()*1000)/1000)}
		}
	}
	return nil
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
	need := 1 - l.TokensAt(now)
	if need <= 0 {
		return time.Nanosecond // a token came back in between: wait as little as can be said
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
