package filter

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hayula/gateway/core"
)

var (
	_ Filter    = Privacy{}
	_ Filter    = Vision{}
	_ Filter    = Tools{}
	_ Filter    = Context{}
	_ Filter    = Cooldown{}
	_ Recoverer = Cooldown{}
	_ Filter    = Loading{}
	_ Filter    = Specialist{}
)

// Privacy keeps strict traffic off public targets. It must be a fail-closed stage: a strict
// request that no private target can serve gets no answer rather than a leak.
type Privacy struct{}

// Name is "privacy".
func (Privacy) Name() string { return "privacy" }

// Keep drops a public target for a strict request.
func (Privacy) Keep(req *core.Request, t *core.Target) (bool, string) {
	if req.Strict && t.Privacy == core.Public {
		return false, "strict request: public target"
	}
	return true, ""
}

func (Privacy) passes(req *core.Request) bool { return !req.Strict }

// Vision keeps requests with images off targets that cannot see them.
type Vision struct{}

// Name is "vision".
func (Vision) Name() string { return "vision" }

// Keep drops a target without vision for a request with images.
func (Vision) Keep(req *core.Request, t *core.Target) (bool, string) {
	if req.Images && !t.Vision {
		return false, "request has images: target has no vision"
	}
	return true, ""
}

func (Vision) passes(req *core.Request) bool { return !req.Images }

// Tools keeps requests that declare tools off targets that cannot call them.
type Tools struct{}

// Name is "tools".
func (Tools) Name() string { return "tools" }

// Keep drops a target without tools for a request that declares tools.
func (Tools) Keep(req *core.Request, t *core.Target) (bool, string) {
	if req.Tools && !t.Tools {
		return false, "request declares tools: target has no tools"
	}
	return true, ""
}

func (Tools) passes(req *core.Request) bool { return !req.Tools }

// Specialist keeps a request with a route hint (x-route-hint) off a SAIF target whose
// specialists do not include it: sent there, the hint was a 400 that ended the chain, though
// another SAIF target of the route lists it. Other adapters do not read the hint and are kept.
// It must be a fail-closed stage. A hint that no SAIF target of the route lists is the server's
// 400 unknown_specialist, decided before the filters.
type Specialist struct{}

// Name is "specialist".
func (Specialist) Name() string { return "specialist" }

// Keep drops a SAIF target that lists no specialist named req.RouteHint.
func (Specialist) Keep(req *core.Request, t *core.Target) (bool, string) {
	if req.RouteHint == "" || t.Adapter != core.AdapterSAIF {
		return true, ""
	}
	if _, ok := t.Specialist(req.RouteHint); ok {
		return true, ""
	}
	return false, "x-route-hint names none of its specialists (" + strings.Join(t.Specialists, ", ") + ")"
}

// Context drops a target only when the request certainly does not fit its context window:
// req.PromptTokensMin (a lower bound, see PromptTokensMin) exceeds t.ContextWindow, or, for a
// target whose upstream refuses a prompt that leaves too little room for the answer
// (t.WindowCountsMaxTokens), the prompt plus req.MaxTokens does. A target whose window is unknown
// (0) is kept. Anything less certain is left to the upstream, whose overflow answer falls through
// to the next target.
type Context struct{}

// Name is "context".
func (Context) Name() string { return "context" }

// Keep drops a target whose known context window is certainly too small.
func (Context) Keep(req *core.Request, t *core.Target) (bool, string) {
	need := req.PromptTokensMin
	if t.WindowCountsMaxTokens {
		// Saturated: a max_tokens near the largest int wrapped the sum below the window, and the
		// target was kept (TestContextHugeMaxTokens).
		if req.MaxTokens > math.MaxInt-need {
			need = math.MaxInt
		} else {
			need += req.MaxTokens
		}
	}
	if t.ContextWindow > 0 && need > t.ContextWindow {
		// Built in one buffer: drops are common on long prompts, and Run is on every request.
		b := make([]byte, 0, 96)
		b = append(b, "needs at least "...)
		b = strconv.AppendInt(b, int64(need), 10)
		b = append(b, " tokens (prompt >= "...)
		b = strconv.AppendInt(b, int64(req.PromptTokensMin), 10)
		if t.WindowCountsMaxTokens {
			b = append(b, ", max_tokens "...)
			b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
		}
		b = append(b, ") > context window "...)
		b = strconv.AppendInt(b, int64(t.ContextWindow), 10)
		return false, string(b)
	}
	return true, ""
}

// Cooldown drops targets that passive health has benched. It belongs in a fail-open stage: when
// every target left is benched, trying one beats refusing the request. A nil Avail keeps every
// target.
type Cooldown struct {
	Avail Availability
}

// Name is "cooldown".
func (Cooldown) Name() string { return "cooldown" }

// Keep drops a target that is not available now.
func (c Cooldown) Keep(_ *core.Request, t *core.Target) (bool, string) {
	if c.Avail == nil {
		return true, ""
	}
	ok, until := c.Avail.Available(t)
	if ok {
		return true, ""
	}
	if r, isR := c.Avail.(Reasoner); isR {
		if why := r.Why(t); why != "" {
			return false, why
		}
	}
	if until.IsZero() {
		return false, "cooling down: probe in flight"
	}
	b := make([]byte, 0, 48)
	b = append(b, "cooling down until "...)
	b = until.UTC().AppendFormat(b, time.RFC3339)
	return false, string(b)
}

// RecoversAt is the end of t's cooldown; zero when t is available or its probe is in flight.
func (c Cooldown) RecoversAt(t *core.Target) time.Time {
	if c.Avail == nil {
		return time.Time{}
	}
	_, until := c.Avail.Available(t)
	return until
}

// Loading drops targets that said they are loading a model (a 503 with Retry-After, or
// "status":"loading"). It belongs in a fail-closed stage: trying a target that is certain to answer
// "loading" only delays the answer, so a request that nothing else can serve is refused, and the
// server turns that into 503 with the soonest Retry-After. A nil Loader keeps every target.
type Loading struct {
	Loader Loader
}

// Name is "loading".
func (Loading) Name() string { return "loading" }

// Keep drops a target that is loading now.
func (l Loading) Keep(_ *core.Request, t *core.Target) (bool, string) {
	if l.Loader == nil {
		return true, ""
	}
	loading, until := l.Loader.Loading(t)
	if !loading {
		return true, ""
	}
	b := make([]byte, 0, 48)
	b = append(b, "loading a model until "...)
	b = until.UTC().AppendFormat(b, time.RFC3339)
	return false, string(b)
}

// Standard is the gateway's chain: Privacy, Vision, Tools, Context (fail closed), Loading (fail
// closed, only when avail also implements Loader), then Cooldown (fail open). With a nil avail
// there is no health tracking and both health stages are left out. Build it once at load: each
// call allocates.
func Standard(avail Availability) []Stage {
	stages := []Stage{
		{Filter: Privacy{}},
		{Filter: Vision{}},
		{Filter: Tools{}},
		{Filter: Context{}},
	}
	if l, ok := avail.(Loader); ok {
		stages = append(stages, Stage{Filter: Loading{Loader: l}})
	}
	if avail != nil {
		stages = append(stages, Stage{Filter: Cooldown{Avail: avail}, FailOpen: true})
	}
	return stages
}
