//go:build unix

package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/lifecycle"
	"github.com/hayula/gateway/server"
)

// TestLiveReplace: a stream in flight across a reload ends on the server it began on, byte for
// byte as one that no reload crossed; a route the reload added serves the very next request; the
// replaced server is drained only once its stream has ended.
func TestLiveReplace(t *testing.T) {
	hold := &holdingUpstream{release: make(chan struct{})}
	old := newReloadServer(t, reloadConfig(t, false), hold, nil)
	l := server.NewLive(old)
	h := serveLive(t, l)
	g := &gateway{ts: h}
	if rep := g.chat(t, "r2"); rep.status != 404 {
		t.Fatalf("r2 before the reload: %d", rep.status)
	}
	resp, br, head := openHeldStream(t, h, "r")

	free := &holdingUpstream{release: make(chan struct{})}
	close(free.release)
	next := newReloadServer(t, reloadConfig(t, true), free, old)
	ret := l.Replace(next)
	if rep := g.chat(t, "r2"); rep.status != 200 {
		t.Fatalf("r2 right after the reload: %d %s", rep.status, rep.body)
	}
	if l.Server() != next {
		t.Fatal("Server is not the new server")
	}
	select {
	case <-ret.Drained():
		t.Fatal("the old server is drained while its stream is in flight")
	default:
	}
	if ret.Server() != old || ret.InFlight() != 1 {
		t.Fatalf("Replace: prev is old %v, %d in flight; want old and 1", ret.Server() == old, ret.InFlight())
	}
	close(hold.release)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	got := append(head, rest...)
	<-ret.Drained()
	if n := ret.Close(); n != 0 {
		t.Errorf("Close after the drain: %d in flight, want 0", n)
	}
	if resp.Header.Get("x-hayula-chain") != "m" {
		t.Errorf("chain %q", resp.Header.Get("x-hayula-chain"))
	}
	// The same stream on the new server, which no reload crosses.
	_, br2, head2 := openHeldStream(t, h, "r")
	rest2, err := io.ReadAll(br2)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(head2, rest2...); !bytes.Equal(got, want) || !bytes.Contains(got, []byte(`"finish_reason":"stop"`)) {
		t.Errorf("the stream across the reload:\n%s\nwant:\n%s", got, want)
	}
}

// TestRetiredCloseClosesLateConnections: a replaced server closed while a stream is in flight (the
// gateway stops) is closed under it; the upstream connection that stream gives back when it ends
// is closed too, not left idle in the pool of a server nobody uses.
func TestRetiredCloseClosesLateConnections(t *testing.T) {
	hold := make(chan struct{})
	closed := make(chan struct{}, 16)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		chunk := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", chunk)
		w.(http.Flusher).Flush()
		if waitRelease(r, hold) {
			fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", strings.Replace(chunk, "null", `"stop"`, 1))
		}
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	up.Start()
	// A cleanup, not a defer: it must come after serveLive's, which closes the gateway's
	// connections and so ends a handler still held when the test fails before closing hold.
	t.Cleanup(up.Close)
	cfg, err := config.Parse([]byte(target("m", up.URL+"/v1", "private")+"[routes.r]\ntargets = [\"m\"]\n"),
		"test.toml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	old := newReloadServer(t, cfg, nil, nil)
	l := server.NewLive(old)
	h := serveLive(t, l)
	_, br, _ := openHeldStream(t, h, "r")
	if left := l.Replace(newReloadServer(t, cfg, nil, old)).Close(); left != 1 {
		t.Fatalf("Close: %d in flight, want 1", left)
	}
	close(hold)
	if rest, err := io.ReadAll(br); err != nil || !bytes.Contains(rest, []byte("[DONE]")) {
		t.Fatalf("the stream after its server was closed: %v %q", err, rest)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream connection the late stream gave back is still open")
	}
}

// TestRetiredProcessShown: a managed target's process that a reload retired while a stream holds
// it is shown by explain beside the new member's state (ready, held by the one request), is not
// written twice in the process metrics, and leaves explain once the stream has ended and it has
// stopped.
func TestRetiredProcessShown(t *testing.T) {
	// The model is the test's upstream; the process only stands in for a model server, healthy
	// when the test's health endpoint answers.
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	defer health.Close()
	cfg := func(cmd string) *config.Config {
		c, err := config.Parse([]byte(target("m", health.URL+"/v1", "private",
			fmt.Sprintf(`command = ["/bin/sh", "-c", %q]`, cmd))+"[routes.r]\ntargets = [\"m\"]\n"),
			"test.toml", func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	hold := &holdingUpstream{release: make(chan struct{})}
	fast := lifecycle.Options{PollInterval: 20 * time.Millisecond, ProbeTimeout: time.Second, StopGrace: 2 * time.Second}
	old, err := server.New(server.Options{Config: cfg("exec sleep 60"), Upstream: hold, Lifecycle: fast})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(old.Close)
	l := server.NewLive(old)
	h := serveLive(t, l)
	openHeldStream(t, h, "r")
	next, err := server.New(server.Options{Config: cfg("exec sleep 61"), Upstream: hold, Previous: old, Lifecycle: fast})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(next.Close)
	ret := l.Replace(next)
	g := &gateway{ts: h}

	x := g.explain(t, "r")
	type retired = struct {
		State    string `json:"state"`
		InFlight int    `json:"in_flight"`
	}
	if diff := cmp.Diff([]retired{{"ready", 1}}, x.Candidates[0].Retired); diff != "" || x.Candidates[0].Process != "stopped" {
		t.Errorf("explain while the stream holds the old process: process %q, retired (-want +got):\n%s",
			x.Candidates[0].Process, diff)
	}
	rep := g.do(t, http.MethodGet, "/metrics", "")
	if n := strings.Count(string(rep.body), `hayula_process_state{target="m",state="ready"}`); n != 1 {
		t.Errorf("the ready state of m is written %d times, want once:\n%s", n, rep.body)
	}

	close(hold.release)
	<-ret.Drained()
	settles(func() bool { return len(g.explain(t, "r").Candidates[0].Retired) == 0 })
	if r := g.explain(t, "r").Candidates[0].Retired; len(r) != 0 {
		t.Errorf("explain once the old process was released: retired %+v, want none", r)
	}
}

// TestRetiredChainKeepsHeldProcess: a managed process held by a stream on a server two reloads
// back is not stopped when the server between them, which had taken its manager over and has no
// request, is closed because the latest configuration runs no process: that configuration takes
// the manager over too, and its reload to no target stops the process once the stream has ended
// (TestManagedTargets, "a reload that runs no process").
func TestRetiredChainKeepsHeldProcess(t *testing.T) {
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	defer health.Close()
	managed, err := config.Parse([]byte(target("m", health.URL+"/v1", "private",
		`command = ["/bin/sh", "-c", "exec sleep 60"]`)+"[routes.r]\ntargets = [\"m\"]\n"),
		"test.toml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	hold := &holdingUpstream{release: make(chan struct{})}
	fast := lifecycle.Options{PollInterval: 20 * time.Millisecond, ProbeTimeout: time.Second, StopGrace: 2 * time.Second}
	a, err := server.New(server.Options{Config: managed, Upstream: hold, Lifecycle: fast})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	l := server.NewLive(a)
	h := serveLive(t, l)
	_, br, _ := openHeldStream(t, h, "r")
	st := a.Processes().Status()
	if len(st) != 1 || st[0].PID == 0 {
		t.Fatalf("no process serves the stream: %+v", st)
	}
	pid := st[0].PID

	b, err := server.New(server.Options{Config: managed, Upstream: hold, Previous: a, Lifecycle: fast})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	retA := l.Replace(b)
	// The latest configuration runs no process: b, idle, is closed at once, as a reload does.
	retB := l.Replace(newReloadServer(t, reloadConfig(t, false), hold, b))
	select {
	case <-retB.Drained():
	default:
		t.Fatal("b serves no request, yet is not drained")
	}
	retB.Close()
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the process a's stream holds was stopped when b was closed: %v", err)
	}
	if st := a.Processes().Status(); len(st) != 1 || !st[0].Retired || st[0].State != lifecycle.StateReady || st[0].InFlight != 1 {
		t.Errorf("m under a's stream: %+v, want retired, ready and in use", st)
	}

	close(hold.release)
	if _, err := io.ReadAll(br); err != nil {
		t.Fatal(err)
	}
	<-retA.Drained()
	retA.Close()
	// Now no request holds it: it is stopped.
	settles(func() bool { return syscall.Kill(pid, 0) != nil })
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("process %d still runs once every server that used it was closed", pid)
	}
}
