package server

import (
	"bytes"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/internal/jsonx"
	"github.com/hayula/gateway/lifecycle"
	"github.com/hayula/gateway/metrics"
	"github.com/hayula/gateway/upstream"
)

// newMetrics builds the counters for cfg's routes and targets, or nil when cfg turned them off;
// those prev (the replaced configuration's, or nil) has too go on from its counts.
func newMetrics(cfg *config.Config, prev *metrics.Set, started time.Time) *metrics.Set {
	if !cfg.Metrics {
		return nil
	}
	routes := make([]string, len(cfg.Routes))
	for i, r := range cfg.Routes {
		routes[i] = r.Name
	}
	targets := make([]string, len(cfg.Targets))
	for _, t := range cfg.Targets {
		targets[t.Index] = t.Name
	}
	set := prev.Next(routes, targets, started)
	if cfg.Auto != nil {
		// A request auto moves goes from a route it classifies to, which is one of its move order,
		// to another route of the order (autoMove): those pairs are all the moves it can make.
		var order []int
		for _, n := range cfg.Auto.MoveOrder() {
			if i := slices.Index(routes, n); i >= 0 {
				order = append(order, i)
			}
		}
		set.WithMoves(order)
	}
	if len(cfg.Keys) > 0 {
		keys := make([]string, len(cfg.Keys))
		for i, k := range cfg.Keys {
			keys[i] = k.Name
		}
		set.WithKeys(keys)
	}
	return set
}

// usageTo says whose tokens an answer's usage counts as: a route's (-1: none) and a key's (-1:
// none).
type usageTo struct{ route, key int }

// countAnswer counts the tokens of a non-streaming answer (answerUsage).
func (s *Server) countAnswer(u usageTo, t *core.Target, resp *upstream.Response) {
	if p, c, ok := answerUsage(resp); ok {
		s.countTokens(u, t, p, c)
	}
}

// answerUsage is the usage of a non-streaming answer: what the adapter that built it knows, or
// else what its body reports (an answer passed through); ok is false when it reported none.
func answerUsage(resp *upstream.Response) (prompt, completion uint64, ok bool) {
	if n := resp.Usage; n != nil {
		return n.Prompt, n.Completion, n.Reported
	}
	return metrics.Usage(resp.Body)
}

// streamUsage is a stream's usage, as answerUsage is an answer's: the one count of its tokens
// that the metrics add (hayula_tokens_total, hayula_key_tokens_total) and that the key's tpm is
// charged. It is what the upstream reported, whether or not the client asked for usage
// (stream_options.include_usage). A translating adapter's stream knows it from its upstream's
// end (upstream.UsageStream), and puts it in a chunk only when asked. A stream passed through
// carries it in its events (the openai adapter asks its upstream for them when the client did
// not: upstream.Response.UsageAsked, and the relay keeps that chunk from the client), and its usage is the last one an event carried: an upstream may
// send it unasked (llama-server) or on every event as running totals (vLLM's
// continuous_usage_stats), and adding each event's would count the stream many times over
// (TestStreamTokensCountedOnceFromRunningTotals, TestStreamUsageCountedUnasked).
type streamUsage struct {
	from upstream.UsageStream // the adapter's count; nil: the events'
	read bool                 // the events are read: something counts the stream
	last upstream.Usage       // the usage of the last event that carried one
	// sent bounds the tokens of the text relayed to the client (answerText), counted only
	// under a tpm cap (text), for a stream that ends without usage: its client hung up before
	// the usage chunk, or its upstream reports none.
	text bool
	sent filter.TextTokens
}

// start makes u the usage of st, counted when counted (the metrics or a tpm cap will use it);
// otherwise nothing is read and it reports none. u is the zero streamUsage; set in place rather
// than returned, it is not a second copy (about 150 bytes) in relay's frame, on the stack of
// every stream while it is relayed.
func (u *streamUsage) start(st upstream.Stream, counted, text bool) {
	if !counted {
		return
	}
	u.text = text
	if us, ok := st.(upstream.UsageStream); ok {
		u.from = us
		return
	}
	u.read = true
}

// see reads the usage of ev, an event of the stream, while ev is valid. It allocates nothing.
// An event without the bytes `usage"` has no usage member, and is passed over by a search
// (hasUsageKey: about 20 ns on the bench's chunk), where metrics.Usage walks every colon of the
// event back to its start (BenchmarkRelayEvent, sessions ago: 14 ns an event that reads no usage,
// 23 with the search first, 84 with metrics.Usage alone).
// It reports whether ev had usage.
func (u *streamUsage) see(ev []byte) bool {
	if !u.read || !hasUsageKey(ev) {
		return false
	}
	p, c, ok := metrics.Usage(ev)
	if ok {
		u.last = upstream.Usage{Prompt: p, Completion: c, Reported: true}
	}
	return ok
}

// usageOnly reports whether ev, a chunk with usage, is the one that include_usage adds: its
// choices are empty (or absent), so that it carries nothing but the usage. A chunk with choices
// and usage (llama-server's last, vLLM's running totals) is the client's all the same.
func usageOnly(ev []byte) bool { return !jsonx.NonEmptyArray(ev, "choices") }

// usageKey is what hasUsageKey looks for.
const usageKey = `usage"`

// hasUsageKey reports whether ev holds the bytes `usage"`, as bytes.Contains would. It skips to
// each 'g' of the event with IndexByte and compares the key around it. bytes.Contains skips to
// each 'u' and then runs bytes.Index's bookkeeping for each; a 'u' is in every null (logprobs,
// finish_reason, vLLM's stop_reason) and in "chunk", where a 'g' is in "logprobs" and, in
// OpenAI's chunks, "system_fingerprint": the bench's chunk 606 instructions → 371
// (BenchmarkHasUsageKey), three IndexByte calls where bytes.Contains made four. Most of what is
// left is those calls, about 100 instructions a 'g' with the checks.
func hasUsageKey(ev []byte) bool {
	const g = len("usa") // where the key's 'g' is
	for at := 0; ; {
		i := bytes.IndexByte(ev[at:], 'g')
		if i < 0 {
			return false
		}
		if at += i; at >= g && at-g+len(usageKey) <= len(ev) && string(ev[at-g:at-g+len(usageKey)]) == usageKey {
			return true
		}
		at++
	}
}

// usage is the stream's usage so far; Reported is false when it reported none.
func (u *streamUsage) usage() upstream.Usage {
	if u.from != nil {
		return u.from.Usage()
	}
	return u.last
}

// chargeStream charges the stream's usage to the key's tpm, unless it was charged (chargeTPM):
// without usage, the lower bound of what it relayed as its completion.
func (s *Server) chargeStream(st *reqState, req *core.Request, su *streamUsage) {
	if st.tpm == nil {
		return
	}
	n := su.usage()
	if !n.Reported {
		n.Completion = uint64(su.sent.Min())
	}
	s.chargeTPM(st, req, n.Prompt, n.Completion, n.Reported)
}

// relayed counts the text of ev, an event the client was sent, in the bound of the stream's
// completion, when a tpm cap charges it (text).
func (u *streamUsage) relayed(ev []byte) {
	if u.text {
		answerText(&u.sent, ev)
	}
}

// answerText counts in n the text of ev, a chat or completions chunk relayed or a whole answer:
// the choices' content, reasoning and refusal text (delta's members, or message's), and a
// completion's text. A tool call's arguments are not counted: servers build them from what the
// model wrote (vLLM's parsers re-serialize its JSON; the ollama adapter serializes Ollama's
// objects), and a re-serialized text may count more pre-tokens than the model wrote tokens, where
// the count must never be more.
func answerText(n *filter.TextTokens, ev []byte) {
	top := jsonx.Object(ev, false)
	for {
		k, v, ok := top.Next()
		if !ok {
			return
		}
		if string(k) != `"choices"` {
			continue
		}
		choices := jsonx.Array(v, false)
		for {
			_, c, ok := choices.Next()
			if !ok {
				break
			}
			choice := jsonx.Object(c, false)
			for {
				k, v, ok := choice.Next()
				if !ok {
					break
				}
				switch string(k) {
				case `"text"`:
					n.AddLiteral(v)
				case `"delta"`, `"message"`: // a stream's chunk, a whole answer
					delta := jsonx.Object(v, false)
					for {
						k, v, ok := delta.Next()
						if !ok {
							break
						}
						switch string(k) {
						case `"content"`, `"reasoning_content"`, `"reasoning"`, `"refusal"`:
							n.AddLiteral(v)
						}
					}
				}
			}
		}
	}
}

// countStream is the end of a stream's relay, however it ended: the key's tpm is charged its
// usage if it was not yet (a client that left), and the metrics count it as u's tokens (route
// -1: none), once.
func (s *Server) countStream(u usageTo, t *core.Target, req *core.Request, st *reqState, su *streamUsage) {
	s.chargeStream(st, req, su)
	if u.route < 0 {
		return
	}
	if n := su.usage(); n.Reported {
		s.countTokens(u, t, n.Prompt, n.Completion)
	}
}

// countTokens adds an answer's tokens to its route's and target's, and to its key's.
func (s *Server) countTokens(u usageTo, t *core.Target, prompt, completion uint64) {
	s.metrics.Tokens(u.route, t.Index, prompt, completion)
	s.metrics.KeyTokens(u.key, prompt, completion)
}

// handleMetrics answers a Prometheus scrape. It takes a key like every other endpoint when the
// gateway has keys (Prometheus sends one with `authorization: {credentials: …}`): the series
// name every route and target, so a key limited to some routes (whose other routes the gateway
// otherwise hides: an unknown model and a forbidden one get the same 404) may not scrape. A key
// with an empty routes list uses no route and is made for scraping.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	key, e := s.authenticate(r)
	if e != nil {
		writeError(w, e)
		return
	}
	if key != nil && len(key.Routes) > 0 {
		writeError(w, &apiError{Status: http.StatusForbidden, Type: typeInvalidRequest, Code: "permission_denied",
			Message: "This key may use only some routes, and /metrics names every route and target: scrape with a key that has no routes list, or one with routes = [] (a key for scraping only)."})
		return
	}
	var mw metrics.Writer
	s.metrics.Write(&mw, s.writeGauges)
	w.Header().Set("Content-Type", metrics.ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(mw.Bytes())))
	_, _ = w.Write(mw.Bytes())
}

// writeGauges writes what is state rather than a count, read now.
func (s *Server) writeGauges(w *metrics.Writer) {
	w.Family("hayula_upstream_in_flight", "gauge", "Attempts on each target now waiting for or relaying an answer.")
	for _, t := range s.cfg.Targets {
		w.Sample("hayula_upstream_in_flight", uint64(max(t.Stats.InFlight(), 0)), "target", t.Name)
	}
	w.Family("hayula_target_available", "gauge", "1 when health has the target available, 0 while it cools down after failures or fails its health checks.")
	for _, t := range s.cfg.Targets {
		ok, _ := s.health.Available(t)
		w.Sample("hayula_target_available", b2u(ok), "target", t.Name)
	}
	w.Family("hayula_target_degraded", "gauge", "1 when the target's last health check answered slower than its degraded_after.")
	for _, t := range s.cfg.Targets {
		w.Sample("hayula_target_degraded", b2u(t.Stats.Degraded()), "target", t.Name)
	}
	w.Family("hayula_failed_open_total", "counter", "Requests served only because health would otherwise have left no target (health never denies service).")
	w.Sample("hayula_failed_open_total", uint64(s.failedOpen.Load()))
	if s.procs != nil && len(s.cfg.Lifecycle.Specs) > 0 {
		s.writeProcs(w)
	}
	s.reloads.Write(w, s.started)
	writeConns(w, s.conns)
	w.Family("go_goroutines", "gauge", "Number of goroutines that currently exist.")
	w.Sample("go_goroutines", uint64(runtime.NumGoroutine()))
	if rss, ok := residentBytes(); ok {
		w.Family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
		w.Sample("process_resident_memory_bytes", rss)
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// residentBytes is the process's resident set size, from /proc/self/statm where there is one.
func residentBytes() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * uint64(os.Getpagesize()), true
}

// writeProcs writes the state of the targets whose processes the gateway runs: the state as a
// label (1 on the current one, 0 on the others, as Prometheus writes an enum) and the starts.
func (s *Server) writeProcs(w *metrics.Writer) {
	// One series per target and state, for its current process: a process a reload retired has
	// the same name, and its series would collide with the current one's (explain lists it).
	members := slices.DeleteFunc(s.procs.m.Status(), func(m lifecycle.MemberStatus) bool { return m.Retired })
	w.Family("hayula_process_state", "gauge", "1 for the state the process of a target with a command is in (stopped, starting, ready, backoff, stopping), 0 for the others.")
	for _, m := range members {
		for st := lifecycle.StateStopped; st <= lifecycle.StateStopping; st++ {
			w.Sample("hayula_process_state", b2u(m.State == st), "target", m.Name, "state", st.String())
		}
	}
	w.Family("hayula_process_starts_total", "counter", "Processes launched for a target with a command, restarts after a crash included.")
	// By name, across reloads (lifecycle.Counts): a member's own Starts begin anew when a reload
	// changes or brings back its target (TestManagedTargets, "process counts go on").
	for _, m := range members {
		starts, _ := s.launched.Launched(m.Name)
		w.Sample("hayula_process_starts_total", uint64(starts), "target", m.Name)
	}
	w.Family("hayula_process_restarts_total", "counter", "Processes launched for a target with a command after its previous one crashed.")
	for _, m := range members {
		_, restarts := s.launched.Launched(m.Name)
		w.Sample("hayula_process_restarts_total", uint64(restarts), "target", m.Name)
	}
}
