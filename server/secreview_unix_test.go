//go:build unix

package server_test

import (
	"strings"
	"testing"
)

// TestProcessStderrKeyRedacted: the last lines a managed process wrote to stderr, which the
// gateway logs when it crashes or does not load in time, are the model server's own words, and
// may hold the key it was given (a server that prints its settings at start): every target's
// key is redacted from them, as from every other line the gateway logs.
func TestProcessStderrKeyRedacted(t *testing.T) {
	const key = "sk-stderr-key-0123456789abcdef"
	t.Setenv("HAYULA_TEST_STDERR_KEY", key)
	var logs syncBuffer
	cfg := `[targets.m]
adapter = "openai"
url = "http://127.0.0.1:{port}/v1"
api_key_env = "HAYULA_TEST_STDERR_KEY"
command = ["/bin/sh", "-c", "echo \"settings: api_key=$HAYULA_TEST_STDERR_KEY port=$0\" >&2; exit 3", "{port}"]
load_timeout = "20s"

[routes.r]
targets = ["m"]
`
	g := newGateway(t, cfg, map[string]string{"HAYULA_TEST_STDERR_KEY": key}, withLog(&logs))
	if rep := g.chat(t, "r"); rep.status == 200 {
		t.Fatalf("the crashing process served: %s", rep.body)
	}
	out := logs.String()
	if !strings.Contains(out, "settings: api_key=") {
		t.Fatalf("the process's stderr is not in the log:\n%s", out)
	}
	if strings.Contains(out, key) {
		t.Errorf("the log holds the target's key:\n%s", out)
	}
}
