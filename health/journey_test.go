package health_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hayula/gateway/core"
	"github.com/hayula/gateway/health"
)

// lockedBuffer is a log a test reads while checks write to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(level string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.SplitSeq(l.b.String(), "\n") {
		if strings.Contains(line, "level="+level) {
			out = append(out, line)
		}
	}
	return out
}

// TestFirstFailedCheckWarned: a target whose url is wrong (Ollama's /v1 under adapter "ollama",
// a port nothing listens on) failed every check from the start, and the log at its default
// level said nothing until enough checks had failed to mark it unavailable, a minute later
// with the default interval, as a change "from healthy", never saying why. The first failed
// check of a run of them is a warning that names the target, the URL and the failure; the
// ones after it stay at debug, and the first check that passes again says so.
func TestFirstFailedCheckWarned(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tg := checked("llama", srv.URL+"/v1/api/tags", 0)
	clk := health.NewManualClock(t0)
	var logs lockedBuffer
	c := health.NewChecker(health.NewTracker(1, clk, health.Policy{CheckFailures: 3}), []*core.Target{tg},
		health.CheckerOptions{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	defer c.Close()
	for range 3 {
		c.CheckAll(context.Background())
	}
	warns := logs.lines("WARN")
	if len(warns) != 1 || !strings.Contains(warns[0], "target=llama") || !strings.Contains(warns[0], srv.URL+"/v1/api/tags") ||
		!strings.Contains(warns[0], "status 404") {
		t.Errorf("three failed checks logged warnings %q; want one naming the target, the URL and the 404", warns)
	}
	if n := len(logs.lines("DEBUG")); n != 2 {
		t.Errorf("%d debug lines for the failed checks after the first; want 2", n)
	}
	failing.Store(false)
	c.CheckAll(context.Background())
	c.CheckAll(context.Background())
	infos := logs.lines("INFO")
	if len(infos) != 1 || !strings.Contains(infos[0], "health check passed") || !strings.Contains(infos[0], "target=llama") {
		t.Errorf("the checks passing again logged %q; want one line", infos)
	}
	failing.Store(true)
	c.CheckAll(context.Background())
	if n := len(logs.lines("WARN")); n != 2 {
		t.Errorf("a new run of failures logged %d warnings in all; want 2", n)
	}
}
