//go:build unix

package server_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// TestReloadedProcessStderrKeyRedacted: a target with a command and a key that a reload adds
// has its key redacted from the process's stderr lines the log quotes, as one the gateway
// started with does (TestProcessStderrKeyRedacted). The lifecycle manager the reload adopts kept
// the redaction of the first configuration's keys, none here, and logged the key.
func TestReloadedProcessStderrKeyRedacted(t *testing.T) {
	const key = "sk-reloaded-stderr-key-0123456789abcdef"
	t.Setenv("HAYULA_TEST_RELOAD_STDERR_KEY", key)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	first := `[targets.a]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
command = ["/bin/sh", "-c", "exit 3", "{port}"]
load_timeout = "20s"

[routes.ra]
targets = ["a"]
`
	g := newGateway(t, first, nil, func(o *server.Options) { o.Logger = log })
	second := first + `
[targets.m]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
api_key_env = "HAYULA_TEST_RELOAD_STDERR_KEY"
command = ["/bin/sh", "-c", "echo \"settings: api_key=$HAYULA_TEST_RELOAD_STDERR_KEY port=$0\" >&2; exit 3", "{port}"]
load_timeout = "20s"

[routes.r]
targets = ["m"]
`
	parsed, err := config.Parse([]byte(second), "test.toml", func(n string) string {
		if n == "HAYULA_TEST_RELOAD_STDERR_KEY" {
			return key
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	next, err := server.New(server.Options{Config: parsed, Previous: g.srv, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(next.Close)
	if next.Processes() != g.srv.Processes() {
		t.Fatal("the reload built a lifecycle manager of its own: this test needs the adopted one")
	}
	g.srv.Close()
	if err := next.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := serveLive(t, next.Handler())
	if rep := (&gateway{srv: next, ts: h}).chat(t, "r"); rep.status == 200 {
		t.Fatalf("the crashing process served: %s", rep.body)
	}
	out := logs.String()
	if !strings.Contains(out, "settings: api_key=") {
		t.Fatalf("the process's stderr is not in the log:\n%s", out)
	}
	if strings.Contains(out, key) {
		t.Errorf("the log holds the key of the target the reload added:\n%s", out)
	}
}
