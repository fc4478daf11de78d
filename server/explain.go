package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/hayula/gateway/autoroute"
	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/internal/echo"
	"github.com/hayula/gateway/internal/jsonx"
	selector "github.com/hayula/gateway/select"
)

// explanation is the answer of POST /v1/route/explain.
type explanation struct {
	Route      string          `json:"route"`
	Policy     string          `json:"policy"`
	Strict     bool            `json:"strict"`
	Fallback   bool            `json:"fallback"`
	FallbackOn []string        `json:"fallback_on"`
	Request    explainRequest  `json:"request"`
	Candidates []explainTarget `json:"candidates"`
	Drops      []explainDrop   `json:"drops"`
	FailedOpen []string        `json:"failed_open"`
	Order      []string        `json:"order"`
	Reserve    []string        `json:"reserve,omitempty"`
	Error      *explainError   `json:"error,omitempty"`
	// Auto is the classifier's decision, with every intent's score, for model "auto".
	Auto *autoroute.Explanation `json:"auto,omitempty"`
	// Moved is model "auto"'s move off the route the classifier chose (Auto's route) to Route;
	// absent when the request stays where the classifier put it.
	Moved *explainMove `json:"moved,omitempty"`
}

// explainMove says why model "auto" moved a request (autoMove).
type explainMove struct {
	// From is the route the classifier chose.
	From string `json:"from"`
	// Reason names the filters that left From no target, as x-hayula-move-reason does.
	Reason string `json:"reason"`
	// Drops are From's targets and why none can take the request.
	Drops []explainDrop `json:"drops"`
	// Passed are the routes of the move order before Route that were passed over, and why.
	Passed []explainPassed `json:"passed,omitempty"`
}

type explainPassed struct {
	Route  string `json:"route"`
	Reason string `json:"reason"`
}

type explainRequest struct {
	Stream          bool   `json:"stream"`
	Images          bool   `json:"images"`
	Tools           bool   `json:"tools"`
	PromptTokensMin int    `json:"prompt_tokens_min"`
	MaxTokens       int    `json:"max_tokens"`
	RouteHint       string `json:"route_hint,omitempty"`
}

type explainTarget struct {
	Name          string   `json:"name"`
	Adapter       string   `json:"adapter"`
	Model         string   `json:"model"`
	Class         string   `json:"class"`
	ContextWindow int      `json:"context_window"`
	Guard         []string `json:"guard,omitempty"`
	Health        string   `json:"health"`
	CoolingUntil  string   `json:"cooling_until,omitempty"`
	HealthDetail  string   `json:"health_detail,omitempty"`
	Process       string   `json:"process,omitempty"` // lifecycle state, for a target with a command
	// RetiredProcesses are this target's processes that a reload replaced and that are still up
	// (lifecycle.MemberStatus.Retired): they hold a model's memory, and may hold its slot.
	RetiredProcesses []explainRetired `json:"retired_processes,omitempty"`
	InFlight         int64            `json:"in_flight"`
	LatencyMS        float64          `json:"latency_ms"`
}

// explainRetired is a process a reload replaced that is still up, and why: "ready" while the
// requests in flight that began on it (InFlight) run, "stopping" once none does.
type explainRetired struct {
	State    string `json:"state"`
	InFlight int    `json:"in_flight"`
}

type explainDrop struct {
	Target string `json:"target"`
	Filter string `json:"filter"`
	Reason string `json:"reason"`
}

type explainError struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// opExplain is the op explain admits a body under: a chat body, or the body of a POST
// /v1/responses, which is decoded by the bridge into the chat request the real call would send
// through the filters.
const opExplain = opResponses + 1

// isResponsesBody reports whether an explain body is a Responses body: "input" and no
// "messages". Telling them apart by their shape, rather than by a parameter, lets a client paste
// the body it sends as it is, as it does a chat body.
func isResponsesBody(body []byte) bool {
	return jsonx.Has(body, "input") && !jsonx.Has(body, "messages")
}

// handleExplain runs a chat or Responses body through the same admission, eligibility and
// selection as a real request and reports what it would do, sending nothing upstream.
func (s *Server) handleExplain(w http.ResponseWriter, r *http.Request) {
	// The bridge records in its writer what an answer would echo; explain writes no answer.
	r = r.WithContext(context.WithValue(r.Context(), bridgeKey{}, &responsesWriter{}))
	req, rs, pick, e := s.admit(r, opExplain, nil, false)
	if e != nil {
		writeError(w, e)
		return
	}
	req.PromptTokensMin = filter.PromptTokensMin(req.Messages) // always shown, even where it cannot matter
	p := s.plan(rs, req, nil)
	x := explanation{
		Route:      rs.Name,
		Policy:     rs.Policy.String(),
		Strict:     req.Strict,
		Fallback:   !req.NoFallback,
		FallbackOn: names(rs.FallbackOn.Classes()),
		Request: explainRequest{Stream: req.Stream, Images: req.Images, Tools: req.Tools,
			PromptTokensMin: req.PromptTokensMin, MaxTokens: req.MaxTokens, RouteHint: echo.String(req.RouteHint)},
		Drops:      []explainDrop{},
		FailedOpen: p.res.FailedOpen,
		Order:      []string{},
	}
	if req.Model == config.RouteAuto && s.cfg.Auto != nil {
		sys, user := autoroute.Texts(req.Messages)
		hint := req.RouteHint
		if pick.intent == autoroute.IntentHint && hint == "" {
			// resolve spent a hint that named the route; without it the classifier would
			// explain a decision the request did not take.
			hint = rs.Name
		}
		a := s.cfg.Auto.Explain(sys, user, hint)
		x.Auto = &a
	}
	if pick.from != nil {
		m := &explainMove{From: pick.from.Name, Reason: pick.reason, Drops: []explainDrop{}}
		for _, d := range pick.drops {
			m.Drops = append(m.Drops, explainDrop{Target: d.Target, Filter: d.Filter, Reason: d.Reason})
		}
		for _, c := range pick.passed {
			m.Passed = append(m.Passed, explainPassed{Route: c.Name, Reason: dropFilters(s.routeDrops(c, req, pick.strict))})
		}
		x.Moved = m
	}
	if x.FailedOpen == nil {
		x.FailedOpen = []string{}
	}
	for _, t := range rs.Targets {
		x.Candidates = append(x.Candidates, s.describe(rs, t))
	}
	for _, d := range p.res.Drops {
		x.Drops = append(x.Drops, explainDrop{Target: d.Target, Filter: d.Filter, Reason: d.Reason})
	}
	order := slices.Clone(p.res.Kept)
	if len(p.res.FailedOpen) == 0 {
		// After a fail open Kept is already soonest to recover first, as run tries it.
		order = selector.Order(rs.sel, req, p.res.Kept)
	}
	if rs.guarded {
		order = guardOrder(rs, order, p.res.Kept, len(p.reserve) > 0, p.overflowDrops)
	}
	for _, t := range order {
		x.Order = append(x.Order, t.Name)
	}
	for _, t := range p.reserve {
		x.Reserve = append(x.Reserve, t.Name)
	}
	var ae *apiError
	switch {
	case p.err != nil:
		ae = p.err
	case len(p.res.Kept) == 0 && len(p.reserve) == 0:
		ae = s.noTarget(rs, p.res.Drops)
	case shutByGuards(rs, order, p.overflowDrops) && shutByGuards(rs, p.reserve, p.overflowDrops):
		// run passes every one of them by before anything has failed, and then every target of
		// the reserve (if any) too.
		ae = guardedShut(rs, p.res.Drops, slices.Concat(order, p.reserve))
	}
	if ae != nil {
		x.Error = &explainError{Status: ae.Status, Code: ae.Code, Message: ae.Message}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(hdrRoute, rs.Name)
	s.setHeaders(&pick, w.Header()) // as the request's answer carries them (TestAutoExplainCarriesIntent, TestAutoMoveExplain)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(x)
}

// guardOrder is order (the policy's, or the recovery order after a fail open) as run walks a
// guarded route: the request tries, each time, the first target whose guard lets it in. Before
// anything failed only the unguarded targets (and those an overflow drop opened) are let in, so
// the policy's first among them goes first; after that a guard is open, or shut for good (a
// failure outside its set stays among the failures), so the rest keep the policy's order: a
// guarded target a failure opened is a candidate like the others (TestExplainOrderWithGuardMidChain,
// TestGuardWaitsUnderEveryPolicy). When none is let in before a failure and there is a reserve, run
// appends the reserve to kept, in kept's order, and walks them with no policy: so does explain.
func guardOrder(rs *routeState, order, kept []*core.Target, reserve bool, overflowDrops int) []*core.Target {
	i := slices.IndexFunc(order, func(t *core.Target) bool { return !shutAtStart(rs, t, overflowDrops) })
	switch {
	case i > 0:
		first := order[i]
		copy(order[1:i+1], order[:i])
		order[0] = first
	case i < 0 && reserve:
		order = slices.Clone(kept)
	}
	return order
}

// shutAtStart reports whether t is guarded and its guard does not open before a failure.
func shutAtStart(rs *routeState, t *core.Target, overflowDrops int) bool {
	g := rs.guard[t.Index]
	return g != 0 && !guardOpen(g, nil, overflowDrops)
}

// shutByGuards reports whether every target of order is guarded and none of the guards opens
// before a failure: the request would try nothing.
func shutByGuards(rs *routeState, order []*core.Target, overflowDrops int) bool {
	for _, t := range order {
		if g := rs.guard[t.Index]; g == 0 || guardOpen(g, nil, overflowDrops) {
			return false
		}
	}
	return true
}

func (s *Server) describe(rs *routeState, t *core.Target) explainTarget {
	st := s.health.Snapshot(t)
	d := explainTarget{
		Name: t.Name, Adapter: t.Adapter.String(), Model: t.Model, Class: t.Privacy.String(),
		ContextWindow: t.ContextWindow, Guard: names(rs.guard[t.Index].Classes()), Health: st.Status,
		// The estimate the latency policy reads: 0 for none, or one older than core.LatencyStale,
		// which the policy tries first as unmeasured (TestExplainLatencyAsThePolicyReadsIt).
		InFlight: t.Stats.InFlight(), LatencyMS: float64(t.Stats.LatencyAt(s.clock.Now())) / float64(time.Millisecond),
	}
	if st.Cooling {
		d.CoolingUntil = st.Until.UTC().Format(time.RFC3339)
	}
	s.describeActive(&d, t, st)
	return d
}

func names(cs []core.Class) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// handleModel answers GET /v1/models/{id} for a route the caller's key may use; model ids may
// contain slashes, so the rest of the path is the id.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	key, e := s.authenticate(r)
	if e != nil {
		writeError(w, e)
		return
	}
	id := strings.TrimPrefix(ps.ByName("id"), "/")
	_, known := s.routes[id]
	if id == config.RouteAuto {
		known = s.cfg.Auto != nil
	}
	if !known || (key != nil && !key.Allows(id)) {
		writeError(w, modelNotFound(id))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(modelEntry{ID: id, Object: "model", Created: s.created, OwnedBy: "hayula"})
}

// handleModels lists the routes the caller's key may use, in OpenAI's list shape.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	key, e := s.authenticate(r)
	if e != nil {
		writeError(w, e)
		return
	}
	list := struct {
		Object string       `json:"object"`
		Data   []modelEntry `json:"data"`
	}{Object: "list", Data: []modelEntry{}}
	if s.cfg.Auto != nil && (key == nil || key.Allows(config.RouteAuto)) {
		list.Data = append(list.Data, modelEntry{ID: config.RouteAuto, Object: "model", Created: s.created, OwnedBy: "hayula"})
	}
	for _, rt := range s.cfg.Routes {
		if key != nil && key.Routes != nil && !key.Routes[rt.Name] {
			continue
		}
		list.Data = append(list.Data, modelEntry{ID: rt.Name, Object: "model", Created: s.created, OwnedBy: "hayula"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}
