//go:build unix

package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/internal/testsink"
)

// fakeBin is the fakebackend binary, built once by TestMain; tests only read it.
var fakeBin string

const (
	helperEnv  = "HAYULA_LIFECYCLE_HELPER"
	fakeBinEnv = "HAYULA_LIFECYCLE_FAKEBIN"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(gatewayHelper())
	}
	dir, err := os.MkdirTemp("", "lifecycle-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin = filepath.Join(dir, "fakebackend")
	if out, err := exec.Command("go", "build", "-o", fakeBin, "./testdata/fakebackend").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building fakebackend: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// gatewayHelper is a stand-in gateway run in a child test process: it starts one managed target,
// prints the target's pid, and waits to be killed.
func gatewayHelper() int {
	m, err := New([]Spec{fake("a")}, nil, Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, _, err := m.Ensure(context.Background(), "a"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(m.Status()[0].PID)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test kills us
	return 0
}

func fake(name string, args ...string) Spec {
	bin := fakeBin
	if bin == "" {
		bin = os.Getenv(fakeBinEnv)
	}
	return Spec{
		Name:      name,
		Command:   append([]string{bin, "-port", PortPlaceholder, "-name", name}, args...),
		URL:       "http://127.0.0.1:" + PortPlaceholder + "/v1",
		HealthURL: "http://127.0.0.1:" + PortPlaceholder + "/health",
	}
}

func inGroup(g string, s Spec) Spec { s.Group = g; return s }

type harness struct {
	m     *Manager
	clock *fakeClock
	log   *syncBuffer
	grace time.Duration

	graceOnce sync.Once
	graceStop chan struct{} // closed to end passGraces
	graceDone chan struct{} // closed when passGraces has ended
}

// newHarness builds a Manager on a fake clock with fast polling, closes it when the test ends and
// shows its log if the test failed.
func newHarness(t *testing.T, specs []Spec, groups []GroupSpec, o Options) *harness {
	t.Helper()
	h := &harness{clock: newFakeClock(), log: &syncBuffer{}}
	o.Clock = h.clock
	o.Logger = slog.New(slog.NewTextHandler(h.log, nil))
	if o.PollInterval == 0 {
		o.PollInterval = 20 * time.Millisecond
	}
	if o.ProbeTimeout == 0 {
		o.ProbeTimeout = 500 * time.Millisecond
	}
	if o.StopGrace == 0 {
		o.StopGrace = 5 * time.Second
	}
	h.grace = o.StopGrace
	m, err := New(specs, groups, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.m = m
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Members that ignore SIGTERM are still running: let their grace pass.
		h.passGraces()
		err := m.Close(ctx)
		close(h.graceStop)
		<-h.graceDone
		if err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("manager log:\n%s", h.log.String())
		}
	})
	return h
}

// passGraces makes every SIGTERM grace run out as soon as it starts, from now until the test
// ends, by advancing the clock to it: for tests whose members ignore SIGTERM but that are not
// about the grace. A grace is told from the manager's other timers by its duration.
func (h *harness) passGraces() {
	h.graceOnce.Do(func() {
		h.graceStop = make(chan struct{})
		h.graceDone = make(chan struct{})
		go func() {
			defer close(h.graceDone)
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-h.graceStop:
					return
				case <-tick.C:
				}
				if left, ok := h.clock.Next(h.grace); ok {
					h.clock.Advance(left)
				}
			}
		}()
	})
}

// use acquires and releases name, failing the test on error, and returns the URL it was given.
func (h *harness) use(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url, release, err := h.m.Ensure(ctx, name)
	if err != nil {
		t.Fatalf("Ensure(%s): %v", name, err)
	}
	release()
	return url
}

func (h *harness) status(t *testing.T, name string) MemberStatus {
	t.Helper()
	for _, s := range h.m.Status() {
		if s.Name == name && !s.Retired {
			return s
		}
	}
	t.Fatalf("no status for %s", name)
	return MemberStatus{}
}

// running lists the ready members, sorted.
func (h *harness) running() []string {
	var out []string
	for _, s := range h.m.Status() {
		if s.State == StateReady && !s.Retired {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out
}

// eventually waits for something a real process does (exit, become healthy). Timers never need
// it: tests advance the fake clock instead.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processGone reports whether pid no longer runs; a zombie nobody reaped yet counts as gone.
// termIgnored reports whether pid ignores SIGTERM yet (Linux's SigIgn mask). A fake started with
// -ignore-term takes a moment to get there, and a SIGTERM sent before kills it by default: a test
// that stops such a process before it was ever ready waits for this first. Without /proc there
// is no telling, and it reports true.
func termIgnored(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return true
	}
	for _, l := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && mask&(1<<(uint(syscall.SIGTERM)-1)) != 0
		}
	}
	return true
}

func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

var testClient = &http.Client{
	Transport: &http.Transport{DisableKeepAlives: true},
	Timeout:   10 * time.Second,
}

// chat sends one chat request and returns the model that answered.
func chat(baseURL string) (string, error) {
	resp, err := testClient.Post(baseURL+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"x","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct{ Model string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", err
	}
	return body.Model, nil
}

// syncBuffer is a log destination that a test reads while the code under test writes.
type syncBuffer = testsink.Buffer

// fakeClock is a Clock that moves only when Advance is called; due timers run inside Advance.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c  *fakeClock
	at time.Time
	d  time.Duration // as asked for
	f  func()
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), d: d, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	i := slices.Index(t.c.timers, t)
	if i < 0 {
		return false
	}
	t.c.timers = slices.Delete(t.c.timers, i, i+1)
	return true
}

// Advance moves the clock and runs the timers that fell due, in deadline order.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	c.timers = slices.DeleteFunc(c.timers, func(t *fakeTimer) bool {
		if !t.at.After(c.now) {
			due = append(due, t)
			return true
		}
		return false
	})
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *fakeTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
}

// Next reports how far the clock is from the earliest pending timer that was asked for d, if any.
func (c *fakeClock) Next(d time.Duration) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, t := range c.timers {
		if t.d == d && (at.IsZero() || t.at.Before(at)) {
			at = t.at
		}
	}
	return max(at.Sub(c.now), 0), !at.IsZero()
}

// Pending counts timers not yet due or stopped.
func (c *fakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// scriptPorts makes m's free ports the given ones first, in order, as a kernel that hands a
// just-freed port to the next bind does, then ones the kernel gives.
func scriptPorts(m *Manager, ports ...int) {
	var mu sync.Mutex
	m.freePort = func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(ports) > 0 {
			p := ports[0]
			ports = ports[1:]
			return p, nil
		}
		return freePort()
	}
}
