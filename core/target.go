package core

import (
	"strings"
	"sync/atomic"
	"time"
)

// Privacy says whether a target may see strict traffic.
type Privacy uint8

const (
	// Private targets run on hardware the operator controls; strict requests may reach them.
	Private Privacy = iota
	// Public targets are third-party services; strict requests never reach them.
	Public
)

func (p Privacy) String() string {
	if p == Public {
		return "public"
	}
	return "private"
}

// MayUseProxy reports whether a target of this class may be reached through a proxy the
// environment names (HTTP_PROXY, HTTPS_PROXY): only a public one. A proxy is a third party, and a
// strict route's prompts (and a private target's key) must reach no one but their target; the
// upstream client and the health checker both ask this.
func (p Privacy) MayUseProxy() bool { return p == Public }

// AdapterKind names the wire protocol a target speaks.
type AdapterKind uint8

const (
	// AdapterOpenAI is the OpenAI HTTP API (vLLM, llama-server, LM Studio, OpenRouter…).
	AdapterOpenAI AdapterKind = iota + 1
	// AdapterOllama is Ollama's native /api/chat.
	AdapterOllama
	// AdapterSAIF is the SAIF suite's own completion protocol.
	AdapterSAIF
)

func (k AdapterKind) String() string {
	switch k {
	case AdapterOpenAI:
		return "openai"
	case AdapterOllama:
		return "ollama"
	case AdapterSAIF:
		return "saif"
	}
	return "unknown"
}

// Reasoning says what the gateway does with <think> blocks in a target's output.
type Reasoning uint8

const (
	// ReasoningPassthrough leaves content alone (the zero value).
	ReasoningPassthrough Reasoning = iota
	// ReasoningThinkTags moves <think>…</think> into reasoning_content.
	ReasoningThinkTags
	// ReasoningThinkOpen is for a template that opens the block in the prompt: the output
	// begins inside it, and all up to the first </think> goes into reasoning_content.
	ReasoningThinkOpen
)

// Policy names a selection policy; the selector package builds it once at load.
type Policy uint8

const (
	// PolicyOrdered tries candidates in chain order (the zero value).
	PolicyOrdered Policy = iota
	// PolicyWeighted picks at random, weighted by Target.Weight.
	PolicyWeighted
	// PolicyLeastBusy picks the candidate with the fewest requests in flight.
	PolicyLeastBusy
	// PolicyLatency picks the candidate with the lowest smoothed latency.
	PolicyLatency
)

func (p Policy) String() string {
	switch p {
	case PolicyWeighted:
		return "weighted"
	case PolicyLeastBusy:
		return "least-busy"
	case PolicyLatency:
		return "latency"
	}
	return "ordered"
}

// ParsePolicy turns a config string into a Policy.
func ParsePolicy(s string) (Policy, bool) {
	switch s {
	case "", "ordered":
		return PolicyOrdered, true
	case "weighted":
		return PolicyWeighted, true
	case "least-busy":
		return PolicyLeastBusy, true
	case "latency":
		return PolicyLatency, true
	}
	return 0, false
}

// Secret is a credential read from the environment. It never prints itself.
type Secret string

func (Secret) String() string   { return "[redacted]" }
func (Secret) GoString() string { return "[redacted]" }

// MarshalText keeps secrets out of JSON and logs.
func (Secret) MarshalText() ([]byte, error) { return []byte("[redacted]"), nil }

// Target is one upstream endpoint, compiled from config. It is shared by pointer and never
// mutated after load, except through Stats.
type Target struct {
	// Name is the config key ([targets.NAME]).
	Name string
	// Index is the target's position in the compiled config, for per-target state arrays.
	Index int
	// Adapter is the wire protocol.
	Adapter AdapterKind
	// URL is the base URL without a trailing slash (for openai it includes /v1).
	URL string
	// Model is the model name sent upstream.
	Model string
	// Privacy is private or public.
	Privacy Privacy
	// ContextWindow in tokens; 0 means unknown and never filtered on.
	ContextWindow int
	// WindowCountsMaxTokens: the upstream refuses a request whose prompt plus max_tokens exceeds
	// ContextWindow (OpenAI, vLLM), so such a request is certain not to fit. When false (Ollama,
	// which shifts its context or stops generating instead), only a prompt longer than the window
	// is.
	WindowCountsMaxTokens bool
	// Tools and Vision are declared capabilities; false removes the target for such requests.
	Tools, Vision bool
	// Timeout bounds the wait for the response headers (the first byte); 0 means none.
	Timeout time.Duration
	// IdleTimeout bounds each wait for the next bytes of an answer's body once its head has
	// come (a whole answer's, a stream's before and between events); 0 means none.
	IdleTimeout time.Duration
	// MaxRetries is how many same-target retries a retryable failure gets.
	MaxRetries int
	// APIKey is sent as a Bearer token when non-empty.
	APIKey Secret
	// Weight is used by the weighted policy; at least 1.
	Weight int
	// Reasoning is what to do with <think> blocks.
	Reasoning Reasoning
	// StreamUsage: the openai adapter asks this target for the usage of a chat or completions
	// stream whose client did not (stream_options.include_usage), when the gateway counts it
	// (Request.CountsUsage). Config sets it for every openai target unless stream_usage = false;
	// false (the zero value) never asks.
	StreamUsage bool
	// Specialists are the SAIF specialist names a route hint may name.
	Specialists []string
	// HealthURL is what the active health checker GETs: the adapter's default health path or the
	// config's health_path, joined to URL. For a target with a command it may hold "{port}",
	// resolved against the running process. "" means no active checks.
	HealthURL string
	// HealthElsewhere: HealthURL is not on URL's origin (scheme, host and port), so checks go
	// without APIKey, which is the target's to receive, not the check URL's. false (the zero
	// value) sends the key with every check.
	HealthElsewhere bool
	// HealthInterval is the pause between active checks; 0 means no active checks.
	HealthInterval time.Duration
	// HealthTimeout bounds one active check; a check that takes longer has failed.
	HealthTimeout time.Duration
	// DegradedAfter marks the target degraded when a check answers slower than this; 0 means
	// never.
	DegradedAfter time.Duration
	// Stats are live counters for selection; never nil after load. A reload gives a target
	// whose name and URL it left alone Stats carried from its predecessor's (server.New, before
	// the new configuration serves: Stats.Carry).
	Stats *Stats
}

// Stats are a target's live counters. They are the only mutable part of a Target. The zero
// value is ready to use.
type Stats struct {
	own Load
	// load is the Load counted in: own, or, for a target a reload carried over (Carry), the one
	// its predecessor counted in; nil means own.
	load     *Load
	degraded atomic.Bool
}

// Load is what a target's Stats count of its upstream's work: the attempts in flight and their
// smoothed latency. A reload that leaves a target's upstream alone carries it over, so that the
// attempts still under way on the replaced configuration count in the new one (Stats.Carry).
type Load struct {
	inFlight atomic.Int64
	latency  atomic.Int64 // smoothed latency in ns; 0 = never observed
	observed atomic.Int64 // Unix ns of the last latency sample
}

func (s *Stats) l() *Load {
	if s.load != nil {
		return s.load
	}
	return &s.own
}

// Carry is new Stats for the same upstream in a configuration that replaces s's: they count in
// s's Load, and their degraded mark, which is health-check state, starts afresh (false).
func (s *Stats) Carry() *Stats { return &Stats{load: s.l()} }

// Begin counts a request in flight; End ends it. (A returned func would cost an allocation
// per attempt.)
func (s *Stats) Begin() { s.l().inFlight.Add(1) }

// End ends a request Begin counted.
func (s *Stats) End() { s.l().inFlight.Add(-1) }

// InFlight is the number of requests now in flight.
func (s *Stats) InFlight() int64 { return s.l().inFlight.Load() }

// LatencyStale is how long a latency estimate counts without a new sample. Older, it is as good
// as none: the latency policy tries the target again (it would otherwise never re-measure a
// target it measured once at its worst, a cold model load, say, and pass it over for good), and
// the next sample replaces the estimate instead of being folded into it.
const LatencyStale = 30 * time.Second

// ObserveLatency folds d, measured at at, into the smoothed latency (EWMA, alpha 1/4); a stale
// estimate (LatencyStale) is replaced by d.
func (s *Stats) ObserveLatency(d time.Duration, at time.Time) {
	l := s.l()
	now := at.UnixNano()
	for {
		old := l.latency.Load()
		next := int64(d)
		if old != 0 && now-l.observed.Load() < int64(LatencyStale) {
			next = old + (int64(d)-old)/4
		}
		if next == 0 {
			next = 1
		}
		if l.latency.CompareAndSwap(old, next) {
			l.observed.Store(now)
			return
		}
	}
}

// Latency is the smoothed latency; 0 when nothing was observed yet.
func (s *Stats) Latency() time.Duration { return time.Duration(s.l().latency.Load()) }

// LatencyAt is the smoothed latency as it counts at now: 0 when nothing was observed, or nothing
// within LatencyStale.
func (s *Stats) LatencyAt(now time.Time) time.Duration {
	l := s.l()
	if now.UnixNano()-l.observed.Load() >= int64(LatencyStale) {
		return 0
	}
	return time.Duration(l.latency.Load())
}

// SetDegraded records whether active health found the target slow. Health sets it; selectors
// read it to prefer other candidates.
func (s *Stats) SetDegraded(d bool) { s.degraded.Store(d) }

// Degraded reports whether the target's last health check answered slower than its DegradedAfter.
func (s *Stats) Degraded() bool { return s.degraded.Load() }

// Specialist is the name, as configured, of t's specialist that hint names (case-insensitively);
// ok is false when t lists none by that name.
func (t *Target) Specialist(hint string) (name string, ok bool) {
	for _, s := range t.Specialists {
		if strings.EqualFold(s, hint) {
			return s, true
		}
	}
	return "", false
}
