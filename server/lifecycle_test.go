//go:build unix

package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/lifecycle"
	"github.com/hayula/gateway/server"
	"github.com/hayula/gateway/upstream"
)

// TestManagedTargets runs real processes: lifecycle's fake backend, built once for all subtests.
func TestManagedTargets(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fakebackend")
	if out, err := exec.Command("go", "build", "-o", bin, "../lifecycle/testdata/fakebackend").CombinedOutput(); err != nil {
		t.Fatalf("building the fake backend: %v\n%s", err, out)
	}
	// managed renders a target the gateway runs: the fake backend on a port of the gateway's
	// choosing, its health on /health.
	managed := func(name string, extra ...string) string {
		args := []string{bin, "-port", "{port}", "-name", name}
		args = append(args, extra...)
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = fmt.Sprintf("%q", a)
		}
		return fmt.Sprintf(`[targets.%s]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = [%s]
health_path = "http://127.0.0.1:{port}/health"
load_timeout = "20s"

`, name, strings.Join(quoted, ", "))
	}
	fast := func(o *server.Options) {
		o.Lifecycle = lifecycle.Options{PollInterval: 20 * time.Millisecond, ProbeTimeout: time.Second,
			StopGrace: 2 * time.Second}
	}

	t.Run("a cold target starts on demand, serves, and is checked at its port", func(t *testing.T) {
		g := newGateway(t, managed("m")+"[routes.r]\ntargets = [\"m\"]\n", nil, fast)
		if x := g.explain(t, "r"); x.Candidates[0].Process != "stopped" {
			t.Fatalf("before any request: process %q", x.Candidates[0].Process)
		}
		// Nothing runs, so nothing is checked: a stopped process is not a failed check.
		if _, ok := g.srv.Checker().Check(context.Background(), mustTarget(t, g, "m")); ok {
			t.Error("a stopped managed target was checked")
		}
		rep := g.chat(t, "r")
		if rep.status != 200 || rep.header.Get("x-hayula-chain") != "m" || !strings.Contains(string(rep.body), "hello from m") {
			t.Fatalf("status %d chain %q: %s", rep.status, rep.header.Get("x-hayula-chain"), rep.body)
		}
		// The handler releases the process after the answer has gone out, so the client may
		// read the answer first: the release is waited for, boundedly.
		settles(func() bool { return g.srv.Processes().Status()[0].InFlight == 0 })
		st := g.srv.Processes().Status()[0]
		if st.State != lifecycle.StateReady || st.Starts != 1 || st.InFlight != 0 {
			t.Fatalf("after the request: %+v; want ready, one start, released", st)
		}
		if x := g.explain(t, "r"); x.Candidates[0].Process != "ready" || x.Candidates[0].Health != "healthy" {
			t.Errorf("explain: %+v", x.Candidates[0])
		}
		_, lines := scrape(t, g)
		for _, want := range []string{`hayula_process_state{target="m",state="ready"} 1`,
			`hayula_process_state{target="m",state="stopped"} 0`, `hayula_process_starts_total{target="m"} 1`,
			`hayula_process_restarts_total{target="m"} 0`} {
			if !lines[want] {
				t.Errorf("/metrics has no line %q", want)
			}
		}
		r, ok := g.srv.Checker().Check(context.Background(), mustTarget(t, g, "m"))
		if !ok || r.Err != nil {
			t.Fatalf("check of the running process: ok %v, err %v", ok, r.Err)
		}
		if hs := g.srv.Health().Snapshot(mustTarget(t, g, "m")); hs.LastCheck.IsZero() || hs.Status != "healthy" {
			t.Errorf("health after the check: %+v", hs)
		}
	})

	t.Run("with fallback a cold target is passed by while it starts in the background", func(t *testing.T) {
		b := newFake(t, "b")
		g := newGateway(t, managed("m")+target("b", b.url(), "private")+"[routes.r]\ntargets = [\"m\", \"b\"]\n", nil, fast)
		rep := g.chat(t, "r")
		if rep.status != 200 || rep.header.Get("x-hayula-chain") != "m→b (served by b)" {
			t.Fatalf("cold: status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
		}
		// Ensure waits for the start the request set off, and does not start another.
		_, release, err := g.srv.Processes().Ensure(context.Background(), "m")
		if err != nil {
			t.Fatal(err)
		}
		release()
		rep = g.chat(t, "r")
		if rep.status != 200 || rep.header.Get("x-hayula-chain") != "m" {
			t.Fatalf("warm: status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
		}
		if st := g.srv.Processes().Status()[0]; st.Starts != 1 {
			t.Errorf("starts %d, want 1", st.Starts)
		}
	})

	t.Run("explain shows a process that is still loading", func(t *testing.T) {
		b := newFake(t, "b")
		// -hang: the health check never answers, so the process stays starting (its load_timeout
		// runs on the test's clock, which does not move).
		g := newGateway(t, managed("slow", "-hang")+target("b", b.url(), "private")+
			"[routes.r]\ntargets = [\"slow\", \"b\"]\n", nil, fast)
		if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "slow→b (served by b)" {
			t.Fatalf("chain %q", rep.header.Get("x-hayula-chain"))
		}
		if rep := g.chat(t, "r"); rep.header.Get("x-hayula-chain") != "slow→b (served by b)" {
			t.Fatalf("second request: chain %q", rep.header.Get("x-hayula-chain"))
		}
		// The background start runs on once the answer has gone: under load its reservation may
		// come after the client reads the answer.
		settles(func() bool { return g.srv.Processes().State("slow") != lifecycle.StateStopped })
		x := g.explain(t, "r")
		if c := x.Candidates[0]; c.Process != "starting" || c.Health != "loading" || c.HealthDetail != "process starting" {
			t.Errorf("explain slow: %+v", c)
		}
		if st := g.srv.Processes().Status()[0]; st.Starts > 1 {
			t.Errorf("starts %d, want one background start for both requests", st.Starts)
		}
	})

	t.Run("without fallback the request waits for the start", func(t *testing.T) {
		b := newFake(t, "b")
		g := newGateway(t, managed("m")+target("b", b.url(), "private")+"[routes.r]\ntargets = [\"m\", \"b\"]\n", nil, fast)
		rep := g.post(t, "/v1/chat/completions", `{"model":"r","x-fallback-on":false,"messages":[{"role":"user","content":"hi"}]}`)
		if rep.status != 200 || rep.header.Get("x-hayula-chain") != "m" || b.hits.Load() != 0 {
			t.Fatalf("status %d chain %q, b hits %d", rep.status, rep.header.Get("x-hayula-chain"), b.hits.Load())
		}
	})

	t.Run("a process that cannot start is a connection failure", func(t *testing.T) {
		b := newFake(t, "b")
		cfg := managed("bad", "-crash-at-start") + target("b", b.url(), "private") +
			"[routes.alone]\ntargets = [\"bad\"]\n[routes.r]\ntargets = [\"bad\", \"b\"]\n"
		g := newGateway(t, cfg, nil, fast)
		rep := g.chat(t, "alone")
		if rep.status != 502 || rep.errorField(t, "code") != "upstream_unreachable" {
			t.Fatalf("status %d: %s", rep.status, rep.body)
		}
		if st := g.srv.Health().Snapshot(mustTarget(t, g, "bad")); st.Failures != 1 {
			t.Errorf("health failures %d, want the failed start counted", st.Failures)
		}
		// The member is stopped again, and b can serve now: the request must not wait on bad.
		rep = g.chat(t, "r")
		if rep.status != 200 || rep.header.Get("x-hayula-chain") != "bad→b (served by b)" {
			t.Fatalf("status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
		}
	})

	t.Run("the attempt goes to the live URL and holds the process until the stream ends", func(t *testing.T) {
		up := &holdingUpstream{release: make(chan struct{})}
		g := newGateway(t, managed("m")+"[routes.r]\ntargets = [\"m\"]\n", nil, fast,
			func(o *server.Options) { o.Upstream = up })
		resp := postStream(t, g, "r")
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
			t.Fatalf("first event: %q, %v", line, err)
		}
		if st := g.srv.Processes().Status()[0]; st.InFlight != 1 {
			t.Errorf("mid-stream: in flight %d, want 1", st.InFlight)
		}
		close(up.release)
		if _, err := io.Copy(io.Discard, br); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// The handler releases after the last write; wait for it by asking the server to drain.
		g.ts.Close()
		if st := g.srv.Processes().Status()[0]; st.InFlight != 0 {
			t.Errorf("after the stream: in flight %d, want 0", st.InFlight)
		}
		tg := mustTarget(t, g, "m")
		got := up.target()
		switch {
		case got == nil:
			t.Fatal("the upstream saw no attempt")
		case got == tg || got.Index != tg.Index || got.Stats != tg.Stats || got.Name != "m":
			t.Errorf("attempt target %+v: want a copy of m sharing Index and Stats", got)
		case strings.Contains(got.URL, "{port}") || got.URL != g.srv.Processes().Status()[0].URL:
			t.Errorf("attempt URL %q, want the running process's %q", got.URL, g.srv.Processes().Status()[0].URL)
		}
		if tg.URL != "http://127.0.0.1:{port}/v1" {
			t.Errorf("the config's target changed: %q", tg.URL)
		}
	})

	t.Run("a panicking attempt gives the process back", func(t *testing.T) {
		up := &panicsOn{name: "m"}
		up.armed.Store(true)
		g := newGateway(t, managed("m")+"[routes.r]\ntargets = [\"m\"]\n", nil, fast,
			func(o *server.Options) { o.Upstream = up })
		if rep := g.chat(t, "r"); rep.status != 500 {
			t.Fatalf("%d %s, want the recoverer's 500", rep.status, rep.body)
		}
		g.ts.Close() // the handler has returned
		if st := g.srv.Processes().Status()[0]; st.InFlight != 0 {
			t.Errorf("after the panic: in flight %d, want 0 (the process could never be evicted)", st.InFlight)
		}
	})

	t.Run("the background start of a passed-by member does not evict the one the request moves on to", func(t *testing.T) {
		inG := func(s string) string { return strings.Replace(s, "load_timeout", "group = \"g\"\nload_timeout", 1) }
		cfg := inG(managed("m1")) + inG(managed("m2")) + "[groups.g]\nslots = 1\n[routes.r]\ntargets = [\"m1\", \"m2\"]\n"
		// The log line of the passed-by attempt takes a while, as a loaded disk's would: the
		// window between passing m1 by and acquiring m2 is wide open.
		slowLog := func(o *server.Options) { o.Logger = slog.New(slowAttemptLog{slog.NewTextHandler(io.Discard, nil)}) }
		g := newGateway(t, cfg, nil, fast, slowLog)
		p := g.srv.Processes()
		for i := range 3 {
			if i > 0 {
				// The previous request's background start of m1 has run its course.
				settles(func() bool { return p.State("m1") == lifecycle.StateReady })
			}
			// m2 runs and m1 does not: a request for r passes m1 by and is served by m2.
			_, release, err := p.Ensure(context.Background(), "m2")
			if err != nil {
				t.Fatal(err)
			}
			release()
			settles(func() bool { return p.State("m1") == lifecycle.StateStopped })
			if st := p.State("m1"); st != lifecycle.StateStopped {
				t.Fatalf("request %d: m1 is %s before it, want stopped", i, st)
			}
			starts := p.Status()[1].Starts
			rep := g.chat(t, "r")
			if rep.status != 200 || rep.header.Get("x-hayula-chain") != "m1→m2 (served by m2)" {
				t.Fatalf("request %d: status %d chain %q", i, rep.status, rep.header.Get("x-hayula-chain"))
			}
			if got := p.Status()[1].Starts; got != starts {
				t.Fatalf("request %d: m2 was started %d more times to serve it: the background start of m1 evicted it first",
					i, got-starts)
			}
		}
	})

	t.Run("a background start loads for nobody: a request for another member of its full group evicts it", func(t *testing.T) {
		inG := func(s string) string { return strings.Replace(s, "load_timeout", "group = \"g\"\nload_timeout", 1) }
		b := newFake(t, "b")
		// -hang: m1's health check never answers, so its background start loads until its
		// load_timeout, on the test's clock, which does not move.
		cfg := inG(managed("m1", "-hang")) + inG(managed("m3")) + target("b", b.url(), "private") +
			"[groups.g]\nslots = 1\n[routes.r]\ntargets = [\"m1\", \"b\"]\n[routes.r3]\ntargets = [\"m3\"]\n"
		g := newGateway(t, cfg, nil, fast)
		p := g.srv.Processes()
		if rep := g.chat(t, "r"); rep.status != 200 || rep.header.Get("x-hayula-chain") != "m1→b (served by b)" {
			t.Fatalf("status %d chain %q", rep.status, rep.header.Get("x-hayula-chain"))
		}
		settles(func() bool { return p.Status()[0].PID != 0 })
		if p.Status()[0].PID == 0 {
			t.Fatal("m1's background start never launched")
		}
		// Before, the background start waited for m1 as a request does, so that m1 could not be
		// evicted while it loaded: this request waited out m1's whole load_timeout.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rep := make(chan reply, 1)
		go func() { rep <- g.chat(t, "r3") }()
		select {
		case r := <-rep:
			if r.status != 200 || r.header.Get("x-hayula-chain") != "m3" {
				t.Fatalf("r3: status %d chain %q", r.status, r.header.Get("x-hayula-chain"))
			}
		case <-ctx.Done():
			t.Fatal("a request for m3 waits while m1 loads for nobody in the group's only slot")
		}
	})

	t.Run("a process that does not load in time is a loading failure, with a Retry-After", func(t *testing.T) {
		// As when the request passes a loading target by and nothing else serves: 503
		// model_loading, and a Retry-After, which CONFIG.md promises for class loading.
		g := newGateway(t, managed("slow", "-hang")+"[routes.alone]\ntargets = [\"slow\"]\n", nil, fast)
		got := make(chan reply, 1)
		go func() { got <- g.chat(t, "alone") }()
		settles(func() bool { return g.srv.Processes().Status()[0].PID != 0 })
		g.clock.Advance(20 * time.Second) // load_timeout
		rep := <-got
		if rep.status != 503 || rep.errorField(t, "code") != "model_loading" || rep.header.Get("Retry-After") == "" {
			t.Fatalf("load timeout: status %d Retry-After %q: %s", rep.status, rep.header.Get("Retry-After"), rep.body)
		}
	})

	t.Run("a member whose group is full of members in use answers 503 model_loading at load_timeout, saying so", func(t *testing.T) {
		// SAIF's swap with every resident specialist serving a long stream: nothing can be evicted,
		// and the request that needs another member gets a well-formed answer once its load_timeout
		// has passed, not a hang.
		inG := func(s string) string { return strings.Replace(s, "load_timeout", "group = \"g\"\nload_timeout", 1) }
		cfg := inG(managed("m1")) + inG(managed("m2")) + "[groups.g]\nslots = 1\n[routes.two]\ntargets = [\"m2\"]\n"
		g := newGateway(t, cfg, nil, fast)
		p := g.srv.Processes()
		_, release, err := p.Ensure(context.Background(), "m1") // a stream that outlasts the wait
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		before := g.clock.Pending()
		got := make(chan reply, 1)
		go func() { got <- g.chat(t, "two") }()
		settles(func() bool { return g.clock.Pending() > before })
		if n := g.clock.Pending(); n <= before {
			t.Fatalf("the request for m2 armed no timer (%d pending, %d before)", n, before)
		}
		g.clock.Advance(20 * time.Second) // load_timeout
		rep := <-got
		if rep.status != 503 || rep.errorField(t, "code") != "model_loading" || rep.header.Get("Retry-After") == "" {
			t.Fatalf("group full of members in use: status %d Retry-After %q: %s", rep.status, rep.header.Get("Retry-After"), rep.body)
		}
		// Nothing loaded: the answer says the group had no room, not that m2 was loading.
		if msg := rep.errorField(t, "message"); msg != "upstream m2 is not running: no slot of its group g came free within 20s" {
			t.Errorf("message %q", msg)
		}
		if st := p.State("m1"); st != lifecycle.StateReady {
			t.Errorf("m1, in use, is %s", st)
		}
	})

	t.Run("a reload hands the processes over: unchanged keeps its pid, changed restarts, removed stops", func(t *testing.T) {
		cfg1 := managed("keep") + managed("change") + managed("drop") +
			"[routes.rkeep]\ntargets = [\"keep\"]\n[routes.rchange]\ntargets = [\"change\"]\n[routes.rdrop]\ntargets = [\"drop\"]\n"
		g := newGateway(t, cfg1, nil, fast)
		p := g.srv.Processes()
		before := map[string]int{}
		for _, n := range []string{"keep", "change", "drop"} {
			if rep := g.chat(t, "r"+n); rep.status != 200 {
				t.Fatalf("%s: %d %s", n, rep.status, rep.body)
			}
		}
		for _, st := range p.Status() {
			before[st.Name] = st.PID
		}
		cfg2 := managed("keep") + managed("change", "-delay", "1ms") +
			"[routes.rkeep]\ntargets = [\"keep\"]\n[routes.rchange]\ntargets = [\"change\"]\n"
		parsed, err := config.Parse([]byte(cfg2), "test.toml", func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		next, err := server.New(server.Options{Config: parsed, Previous: g.srv, Logger: slog.New(slog.DiscardHandler),
			Lifecycle: lifecycle.Options{PollInterval: 20 * time.Millisecond, ProbeTimeout: time.Second, StopGrace: 2 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(next.Close)
		if next.Processes() != p {
			t.Fatal("the new server built a lifecycle manager of its own")
		}
		// The previous server's Close, once it has drained, leaves the processes to the new one.
		g.srv.Close()
		if err := next.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		gone := func(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
		status := func(name string) lifecycle.MemberStatus {
			for _, st := range p.Status() {
				if st.Name == name {
					return st
				}
			}
			return lifecycle.MemberStatus{}
		}
		settles(func() bool { return gone(before["change"]) && gone(before["drop"]) })
		if st := status("keep"); gone(before["keep"]) || st.PID != before["keep"] || st.State != lifecycle.StateReady {
			t.Errorf("the unchanged member: %+v; its pid was %d", st, before["keep"])
		}
		if !gone(before["change"]) || !gone(before["drop"]) {
			t.Errorf("the changed (%d) or removed (%d) member's process still runs", before["change"], before["drop"])
		}
		if p.Manages("drop") {
			t.Error("the removed member is still managed")
		}
		h := serveLive(t, next.Handler())
		rep := (&gateway{srv: next, ts: h}).chat(t, "rchange")
		if st := status("change"); rep.status != 200 || st.PID == before["change"] || st.PID == 0 {
			t.Errorf("the changed member after the reload: status %d, %+v", rep.status, st)
		}
	})

	// A reload to a configuration with no command at all: the processes it removed stop once no
	// request holds them, as a reload that removes some does, not when the replaced server has
	// drained every request it had (a stream to a cloud target, say); and a later reload that
	// brings them back waits for them and counts them in its slots, rather than a manager of its
	// own starting beside them.
	t.Run("a reload that runs no process stops the removed ones once unused, and a later one counts them", func(t *testing.T) {
		b := newFake(t, "b")
		inG := func(s string) string { return strings.Replace(s, "load_timeout", "group = \"g\"\nload_timeout", 1) }
		withM := inG(managed("m1")) + inG(managed("m2")) + target("b", b.url(), "private") +
			"[groups.g]\nslots = 1\n[routes.r1]\ntargets = [\"m1\"]\n[routes.r2]\ntargets = [\"m2\"]\n[routes.rb]\ntargets = [\"b\"]\n"
		none := target("b", b.url(), "private") + "[routes.rb]\ntargets = [\"b\"]\n"
		g := newGateway(t, withM, nil, fast)
		if rep := g.chat(t, "r1"); rep.status != 200 {
			t.Fatalf("r1: %d %s", rep.status, rep.body)
		}
		pid := g.srv.Processes().Status()[0].PID
		build := func(prev *server.Server, cfg string) *server.Server {
			t.Helper()
			parsed, err := config.Parse([]byte(cfg), "test.toml", func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			next, err := server.New(server.Options{Config: parsed, Previous: prev, Logger: slog.New(slog.DiscardHandler),
				Lifecycle: lifecycle.Options{PollInterval: 20 * time.Millisecond, ProbeTimeout: time.Second, StopGrace: 2 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(next.Close)
			if err := next.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			return next
		}
		// g.srv is not closed: it still serves a request of its own (not on m1).
		mid := build(g.srv, none)
		gone := func(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
		settles(func() bool { return gone(pid) })
		if !gone(pid) {
			t.Fatalf("m1 (pid %d), removed and unused, still runs while the replaced server serves on", pid)
		}
		last := build(mid, withM)
		if p := last.Processes(); p == nil || p != g.srv.Processes() {
			t.Errorf("the reload that brings the commands back runs a manager of its own beside the first")
		}
	})

	// A reload that changes a managed target's command, removes it, or runs no process at all and
	// a later one that brings it back: hayula_process_starts_total went on from its count only
	// when the reload left the target's process alone. A changed or re-added target counted from
	// zero again, which Prometheus reads as a counter reset, against CONFIG.md's promise that a
	// target's series go on from their count (TestProcessCountsGoOnAcrossReloads).
	t.Run("process counts go on across reloads that change, remove and bring back a target", func(t *testing.T) {
		b := newFake(t, "b")
		cfgs := []string{
			managed("change") + managed("drop") + target("b", b.url(), "private") +
				"[routes.rchange]\ntargets = [\"change\"]\n[routes.rdrop]\ntargets = [\"drop\"]\n[routes.rb]\ntargets = [\"b\"]\n",
			managed("change", "-delay", "1ms") + target("b", b.url(), "private") +
				"[routes.rchange]\ntargets = [\"change\"]\n[routes.rb]\ntargets = [\"b\"]\n",
			target("b", b.url(), "private") + "[routes.rb]\ntargets = [\"b\"]\n",
			managed("change") + managed("drop") + target("b", b.url(), "private") +
				"[routes.rchange]\ntargets = [\"change\"]\n[routes.rdrop]\ntargets = [\"drop\"]\n[routes.rb]\ntargets = [\"b\"]\n",
		}
		// The routes each configuration asks, and the starts each target has counted after.
		asks := [][]string{{"rchange", "rdrop"}, {"rchange"}, {"rb"}, {"rchange", "rdrop"}}
		want := []map[string]int{{"change": 1, "drop": 1}, {"change": 2}, {}, {"change": 3, "drop": 2}}
		g := newGateway(t, cfgs[0], nil, fast)
		for i, cfg := range cfgs {
			if i > 0 {
				parsed, err := config.Parse([]byte(cfg), "test.toml", func(string) string { return "" })
				if err != nil {
					t.Fatal(err)
				}
				next, err := server.New(server.Options{Config: parsed, Previous: g.srv, Logger: slog.New(slog.DiscardHandler),
					Lifecycle: lifecycle.Options{PollInterval: 20 * time.Millisecond, ProbeTimeout: time.Second, StopGrace: 2 * time.Second}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(next.Close)
				g.srv.Close()
				if err := next.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				g = &gateway{srv: next, ts: serveLive(t, next.Handler()), clock: g.clock}
			}
			for _, r := range asks[i] {
				if rep := g.chat(t, r); rep.status != 200 {
					t.Fatalf("configuration %d, %s: %d %s", i, r, rep.status, rep.body)
				}
			}
			_, lines := scrape(t, g)
			for name, n := range want[i] {
				if l := fmt.Sprintf("hayula_process_starts_total{target=%q} %d", name, n); !lines[l] {
					t.Errorf("configuration %d: /metrics has no line %q", i, l)
				}
			}
		}
	})

	t.Run("a strict request waiting for its process makes no attempt once a reload made the target public", func(t *testing.T) {
		// The process is ready when the gate says so: the request waits in the lifecycle's
		// start (nothing else in the route can serve it) across the reload.
		var ready atomic.Bool
		gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if !ready.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		defer gate.Close()
		m := strings.Replace(managed("m"), `health_path = "http://127.0.0.1:{port}/health"`,
			`health_path = "`+gate.URL+`/health"`+"\nhealth_interval = \"0s\"", 1)
		build := func(text string, prev *server.Server) *server.Server {
			cfg, err := config.Parse([]byte(text), "test.toml", func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			o := server.Options{Config: cfg, Previous: prev, Logger: slog.New(slog.DiscardHandler)}
			fast(&o)
			s, err := server.New(o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		}
		old := build(m+"[routes.r]\ntargets = [\"m\"]\n", nil)
		l := server.NewLive(old)
		h := serveLive(t, l)
		done := make(chan reply, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions",
				strings.NewReader(`{"model":"r","messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Hayula-Privacy", "strict")
			resp, err := h.Client().Do(req)
			if err != nil {
				done <- reply{status: -1, body: []byte(err.Error())}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			done <- reply{status: resp.StatusCode, body: b}
		}()
		settles(func() bool { return old.Processes().Status()[0].State == lifecycle.StateStarting })
		if st := old.Processes().Status()[0]; st.State != lifecycle.StateStarting {
			t.Fatalf("the request started no process: %+v", st)
		}
		public := strings.Replace(m, "adapter = \"openai\"", "adapter = \"openai\"\nclass = \"public\"", 1)
		ret := l.Replace(build(public+"[routes.r]\ntargets = [\"m\"]\n", old))
		ready.Store(true)
		rep := <-done
		<-ret.Drained()
		ret.Close()
		if rep.status == http.StatusOK || strings.Contains(string(rep.body), "hello from m") {
			t.Fatalf("the strict request reached m, public since the reload: %d %s", rep.status, rep.body)
		}
		if rep.status != http.StatusServiceUnavailable || !strings.Contains(string(rep.body), "no_private_target") {
			t.Errorf("status %d %s, want 503 no_private_target, as a request after the reload gets", rep.status, rep.body)
		}
	})

	t.Run("wait_healthy: Start returns once the pinned members are healthy", func(t *testing.T) {
		cfg := "wait_healthy = true\n" + strings.Replace(managed("p"), "load_timeout", "group = \"g\"\nload_timeout", 1) +
			"[groups.g]\nslots = 1\npinned = [\"p\"]\n[routes.r]\ntargets = [\"p\"]\n"
		g := newGateway(t, cfg, nil, fast)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := g.srv.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if st := g.srv.Processes().State("p"); st != lifecycle.StateReady {
			t.Fatalf("after Start: %s, want ready", st)
		}
	})
}

// slowAttemptLog is a log handler that takes 100 ms over each "attempt failed" line.
type slowAttemptLog struct{ slog.Handler }

func (h slowAttemptLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "attempt failed" {
		time.Sleep(100 * time.Millisecond)
	}
	return h.Handler.Handle(ctx, r)
}

// holdingUpstream answers every attempt with a two-event stream whose second event waits for
// release, and remembers the target it was asked to reach.
type holdingUpstream struct {
	release chan struct{}
	mu      sync.Mutex
	got     *core.Target
}

func (u *holdingUpstream) Chat(ctx context.Context, t *core.Target, _ *core.Request) (*upstream.Response, error) {
	u.mu.Lock()
	u.got = t
	u.mu.Unlock()
	return &upstream.Response{Stream: &heldStream{ctx: ctx, release: u.release}}, nil
}

func (u *holdingUpstream) target() *core.Target {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.got
}

// heldStream's second event waits for release or for the request's end (ctx), so that a test
// failing before it closes release leaves no handler behind for the server's close to wait on.
type heldStream struct {
	ctx     context.Context
	release chan struct{}
	n       int
}

func (s *heldStream) Next() ([]byte, error) {
	s.n++
	switch s.n {
	case 1:
		return []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`), nil
	case 2:
		select {
		case <-s.release:
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
		return []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`), nil
	}
	return nil, io.EOF
}

func (s *heldStream) Close() error { return nil }
