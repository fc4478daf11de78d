//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/hayula/gateway/config"
)

// TestStopDrainsReplacedConfigurationsLoads: told to stop, the gateway answers at once a request
// that waits for a model process to start (503, the process stopped: lifecycle.Manager.Drain)
// rather than hold it through the shutdown grace and cut it off, when the request and its process
// are a configuration's that a reload replaced with one that runs no process.
func TestStopDrainsReplacedConfigurationsLoads(t *testing.T) {
	up := fakeModel(t, nil)
	dir := t.TempDir()
	path, pidFile := filepath.Join(dir, "gateway.toml"), filepath.Join(dir, "pid")
	// The process never answers its health check: a request for it waits for its load_timeout.
	writeFile(t, path, fmt.Sprintf("listen = \"127.0.0.1:0\"\n\n[targets.p]\nadapter = \"openai\"\n"+
		"url = \"http://127.0.0.1:{port}/v1\"\nclass = \"private\"\nload_timeout = \"10m\"\n"+
		"command = [\"/bin/sh\", \"-c\", \"echo $$ > %s; exec sleep 600\", \"{port}\"]\n\n[routes.r]\ntargets = [\"p\"]\n", pidFile))
	cfg, err := config.Load(path, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	rl := &reloader{path: path, getenv: os.Getenv, log: log, hup: make(chan os.Signal, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exit := make(chan error, 1)
	go func() { exit <- serve(ctx, cfg, log, rl, nil) }()
	defer func() {
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs)
		}
	}()
	addrRE := regexp.MustCompile(`hayula gateway listening"? addr=(\S+)`)
	var base string
	waitFor(t, "the gateway to listen", func() bool {
		if m := addrRE.FindStringSubmatch(logs.String()); m != nil {
			base = "http://" + m[1]
		}
		return base != ""
	})

	type answer struct {
		status int
		body   string
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Post(base+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"r","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- answer{status: resp.StatusCode, body: string(b), err: err}
	}()
	waitFor(t, "the process to start", func() bool { return readPID(pidFile) != 0 })

	writeFile(t, path, gatewayFile("127.0.0.1:0", up.URL, "r"))
	rl.hup <- syscall.SIGHUP
	waitFor(t, "the reload", func() bool { return strings.Contains(logs.String(), "configuration reloaded") })
	cancel()
	a := <-got
	if a.err != nil || a.status != http.StatusServiceUnavailable {
		t.Errorf("the request waiting for the replaced configuration's process, once the gateway stops: %d %q %v; want 503 at once",
			a.status, a.body, a.err)
	}
	if err := <-exit; err != nil {
		t.Errorf("serve: %v", err)
	}
}
