package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/health"
	"github.com/hayula/gateway/internal/testsink"
	"github.com/hayula/gateway/server"
)

// withHealth answers the health path (GET /v1/models, the openai default) with h and everything
// else with the fake's chat handler.
func withHealth(name string, h http.HandlerFunc) http.HandlerFunc {
	chat := okHandler(name)
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			h(w, r)
			return
		}
		chat(w, r)
	}
}

func healthOK(w http.ResponseWriter, _ *http.Request) {
	_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
}

func healthLoading(retryAfter string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", retryAfter)
		w.WriteHeader(http.StatusServiceUnavailable)
	}
}

func healthDown(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusInternalServerError)
}

// syncBuffer is a log destination that a test reads while the code under test writes.
type syncBuffer = testsink.Buffer

func withLog(buf *syncBuffer) gwOption {
	return func(o *server.Options) { o.Logger = slog.New(slog.NewTextHandler(buf, nil)) }
}

// explained is what the active-health tests read from /v1/route/explain.
type explained struct {
	Order      []string `json:"order"`
	Candidates []struct {
		Name         string `json:"name"`
		Health       string `json:"health"`
		HealthDetail string `json:"health_detail"`
		Process      string `json:"process"`
		Retired      []struct {
			State    string `json:"state"`
			InFlight int    `json:"in_flight"`
		} `json:"retired_processes"`
	} `json:"candidates"`
	Drops []struct {
		Target, Filter, Reason string
	} `json:"drops"`
	Error *struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	} `json:"error"`
}

func (g *gateway) explain(t *testing.T, model string) explained {
	t.Helper()
	rep := g.post(t, "/v1/route/explain", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
	if rep.status != 200 {
		t.Fatalf("explain: status %d: %s", rep.status, rep.body)
	}
	var x explained
	if err := json.Unmarshal(rep.body, &x); err != nil {
		t.Fatal(err)
	}
	return x
}

func (x explained) health() map[string]string {
	m := map[string]string{}
	for _, c := range x.Candidates {
		m[c.Name] = c.Health
	}
	return m
}

func (x explained) detail(name string) string {
	for _, c := range x.Candidates {
		if c.Name == name {
			return c.HealthDetail
		}
	}
	return ""
}

func twoTargets(t *testing.T, opts ...gwOption) (*gateway, *fake, *fake) {
	t.Helper()
	a, b := newFake(t, "a"), newFake(t, "b")
	a.set(withHealth("a", healthOK))
	b.set(withHealth("b", healthOK))
	g := newGateway(t, target("a", a.url(), "private")+target("b", b.url(), "private")+
		"[routes.r]\ntargets = [\"a\", \"b\"]\n", nil, opts...)
	return g, a, b
}

func (g *gateway) checkAll() { g.srv.Checker().CheckAll(context.Background()) }

// checkOne checks one target alone, so that a handler moving the clock times no other check.
func (g *gateway) checkOne(t *testing.T, name string) {
	t.Helper()
	if _, ok := g.srv.Checker().Check(context.Background(), mustTarget(t, g, name)); !ok {
		t.Fatalf("%s was not checked", name)
	}
}

// TestActiveLoading: a target whose health check says it is loading is skipped while another can
// serve; when every target is loading the client gets 503 model_loading with the soonest
// Retry-After; a good check brings the target back.
func TestActiveLoading(t *testing.T) {
	logs := &syncBuffer{}
	g, a, b := twoTargets(t, withLog(logs))
	a.set(withHealth("a", healthLoading("30")))
	g.checkAll()
	if rep := g.chat(t, "r"); rep.status != 200 || rep.header.Get("x-hayula-chain") != "b" {
		t.Fatalf("a loading: status %d chain %q, want b alone", rep.status, rep.header.Get("x-hayula-chain"))
	}
	x := g.explain(t, "r")
	if diff := cmp.Diff(map[string]string{"a": "loading", "b": "healthy"}, x.health()); diff != "" {
		t.Errorf("explain health (-want +got):\n%s", diff)
	}
	if d := x.detail("a"); !strings.HasPrefix(d, "loading a model until ") {
		t.Errorf("a's health_detail %q", d)
	}
	if len(x.Drops) != 1 || x.Drops[0].Filter != "loading" {
		t.Errorf("drops %+v, want a dropped by loading", x.Drops)
	}

	g.clock.Advance(10 * time.Second)
	b.set(withHealth("b", healthLoading("45")))
	g.checkAll() // a: loading until +40s from t0, b: until +55s
	rep := g.chat(t, "r")
	if rep.status != 503 || rep.errorField(t, "code") != "model_loading" {
		t.Fatalf("all loading: status %d: %s", rep.status, rep.body)
	}
	if got := rep.header.Get("Retry-After"); got != "30" {
		t.Errorf("Retry-After %q, want the soonest, 30", got)
	}
	if x := g.explain(t, "r"); x.Error == nil || x.Error.Status != 503 || x.Error.Code != "model_loading" {
		t.Errorf("explain error %+v, want 503 model_loading", x.Error)
	}
	hits := a.hits.Load() + b.hits.Load()

	a.set(withHealth("a", healthOK))
	g.checkAll()
	if rep := g.chat(t, "r"); rep.status != 200 || rep.header.Get("x-hayula-chain") != "a" {
		t.Fatalf("a back: status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
	}
	// Two checks and the one chat request: nothing was sent to a loading target.
	if got := a.hits.Load() + b.hits.Load() - hits; got != 3 {
		t.Errorf("%d requests upstream since all were loading, want 3", got)
	}
	for _, want := range []string{
		`msg="health changed" target=a from=healthy to=loading`,
		`msg="health changed" target=b from=healthy to=loading`,
		`msg="health changed" target=a from=loading to=healthy`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

// TestPassiveLoading: a real request answered 503 "loading" falls through, and the next ones skip
// that target for its Retry-After.
func TestPassiveLoading(t *testing.T) {
	g, a, _ := twoTargets(t)
	a.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "10")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"loading"}`))
	})
	if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "a→b (served by b)" {
		t.Fatalf("chain %q", rep.header.Get("x-hayula-chain"))
	}
	if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "b" {
		t.Fatalf("a loading: chain %q", rep.header.Get("x-hayula-chain"))
	}
	a.set(okHandler("a"))
	g.clock.Advance(10 * time.Second)
	if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "a" {
		t.Fatalf("after Retry-After: chain %q", rep.header.Get("x-hayula-chain"))
	}
}

// TestActiveUnavailable: three failed checks set a target aside like a cooldown, with the same
// fail-open rule; a good check brings it back.
func TestActiveUnavailable(t *testing.T) {
	g, a, b := twoTargets(t)
	a.set(withHealth("a", healthDown))
	for range 3 {
		g.checkAll()
	}
	if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "b" {
		t.Fatalf("a unavailable: chain %q", rep.header.Get("x-hayula-chain"))
	}
	x := g.explain(t, "r")
	if x.health()["a"] != "unavailable" || x.detail("a") != "3 failed health checks in a row (last: a: health check: status 500)" {
		t.Errorf("explain a: %q, %q", x.health()["a"], x.detail("a"))
	}
	if len(x.Drops) != 1 || x.Drops[0].Reason != "unavailable: 3 failed health checks in a row (last: a: health check: status 500)" {
		t.Errorf("drops %+v", x.Drops)
	}

	b.set(withHealth("b", healthDown))
	for range 3 {
		g.checkAll()
	}
	before := g.srv.FailedOpen()
	if rep := g.chat(t, "r"); rep.status != 200 || rep.header.Get("x-hayula-chain") != "a" {
		t.Fatalf("both unavailable, fail open: status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
	}
	if g.srv.FailedOpen() <= before {
		t.Error("fail-open was not counted")
	}
	// The request a served proves it works.
	if st := g.srv.Health().Snapshot(mustTarget(t, g, "a")); st.Status != "healthy" {
		t.Errorf("a after serving: %q", st.Status)
	}
	b.set(withHealth("b", healthOK))
	g.checkAll()
	if diff := cmp.Diff(map[string]string{"a": "healthy", "b": "healthy"}, g.explain(t, "r").health()); diff != "" {
		t.Errorf("after good checks (-want +got):\n%s", diff)
	}
}

// TestDegradedPreferred: a target whose check answers slower than degraded_after is passed over
// while another can serve, and still serves when it is the only one left.
func TestDegradedPreferred(t *testing.T) {
	g, a, b := twoTargets(t)
	// The server measures checks on its manual clock: a slow answer advances it, past
	// degraded_after (2.5s, half of health_timeout) but within health_timeout (5s), as a slow
	// answer must be (TestDegradedReachable).
	a.set(withHealth("a", func(w http.ResponseWriter, r *http.Request) {
		g.clock.Advance(3 * time.Second)
		healthOK(w, r)
	}))
	g.checkOne(t, "a")
	g.checkOne(t, "b")
	x := g.explain(t, "r")
	if diff := cmp.Diff([]string{"b", "a"}, x.Order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if x.health()["a"] != "degraded" || !strings.Contains(x.detail("a"), "more than degraded_after 2.5s") {
		t.Errorf("explain a: %q, %q", x.health()["a"], x.detail("a"))
	}
	if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "b" {
		t.Fatalf("a degraded: chain %q", rep.header.Get("x-hayula-chain"))
	}
	b.set(errHandler(500, "internal", "down"))
	if rep := g.chat(t, "r"); rep.status != 200 || rep.header.Get("x-hayula-chain") != "b→a (served by a)" {
		t.Fatalf("b failing: status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
	}
	a.set(withHealth("a", healthOK))
	g.checkAll()
	if got := g.explain(t, "r").Order; len(got) == 0 || got[0] != "a" {
		t.Errorf("a fast again: order %v", got)
	}
}

// TestHealthCheckerRunsOnTheServerClock: Start runs the checks on the server's clock and Close
// stops them.
func TestHealthCheckerRunsOnTheServerClock(t *testing.T) {
	g, a, _ := twoTargets(t)
	checked := make(chan struct{}, 4)
	a.set(withHealth("a", func(w http.ResponseWriter, r *http.Request) {
		healthLoading("60")(w, r)
		checked <- struct{}{}
	}))
	if err := g.srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-checked
	g.clock.BlockUntil(2) // both targets' next rounds are scheduled
	if st := g.srv.Health().Snapshot(mustTarget(t, g, "a")); st.Status != health.StatusLoading {
		t.Fatalf("a after the first round: %q", st.Status)
	}
	g.clock.Advance(30 * time.Second)
	<-checked
	g.srv.Close()
	if n := g.clock.Pending(); n != 0 {
		t.Errorf("%d timers pending after Close", n)
	}
}
