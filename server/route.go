package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hayula/gateway/autoroute"
	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/internal/echo"
	"github.com/hayula/gateway/internal/jsonx"
	"github.com/hayula/gateway/upstream"
)

// authenticate returns the caller's key; nil with no error when the gateway is open.
func (s *Server) authenticate(r *http.Request) (*config.Key, *apiError) {
	if len(s.cfg.Keys) == 0 {
		return nil, nil
	}
	if len(field(r, "Authorization")) > 1 || len(field(r, "X-Api-Key")) > 1 {
		// Refused, not first-wins: a proxy in front that reads the last line would authenticate
		// one caller while the gateway served another.
		return nil, &apiError{Status: http.StatusUnauthorized, Type: typeAuthentication, Code: "invalid_api_key",
			Message: "Send one API key: the request has more than one Authorization or x-api-key header."}
	}
	token, malformed := bearer(r)
	if malformed {
		// Never the value sent: it may be the key itself, with a typo in its scheme.
		return nil, &apiError{Status: http.StatusUnauthorized, Type: typeAuthentication, Code: "invalid_api_key",
			Message: "Incorrect API key provided: the Authorization header is not 'Bearer KEY' " +
				"(the word Bearer, one space, the key)."}
	}
	if token == "" {
		return nil, &apiError{Status: http.StatusUnauthorized, Type: typeAuthentication, Code: "invalid_api_key",
			Message: "You didn't provide an API key. Send it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'."}
	}
	k, ok := s.cfg.Authenticate(token)
	if !ok {
		return nil, &apiError{Status: http.StatusUnauthorized, Type: typeAuthentication, Code: "invalid_api_key",
			Message: "Incorrect API key provided."}
	}
	return k, nil
}

// resolve finds the request's route and applies the key's allowlist and strictness. For model
// "auto" the classifier picks the route (autoMove may move the request off it); a key allowed
// "auto" may use whatever route the classifier picks.
func (s *Server) resolve(key *config.Key, req *core.Request) (*routeState, autoPick, *apiError) {
	name := req.Model
	if name == config.RouteAuto && s.cfg.Auto != nil {
		if key != nil && !key.Allows(name) {
			return nil, autoPick{}, modelNotFound(name)
		}
		if req.Op == core.OpEmbeddings {
			// No conversation to classify: the default route, a chat model, would embed, and a
			// vector store filled through "auto" could mix the vectors of several models.
			return nil, autoPick{}, &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Code: "model_not_supported",
				Param: "model", Message: "model \"auto\" chooses a chat route by the conversation's text and does not " +
					"embed: name the embeddings route (GET /v1/models lists them)."}
		}
		// RouteMessagesFor rather than Classify: the request path needs no Matched or Reason
		// (explain builds those), and it reads the message texts where they lie instead of
		// building two strings of them (Texts) per request.
		msgs := req.Messages
		if req.Op == core.OpCompletions {
			msgs = promptTurn(req.Prompt)
		}
		route, intent := s.cfg.Auto.RouteMessagesFor(autoPartition(key), msgs, req.RouteHint)
		if strings.EqualFold(req.RouteHint, route) {
			// In any case, as the classifier matched it ("SAIF" went on to SAIF as a specialist).
			if _, named := s.routes[route]; named {
				req.RouteHint = "" // the hint named the route and is spent; it is no specialist
			}
		}
		rs, ok := s.routes[route]
		if !ok {
			// config.Load checks every route auto can choose; this is a wiring bug, not a client's.
			return nil, autoPick{}, &apiError{Status: http.StatusInternalServerError, Type: typeServer, Code: "internal_error",
				Message: fmt.Sprintf("model auto chose route %q, which does not exist", route)}
		}
		pick := autoPick{intent: intent}
		if intent != autoroute.IntentHint {
			// A hint that named a route or a specialist is the client's choice, kept.
			rs = s.autoMove(key, rs, req, &pick)
		}
		s.applyStrict(rs, key, req)
		return rs, pick, nil
	}
	rs, ok := s.routes[name]
	if !ok || (key != nil && !key.Allows(name)) {
		return nil, autoPick{}, modelNotFound(req.Model)
	}
	s.applyStrict(rs, key, req)
	return rs, autoPick{}, nil
}

// autoPick is how model "auto" chose a request's route, for the answer's headers and explain.
type autoPick struct {
	// intent is the classifier's intent; "" when the request named its route.
	intent string
	// from is the route the classifier chose, when autoMove moved the request off it; nil when
	// it was kept.
	from *routeState
	// reason names the filters that left from no target, as x-hayula-move-reason says it, and
	// drops are from's.
	reason string
	drops  []filter.Drop
	// passed are the routes of the move order passed over before the one chosen, and strict the
	// strictness they were judged under: explain asks each why (routeDrops), a request does not.
	passed []*routeState
	strict bool
}

// setHeaders says p in h: the intent, and a move.
func (s *Server) setHeaders(p *autoPick, h http.Header) {
	if p.intent != "" {
		h[hdrIntent] = s.intentValue(p.intent)
	}
	if p.from != nil {
		h[hdrMovedFrom] = p.from.nameValue
		h[hdrMoveReason] = []string{p.reason}
	}
}

// intentValue is []string{intent}, the X-Hayula-Intent header's value: one built with the
// server for each intent the classifier names (intentValues), so that an auto request's header
// is neither canonicalised nor allocated; a new one for an intent it does not list.
func (s *Server) intentValue(intent string) []string {
	for _, v := range s.intentValues {
		if v[0] == intent {
			return v
		}
	}
	return []string{intent}
}

// autoMove is the route an auto request goes to: rs, the route its text was classified to,
// unless no target of rs can take the request for what it is (s.fits: its images, tools,
// length, strictness, endpoint or format, as the filters judge them; never health, which denies
// no service) and a route of s.autoOrder can. Then it is the first such route, other than rs,
// with a target that takes the request under that route's strictness as well as its own, its
// key's and rs's, which it keeps. Every route of the order is one auto may choose, and a key
// allowed "auto" may use whatever route auto chooses (resolve), so its list of routes is not
// asked again; pick records the move. When none can, rs is kept, and the request gets rs's answer for what it asks. The common
// request, which no stage of s.fits can drop a target for, costs a few comparisons.
func (s *Server) autoMove(key *config.Key, rs *routeState, req *core.Request, pick *autoPick) *routeState {
	strict := req.Strict || (key != nil && key.Strict)
	if !s.mayNotFit(rs, req, strict) {
		return rs
	}
	// The judgement that rs cannot serve is the move's reason too: every target of rs was asked
	// until a filter dropped it, which is all that naming the drops takes
	// (TestAutoMoveJudgesEachTargetOnce).
	own := onRoute(rs, req, strict)
	fits, drops := filter.AnyKeptOrDrops(req, rs.Targets, s.fits)
	req.Strict = own
	if fits {
		return rs
	}
	// A strict route says that what its text brings there stays private: moved, the request
	// keeps that strictness, so it goes only to a route with a private target that takes it, and
	// is strict there (TestAutoMoveKeepsTheClassifiedRoutesStrictness).
	strict = strict || rs.Strict
	var passed []*routeState
	for _, c := range s.autoOrder {
		switch {
		case c == rs:
		case s.fitsRoute(c, req, strict):
			pick.from, pick.drops, pick.passed, pick.strict = rs, drops, passed, strict
			pick.reason = dropFilters(pick.drops)
			req.Strict = req.Strict || strict
			return c
		default:
			passed = append(passed, c)
		}
	}
	return rs
}

// mayNotFit reports whether a stage of s.fits could drop a target of rs for req, strict by its
// own option or its key's: without images, tools, strictness, what only some adapters carry or
// a prompt that may overflow, none can.
func (s *Server) mayNotFit(rs *routeState, req *core.Request, strict bool) bool {
	return req.Images || req.Tools || strict || rs.Strict || !s.adaptersTakeAll(req) || rs.mayOverflow(req)
}

// fitsRoute reports whether a target of rs passes s.fits for req, strict by its own option or its
// key's, as it would be on rs (applyStrict). It counts req's prompt tokens when rs's windows need
// them (as admit does for the route chosen).
func (s *Server) fitsRoute(rs *routeState, req *core.Request, strict bool) bool {
	own := onRoute(rs, req, strict)
	ok := filter.AnyKept(req, rs.Targets, s.fits)
	req.Strict = own
	return ok
}

// routeDrops are the drops of s.fits over rs's targets for req, judged as fitsRoute judges them:
// for explain, which says why each route passed over could not serve.
func (s *Server) routeDrops(rs *routeState, req *core.Request, strict bool) []filter.Drop {
	own := onRoute(rs, req, strict)
	drops := filter.Run(req, rs.Targets, s.fits).Drops
	req.Strict = own
	return drops
}

// onRoute makes req what the filters judge on rs: strict by strict (its own option or its key's)
// or rs's, and its prompt tokens counted when rs's windows need them (kept: they depend on the
// messages alone). It returns req's own strictness, for the caller to put back.
func onRoute(rs *routeState, req *core.Request, strict bool) (own bool) {
	own = req.Strict
	req.Strict = strict || rs.Strict
	if req.PromptTokensMin == 0 && rs.mayOverflow(req) {
		req.PromptTokensMin = filter.PromptTokensMin(req.Messages)
	}
	return own
}

// dropFilters names the filters of drops, each once, in stage order, joined by ", ".
func dropFilters(drops []filter.Drop) string {
	var names []string
	for _, d := range drops {
		if !slices.Contains(names, d.Filter) {
			names = append(names, d.Filter)
		}
	}
	return strings.Join(names, ", ")
}

// promptTurn is a completions request's prompt (decoded once, in decodeOther) as the one user
// turn the auto-router classifies: a string, or an array of one string; nil (no text: the
// default route) for a batch or tokens.
func promptTurn(v []byte) []core.Message {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '[' {
		a := jsonx.Array(v, false)
		_, one, ok := a.Next()
		if _, _, more := a.Next(); !ok || more {
			return nil
		}
		v = one
	}
	if len(v) == 0 || v[0] != '"' {
		return nil
	}
	return []core.Message{{Role: "user", Content: v}}
}

// modelNotFound answers a model that does not exist and one the key may not use alike, as OpenAI
// does and as /v1/models/{id} does here: a 403 would tell a key which routes exist. The message
// points at the list, since the name a client reaches for first is often the upstream's own tag
// ("llama3.1:8b") rather than the route's. The name is the client's own, and comes back as
// internal/echo repeats it.
func modelNotFound(model string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: "model_not_found", Param: "model",
		Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it. "+
			"GET /v1/models lists the models you may use.", echo.String(model))}
}

func (s *Server) applyStrict(rs *routeState, key *config.Key, req *core.Request) {
	if rs.Strict || (key != nil && key.Strict) {
		req.Strict = true
	}
}

// endpointFilter drops a target whose adapter does not serve the request's endpoint (Ollama for
// /v1/completions, SAIF for /v1/embeddings): tried, its 404 stopped a request that does not fall
// through on endpoint failures (x-fallback-on: false, or a route's fallback_on), though the route
// had a target that serves it. It runs first and fails closed.
type endpointFilter struct{}

var _ filter.Filter = endpointFilter{}

// Name is "endpoint".
func (endpointFilter) Name() string { return "endpoint" }

// Keep drops t when its adapter does not serve req.Op.
func (endpointFilter) Keep(req *core.Request, t *core.Target) (bool, string) {
	if upstream.Serves(t.Adapter, req.Op) {
		return true, ""
	}
	return false, "the " + t.Adapter.String() + " adapter does not serve /v1" + req.Op.Path()
}

// capStages is how many stages at the head of Server.stages judge an adapter's capabilities
// (endpointFilter, choicesFilter, formatFilter, filter.Specialist); plan skips them for a request
// none of them can drop a target for.
const capStages = 4

// choicesFilter drops a target whose adapter answers one choice (upstream.OneChoice) for a request
// that asks for more (n > 1): the client would get fewer choices than it asked for, without a word.
type choicesFilter struct{}

var _ filter.Filter = choicesFilter{}

// Name is "choices".
func (choicesFilter) Name() string { return "choices" }

// Keep drops t when req asks for more choices than t's adapter answers.
func (choicesFilter) Keep(req *core.Request, t *core.Target) (bool, string) {
	if req.Choices <= 1 || !upstream.OneChoice(t.Adapter) {
		return true, ""
	}
	return false, "request asks for n = " + strconv.Itoa(req.Choices) + " choices: the " + t.Adapter.String() + " adapter answers one"
}

// formatFilter drops a target whose adapter cannot carry a JSON response_format, Ollama's format
// asking for JSON, or logprobs (upstream.CarriesFormat), or a field only the OpenAI protocol has
// (core.Request.OpenAIOnly, upstream.CarriesOpenAIOnly), for a request that asks for one: the
// client would get prose, no logprobs, tokens it had banned, or no audio, without a word. So too for an image by http(s)
// URL (core.Request.RemoteImages), which only the OpenAI adapter passes on for its upstream to
// fetch, the others refusing it.
type formatFilter struct{}

var _ filter.Filter = formatFilter{}

// Name is "format".
func (formatFilter) Name() string { return "format" }

// Keep drops t when req asks for what t's adapter cannot carry.
func (formatFilter) Keep(req *core.Request, t *core.Target) (bool, string) {
	var asks string
	switch {
	case req.OpenAIOnly != "" && !upstream.CarriesOpenAIOnly(t.Adapter):
		asks = openaiOnlyAsk(req.OpenAIOnly)
	case req.RemoteImages && !upstream.FetchesImages(t.Adapter):
		return false, "request has an image_url by http(s) URL, which the " + t.Adapter.String() +
			" adapter cannot fetch: send the image inline as a data: URL (data:image/png;base64,…)"
	case (!req.Structured && !req.NativeFormat && !req.Logprobs) || upstream.CarriesFormat(t.Adapter):
		return true, ""
	case req.Structured:
		asks = "a JSON response_format"
	case req.NativeFormat:
		asks = "JSON by Ollama's format"
	default:
		asks = "logprobs"
	}
	return false, "request asks for " + asks + ": the " + t.Adapter.String() + " adapter's protocol cannot carry it"
}

// openaiOnlyAsk is what a request whose OpenAI-only field is field asks for, as formatFilter
// says it.
func openaiOnlyAsk(field string) string {
	switch field {
	case "echo":
		return "echo (the prompt in the answer)"
	case "prompt":
		return "prompt as a batch or as token ids"
	case "input":
		return "input as token ids"
	case "functions":
		return "the legacy functions (declare them as tools)"
	case "custom":
		return "a custom tool (type custom; only function tools translate)"
	case "max_tokens":
		return "max_tokens 0 (nothing generated)"
	case "input_audio", "file":
		return "a content part of type " + field
	}
	return field
}

// adaptersTakeAll reports whether no adapter-capability stage (endpointFilter, choicesFilter,
// formatFilter) can drop a target for req: a chat request for one choice that asks for nothing
// only some adapters carry, when every target's adapter serves chat.
func (s *Server) adaptersTakeAll(req *core.Request) bool {
	return req.Op == core.OpChat && s.allServeChat && req.Choices <= 1 && !req.Structured && !req.NativeFormat && !req.Logprobs &&
		req.OpenAIOnly == "" && !req.RemoteImages
}

// plan is what eligibility left for one request: the same computation serves a real request and
// /v1/route/explain.
type plan struct {
	route *routeState
	res   filter.Result
	// reserve are the targets dropped only by a fail-open stage, soonest to recover first. They are
	// tried when nothing else was: health never denies service.
	reserve []*core.Target
	// overflowDrops counts targets dropped for context: each is a certain overflow, and counts as
	// one for a guard.
	overflowDrops int
	// err is the answer whatever eligibility left: a route hint that no SAIF target of the route
	// lists (unknownSpecialist); nil otherwise.
	err *apiError
}

// plan runs eligibility with the kept targets in kept's array (see filter.RunInto).
func (s *Server) plan(rs *routeState, req *core.Request, kept []*core.Target) plan {
	stages := s.stages
	if s.adaptersTakeAll(req) && req.RouteHint == "" {
		// The capability stages would keep every target, at a call per target each, on nearly
		// every request: every target's adapter serves chat (New checked), and one choice.
		stages = stages[capStages:]
	}
	p := plan{route: rs, res: filter.RunInto(kept, req, rs.Targets, stages), err: unknownSpecialist(rs, req)}
	for _, d := range p.res.Drops {
		switch {
		case s.failOpen[d.Filter]:
			if t, ok := s.cfg.Target(d.Target); ok {
				p.reserve = append(p.reserve, t)
			}
		case d.Filter == (filter.Context{}).Name():
			p.overflowDrops++
		}
	}
	if len(p.reserve) > 1 {
		sortByRecovery(p.reserve, s.health.Available)
	}
	return p
}

// unknownSpecialist is the 400 for a route hint that names no specialist of any SAIF target of
// rs: no target can make it valid, so it is refused before any is asked, the route's other
// adapters (which do not read the hint) included, as a typo in it would otherwise be served
// without a word (TestHintOnlyTheSecondSAIFTargetLists). nil for no hint, a hint one of them lists
// (filter.Specialist then drops the others), or a request that none of them could take for what
// it is (hintReader): there no target reads the hint (TestHintIgnoredWhereSAIFDoesNotServe). The
// hint is the client's own, and comes back as internal/echo repeats it.
func unknownSpecialist(rs *routeState, req *core.Request) *apiError {
	hint := req.RouteHint
	if hint == "" || !rs.saif {
		return nil
	}
	for _, s := range rs.specialists {
		if strings.EqualFold(s, hint) {
			return nil
		}
	}
	if !slices.ContainsFunc(rs.Targets, func(t *core.Target) bool { return hintReader(req, t) }) {
		return nil
	}
	valid := "none are configured"
	if len(rs.specialists) > 0 {
		valid = "valid: " + strings.Join(rs.specialists, ", ")
	}
	return &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Code: "unknown_specialist", Param: optHint,
		Message: fmt.Sprintf("x-route-hint \"%s\" names no SAIF specialist of route %s (%s)", echo.String(hint), rs.Name, valid)}
}

// hintReader reports whether t is a SAIF target that could serve req but for its hint: none of
// the filters that judge what a request is (its endpoint, its choices, its format, its privacy,
// its images, its tools), as against the target's state (health, load) or the prompt's length,
// drops it. A SAIF target one of them drops would never read the request's hint.
func hintReader(req *core.Request, t *core.Target) bool {
	if t.Adapter != core.AdapterSAIF {
		return false
	}
	for _, f := range [...]filter.Filter{endpointFilter{}, choicesFilter{}, formatFilter{}, filter.Privacy{},
		filter.Vision{}, filter.Tools{}} {
		if ok, _ := f.Keep(req, t); !ok {
			return false
		}
	}
	return true
}

func sortByRecovery(ts []*core.Target, avail func(*core.Target) (bool, time.Time)) {
	until := make([]time.Time, len(ts))
	for i, t := range ts {
		_, until[i] = avail(t)
	}
	// Insertion sort: reserves are a handful of targets, and the sort must be stable.
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && until[j].Before(until[j-1]); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
			until[j], until[j-1] = until[j-1], until[j]
		}
	}
}

// guardOpen reports whether a guarded target may be entered: only after at least one failure,
// and only when every failure so far is in the guard's set.
func guardOpen(g core.ClassSet, failures []core.Class, overflowDrops int) bool {
	if overflowDrops > 0 && !g.Has(core.ClassOverflow) {
		return false
	}
	if len(failures) == 0 && overflowDrops == 0 {
		return false
	}
	for _, c := range failures {
		if !g.Has(c) {
			return false
		}
	}
	return true
}

// noTarget answers a request that eligibility left with nothing to try: a strict request whose
// private targets cannot serve gets 503; a request no target can take for what it asks (tools,
// vision, context) gets 400; anything else 503.
func noTarget(rs *routeState, drops []filter.Drop) *apiError {
	var b strings.Builder
	private, other := false, false
	for i, d := range drops {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.Target)
		b.WriteString(": ")
		b.WriteString(d.Reason)
		switch d.Filter {
		case (filter.Privacy{}).Name():
			private = true
		case (filter.Vision{}).Name(), (filter.Tools{}).Name(), (filter.Context{}).Name(), (endpointFilter{}).Name(),
			(choicesFilter{}).Name(), (formatFilter{}).Name(), (filter.Specialist{}).Name():
		default:
			other = true
		}
	}
	// What the request could have had: a strict request's public targets were never its to use, so
	// when its private ones were set aside only for what it asks (tools, its length), the answer
	// is about that, as for any request (TestStrictRequestUnsupportedByItsPrivateTargets).
	asked := drops
	if private {
		asked = slices.DeleteFunc(slices.Clone(drops), func(d filter.Drop) bool { return d.Filter == (filter.Privacy{}).Name() })
	}
	switch {
	case private && (len(asked) == 0 || other):
		e := &apiError{Status: http.StatusServiceUnavailable, Type: typeUpstream, Code: "no_private_target",
			Message: fmt.Sprintf("no private target could serve this strict request on route %q (%s)", rs.Name, b.String())}
		if len(asked) == 0 {
			// Every target is public: the same answer until the configuration changes, which an
			// SDK's own retries of a 503 would only repeat (TestStrictRequestUnsupportedByItsPrivateTargets).
			e.ShouldRetry = errmap.RetryNo
		}
		return e
	case len(asked) > 0 && allFilter(asked, (endpointFilter{}).Name()):
		// As the adapters answered when they were tried, and as OpenAI answers a model that does
		// not serve the endpoint.
		return &apiError{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: "unsupported_endpoint",
			Message: fmt.Sprintf("no target of route %q serves this endpoint: %s", rs.Name, b.String())}
	case !other && len(asked) > 0:
		code := "unsupported_request"
		// A target that does not serve the endpoint was never a candidate: the window is why the
		// ones that serve it cannot (the all-endpoint case answered above).
		if allFilter(asked, (filter.Context{}).Name(), (endpointFilter{}).Name()) {
			code = "context_length_exceeded"
		}
		return &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Code: code,
			Message: fmt.Sprintf("no target of route %q can serve this request: %s", rs.Name, b.String())}
	}
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeUpstream, Code: "no_target",
		Message: fmt.Sprintf("no target of route %q could serve this request (%s)", rs.Name, b.String())}
}

// allFilter reports whether every drop is by one of the filters named.
func allFilter(drops []filter.Drop, names ...string) bool {
	for _, d := range drops {
		if !slices.Contains(names, d.Filter) {
			return false
		}
	}
	return true
}

// autoPartition is the classifier's partition for key's requests (RouteMessagesFor): its own, so
// that the system prompts the classifier keeps for one key never make another key's requests
// quicker. The hash of its token is the key's identity across reloads; without keys, every
// client shares partition 0.
func autoPartition(key *config.Key) uint64 {
	if key == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(key.SHA256[:8])
}
