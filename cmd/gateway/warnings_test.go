package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeLogsWarnings: serve logs what check-config lists under "warnings", as CONFIG.md says
// the start-up log does: here a target left private by default (no class) whose url names a
// cloud API, so that strict requests may reach it.
func TestServeLogsWarnings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.toml")
	cfg := `listen = "127.0.0.1:0"

[targets.cloud]
adapter = "openai"
url     = "https://api.openai.com/v1"
health_interval = "0s"

[routes.r]
targets = ["cloud"]
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"serve", "--config", path}, &out, &errb)
	log := errb.String()
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, log)
	}
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, "target cloud: class is private") {
		t.Errorf("no warning of the target left private in the log:\n%s", log)
	}
}
