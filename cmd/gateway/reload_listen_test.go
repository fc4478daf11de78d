//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/metrics"
	"github.com/hayula/gateway/server"
)

// keyedGatewayFile is gatewayFile with a key ("test", whose SHA-256 this is), so that listen may
// name a host off loopback.
func keyedGatewayFile(listen, url string, routes ...string) string {
	return gatewayFile(listen, url, routes...) +
		"\n[[keys]]\nname = \"k\"\nsha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n"
}

// hostStatus is the status of a chat on model sent with the Host header host.
func hostStatus(t *testing.T, base, host, model string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Authorization", "Bearer test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// reloadRig serves the configuration file at path as serve does (server.New, Start, a Live),
// behind an httptest server, with a reloader of the file; all is closed when the test ends.
func reloadRig(t *testing.T, path string) (*reloader, *httptest.Server, *syncBuffer) {
	t.Helper()
	cfg, err := config.Load(path, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	srv, err := server.New(server.Options{Config: cfg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	live := server.NewLive(srv)
	ts := httptest.NewServer(live)
	rl := &reloader{path: path, getenv: os.Getenv, log: log,
		live: live, addr: ts.Listener.Addr(), running: cfg.Listen, reloads: new(metrics.Reloads)}
	t.Cleanup(func() {
		ts.Close()
		rl.closeRetired()
		live.Server().Close()
	})
	return rl, ts, logs
}

// TestReloadKeepsListenHostAllowed: the host name the gateway listens under is served (CONFIG.md,
// Browsers: "the name listen gives") after a reload whose file names another listen, which does
// not move the listener; the file's new name, under which nothing listens, is not let in by it.
func TestReloadKeepsListenHostAllowed(t *testing.T) {
	up := fakeModel(t, nil)
	path := filepath.Join(t.TempDir(), "gateway.toml")
	writeFile(t, path, keyedGatewayFile("gw.lan:8000", up.URL, "r"))
	rl, ts, logs := reloadRig(t, path)
	if got := hostStatus(t, ts.URL, "gw.lan:8000", "r"); got != 200 {
		t.Fatalf("Host gw.lan before the reload: %d", got)
	}
	writeFile(t, path, keyedGatewayFile("other.lan:8000", up.URL, "r"))
	if !rl.reload(context.Background()) {
		t.Fatalf("the reload failed:\n%s", logs)
	}
	if got := hostStatus(t, ts.URL, "gw.lan:8000", "r"); got != 200 {
		t.Errorf("Host gw.lan, the name still listened under, after the reload: %d, want 200", got)
	}
	if got := hostStatus(t, ts.URL, "other.lan:8000", "r"); got != 403 {
		t.Errorf("Host other.lan, the file's listen that the reload did not apply: %d, want 403", got)
	}
}

// TestReloadWarnsListenChangeAgain: a listen change is warned about once however many reloads
// repeat it, and again when the file, after naming the running listen, changes it once more.
func TestReloadWarnsListenChangeAgain(t *testing.T) {
	up := fakeModel(t, nil)
	path := filepath.Join(t.TempDir(), "gateway.toml")
	writeFile(t, path, gatewayFile("127.0.0.1:8000", up.URL, "r"))
	rl, _, logs := reloadRig(t, path)
	for i, step := range []struct {
		listen string
		warned int // listen changes warned about so far
	}{{"127.0.0.1:9999", 1}, {"127.0.0.1:9999", 1}, {"127.0.0.1:8000", 1}, {"127.0.0.1:9999", 2}} {
		writeFile(t, path, gatewayFile(step.listen, up.URL, "r"))
		if !rl.reload(context.Background()) {
			t.Fatalf("reload %d failed:\n%s", i+1, logs)
		}
		if n := strings.Count(logs.String(), "listen changed"); n != step.warned {
			t.Fatalf("after reload %d (listen %s): %d warnings, want %d:\n%s", i+1, step.listen, n, step.warned, logs)
		}
	}
}

// TestReloadWarnsLifecycleKeysKept: while the gateway runs processes, a reload applies the file
// but for state_file and wait_healthy (CONFIG.md, Reloading), and says so, as for listen; a file
// that names the values in use is not warned about.
func TestReloadWarnsLifecycleKeysKept(t *testing.T) {
	up := fakeModel(t, nil)
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.toml")
	file := func(top string) string {
		return top + fmt.Sprintf("listen = \"127.0.0.1:8000\"\n\n[targets.m]\nadapter = \"openai\"\nurl = %q\n"+
			"class = \"private\"\ncommand = [\"/bin/sh\", \"-c\", \"exec sleep 60\"]\n\n[routes.r]\ntargets = [\"m\"]\n", up.URL+"/v1")
	}
	stateA, stateB := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	writeFile(t, path, file(fmt.Sprintf("state_file = %q\n", stateA)))
	rl, _, logs := reloadRig(t, path)
	for i, step := range []struct {
		top  string
		want []string // warnings the reload logs
	}{
		{fmt.Sprintf("state_file = %q\n", stateA), nil},
		{fmt.Sprintf("state_file = %q\n", stateB), []string{"state_file changed"}},
		{fmt.Sprintf("state_file = %q\nwait_healthy = true\n", stateA), []string{"wait_healthy changed"}},
	} {
		before := len(logs.String())
		writeFile(t, path, file(step.top))
		if !rl.reload(context.Background()) {
			t.Fatalf("reload %d failed:\n%s", i+1, logs)
		}
		got := logs.String()[before:]
		for _, w := range step.want {
			if !strings.Contains(got, w) {
				t.Errorf("reload %d: the log lacks %q:\n%s", i+1, w, got)
			}
		}
		// The reload's own warnings; the file's (config: …) are logged at each reload too.
		if n := strings.Count(got, `level=WARN msg="reload:`); n != len(step.want) {
			t.Errorf("reload %d: %d reload warnings, want %d:\n%s", i+1, n, len(step.want), got)
		}
	}
}
