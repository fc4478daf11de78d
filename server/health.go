package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/errmap"
	"github.com/hayula/gateway/filter"
	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/lifecycle"
)

// initActive builds what runs beside the requests: the lifecycle manager (when some target has a
// command) and the active health checker. Neither starts anything before Start.
func (s *Server) initActive(o Options) error {
	p, err := s.newProcs(o)
	if err != nil {
		return err
	}
	s.procs = p
	co := health.CheckerOptions{Logger: s.log, URL: s.checkURL}
	if tc, ok := s.clock.(health.TimerClock); ok {
		// Tests advance a manual clock to run a round of checks.
		co.Clock = tc
	}
	s.checker = health.NewChecker(s.health, s.cfg.Targets, co)
	return nil
}

// closeActive stops the checks, then the processes; the HTTP server has drained by now.
func (s *Server) closeActive() {
	s.checker.Close()
	if s.procs != nil {
		if err := s.procs.close(); err != nil {
			s.log.Warn("stopping the model processes", "error", err)
		}
	}
}

// Checker is the active health checker, for tests (CheckAll) and status pages.
func (s *Server) Checker() *health.Checker { return s.checker }

// healthChanged logs every change of a target's health state.
func (s *Server) healthChanged(t *core.Target, from, to string) {
	s.log.Info("health changed", "target", t.Name, "from", from, "to", to)
}

// checkURL is where the checker GETs t now. A managed target is checked only while its process
// is ready, at that process's port; a stopped process is the lifecycle's business, not a failure.
func (s *Server) checkURL(t *core.Target) (string, bool) {
	if !s.managed(t) {
		return t.HealthURL, t.HealthURL != ""
	}
	for _, st := range s.procs.m.Status() {
		// A retired process of the name is on its way out: the target is its current process.
		if st.Name == t.Name && !st.Retired && st.State == lifecycle.StateReady && st.URL != "" {
			return resolvePort(t.HealthURL, t.URL, st.URL)
		}
	}
	return "", false
}

// resolvePort substitutes, in health, the port that the running process's base URL (live) has
// where the url template (tmpl) says {port}.
func resolvePort(health, tmpl, live string) (string, bool) {
	if !strings.Contains(health, lifecycle.PortPlaceholder) {
		return health, true
	}
	prefix, _, ok := strings.Cut(tmpl, lifecycle.PortPlaceholder)
	if !ok || !strings.HasPrefix(live, prefix) {
		return "", false
	}
	end := len(prefix)
	for end < len(live) && live[end] >= '0' && live[end] <= '9' {
		end++
	}
	if end == len(prefix) {
		return "", false
	}
	return strings.ReplaceAll(health, lifecycle.PortPlaceholder, live[len(prefix):end]), true
}

// noTarget is the answer when eligibility left nothing to try. When targets were passed over
// because they are loading a model, it is 503 model_loading with the soonest Retry-After, so the
// client knows when to come back; otherwise the plain noTarget answer.
func (s *Server) noTarget(rs *routeState, drops []filter.Drop) *apiError {
	var (
		soonest time.Time
		loading []string
	)
	for _, d := range drops {
		if d.Filter != (filter.Loading{}).Name() {
			continue
		}
		loading = append(loading, d.Target)
		if t, ok := s.cfg.Target(d.Target); ok {
			if l, until := s.health.Loading(t); l && (soonest.IsZero() || until.Before(soonest)) {
				soonest = until
			}
		}
	}
	if len(loading) == 0 {
		return noTarget(rs, drops)
	}
	wait := s.loadingWait(soonest)
	verb := "is"
	if len(loading) > 1 {
		verb = "are"
	}
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeUpstream, Code: "model_loading",
		RetryAfter: wait, Message: fmt.Sprintf("no target of route %q can serve now: %s %s loading a model "+
			"(retry in %s)", rs.Name, strings.Join(loading, ", "), verb, wait.Round(time.Second))}
}

// loadingWait is the Retry-After for a target health holds back as loading until until: the
// time left, a second at least, or health's default wait when it holds none (zero until).
func (s *Server) loadingWait(until time.Time) time.Duration {
	if until.IsZero() {
		return health.DefaultLoadingRetry
	}
	return max(until.Sub(s.clock.Now()), time.Second)
}

// describeActive adds to explain what active health and the lifecycle know about t.
func (s *Server) describeActive(d *explainTarget, t *core.Target, st health.State) {
	switch st.Status {
	case health.StatusLoading:
		d.HealthDetail = "loading a model until " + st.LoadingUntil.UTC().Format(time.RFC3339)
	case health.StatusUnavailable:
		d.HealthDetail = fmt.Sprintf("%d failed health checks in a row (last: %s)", st.CheckFailures, st.CheckCause)
	case health.StatusDegraded:
		d.HealthDetail = fmt.Sprintf("last health check took %s, more than degraded_after %s",
			st.CheckLatency, t.DegradedAfter)
	}
	if !s.managed(t) {
		return
	}
	ps := s.procs.m.State(t.Name)
	d.Process = ps.String()
	for _, m := range s.procs.m.Status() {
		if m.Retired && m.Name == t.Name {
			d.RetiredProcesses = append(d.RetiredProcesses, explainRetired{State: m.State.String(), InFlight: m.InFlight})
		}
	}
	if (ps == lifecycle.StateStarting || ps == lifecycle.StateBackoff) && st.Status == health.StatusHealthy {
		// Its process is coming up: to a client that is loading, whatever the last check said.
		d.Health, d.HealthDetail = health.StatusLoading, "process "+ps.String()
	}
}

// describeCheck words a failed health check for clients (health.Policy.Describe): its status, or
// the cause of its error as errmap words a connection's, never the error's text, which names the
// upstream's URL and address ("Get \"http://10.0.0.7:8080/v1/models\": dial tcp 10.0.0.7:8080:
// connect: connection refused"; TestExplainHidesUpstreamAddress). The whole text stays in the log
// ("health check failed", at debug).
func describeCheck(err error) string {
	ce, ok := errors.AsType[*health.CheckError](err)
	switch {
	case !ok:
		return errmap.Cause(err)
	case ce.Err == nil:
		return ce.Target + ": health check: status " + strconv.Itoa(ce.Status)
	}
	return ce.Target + ": health check: " + errmap.Cause(ce.Err)
}
