//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeWaitHealthy: with wait_healthy, serve answers nothing until the pinned targets are
// healthy; one that never becomes healthy keeps it waiting until the context ends, and the
// process is stopped on the way out.
func TestServeWaitHealthy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.toml")
	cfg := `listen = "127.0.0.1:0"
wait_healthy = true

[targets.p]
adapter = "openai"
url     = "http://127.0.0.1:{port}/v1"
command = ["/bin/sh", "-c", "echo model file missing >&2; exit 3", "{port}"]
group   = "g"

[groups.g]
slots  = 1
pinned = ["p"]

[routes.r]
targets = ["p"]
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The context ends once the crash is in the log: a fixed 300 ms bet on a shell starting and
	// failing within it, which a loaded machine under -race need not do.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb syncBuffer
	var code int
	done := make(chan struct{})
	go func() {
		defer close(done)
		code = run(ctx, []string{"serve", "--config", path}, io.Discard, &errb)
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the pinned process's crash in the log", func() bool {
		return strings.Contains(errb.String(), "model file missing")
	})
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("serve did not return once told to stop; stderr:\n%s", errb.String())
	}
	log := errb.String()
	if code != 1 || !strings.Contains(log, "waiting for pinned [p]") {
		t.Fatalf("exit %d, want 1 with the wait's error; stderr:\n%s", code, log)
	}
	if !strings.Contains(log, "wait_healthy: waiting") || strings.Contains(log, "hayula gateway listening") {
		t.Errorf("serve went on without the pinned target; stderr:\n%s", log)
	}
	if !strings.Contains(log, "model file missing") {
		t.Errorf("the crash's stderr is not in the log:\n%s", log)
	}
}
