//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/internal/testsink"
	"github.com/hayula/gateway/metrics"
	"github.com/hayula/gateway/server"
)

// syncBuffer is a log destination that a test reads while the code under test writes.
type syncBuffer = testsink.Buffer

// fakeModel is an OpenAI-compatible upstream: a whole answer, or a stream whose second event
// waits for hold to close.
func fakeModel(t *testing.T, hold chan struct{}) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		chunk := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
		if bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", chunk)
			w.(http.Flusher).Flush()
			<-hold
			fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", strings.Replace(chunk, "null", `"stop"`, 1))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(up.Close)
	return up
}

// gatewayFile is a configuration with the routes named, each to the fake model at url.
func gatewayFile(listen, url string, routes ...string) string {
	s := fmt.Sprintf("listen = %q\n\n[targets.m]\nadapter = \"openai\"\nurl = %q\nclass = \"private\"\n\n", listen, url+"/v1")
	for _, r := range routes {
		s += fmt.Sprintf("[routes.%s]\ntargets = [\"m\"]\n", r)
	}
	return s
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func chatStatus(t *testing.T, base, model string) int {
	t.Helper()
	resp, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestReload drives reload directly: a route added serves the next request; a broken file is
// logged, error by error, and leaves the running configuration serving; a changed listen is
// warned about once and the rest applied; the reload series count it all.
func TestReload(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	up := fakeModel(t, nil)
	path := filepath.Join(t.TempDir(), "gateway.toml")
	writeFile(t, path, gatewayFile("127.0.0.1:8000", up.URL, "r"))
	cfg, err := config.Load(path, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	reloads := new(metrics.Reloads)
	srv, err := server.New(server.Options{Config: cfg, Logger: log, Reloads: reloads})
	if err != nil {
		t.Fatal(err)
	}
	live := server.NewLive(srv)
	ts := httptest.NewServer(live)
	rl := &reloader{path: path, getenv: os.Getenv, log: log,
		live: live, addr: ts.Listener.Addr(), running: cfg.Listen, reloads: reloads}
	defer func() {
		ts.Close()
		live.Server().Close()
	}()
	ctx := context.Background()

	if got := chatStatus(t, ts.URL, "r2"); got != 404 {
		t.Fatalf("r2 before the reload: %d", got)
	}
	writeFile(t, path, gatewayFile("127.0.0.1:8000", up.URL, "r", "r2"))
	if !rl.reload(ctx) {
		t.Fatalf("the reload failed:\n%s", logs)
	}
	if got := chatStatus(t, ts.URL, "r2"); got != 200 {
		t.Fatalf("r2 after the reload: %d\n%s", got, logs)
	}
	if want := `msg="configuration reloaded" file=` + path + ` routes=2 targets=1 keys=0 managed=0`; !strings.Contains(logs.String(), want) {
		t.Errorf("the log lacks %q:\n%s", want, logs)
	}

	writeFile(t, path, gatewayFile("127.0.0.1:8000", up.URL, "r")+"[routes.r3]\ntargets = [\"nope\"]\ncolour = \"red\"\n")
	if rl.reload(ctx) {
		t.Fatal("a broken file was applied")
	}
	log1 := logs.String()
	for _, want := range []string{`level=ERROR msg="reload: ` + path, "nope", "colour", "reload failed: still serving the previous configuration"} {
		if !strings.Contains(log1, want) {
			t.Errorf("the log lacks %q:\n%s", want, log1)
		}
	}
	if got := chatStatus(t, ts.URL, "r2"); got != 200 {
		t.Errorf("r2 after the failed reload: %d", got)
	}

	writeFile(t, path, gatewayFile("127.0.0.1:9999", up.URL, "r", "r4"))
	for range 2 {
		if !rl.reload(ctx) {
			t.Fatalf("a reload with another listen failed:\n%s", logs)
		}
	}
	if n := strings.Count(logs.String(), "listen changed"); n != 1 {
		t.Errorf("the listen change was warned about %d times, want once:\n%s", n, logs)
	}
	if got := chatStatus(t, ts.URL, "r4"); got != 200 || live.Server().Config().Listen != "127.0.0.1:8000" {
		t.Errorf("r4: %d; listen %q", got, live.Server().Config().Listen)
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`hayula_config_reloads_total{result="ok"} 3`, `hayula_config_reloads_total{result="failed"} 1`} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}

// TestServeReloadsOnSIGHUP: gateway serve reloads on SIGHUP; a stream in flight across the
// reload ends on the server it began on, holds no later reload, and that server is closed once
// the stream has ended.
func TestServeReloadsOnSIGHUP(t *testing.T) {
	hold := make(chan struct{})
	up := fakeModel(t, hold)
	path := filepath.Join(t.TempDir(), "gateway.toml")
	writeFile(t, path, gatewayFile("127.0.0.1:0", up.URL, "r"))
	base, logs, cancel, code := serving(t, path)
	defer cancel()
	resp, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	writeFile(t, path, gatewayFile("127.0.0.1:0", up.URL, "r", "r2"))
	// The test's own channel sees each signal as the runtime hands it to the gateway's too: each
	// is waited for, so that none is still on its way (or merged with the next by the kernel)
	// when the stream ends.
	seen := make(chan os.Signal, 4)
	signal.Notify(seen, syscall.SIGHUP)
	defer signal.Stop(seen)
	hup := func() {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		select {
		case <-seen:
		case <-time.After(10 * time.Second):
			t.Fatal("SIGHUP was not delivered")
		}
	}
	hup()
	waitFor(t, "the first reload", func() bool { return strings.Contains(logs.String(), "configuration reloaded") })
	if got := chatStatus(t, base, "r2"); got != 200 {
		t.Fatalf("r2 after SIGHUP: %d\n%s", got, logs)
	}
	// The stream does not hold the reloads that come after it.
	hup()
	waitFor(t, "a second reload while the stream is in flight", func() bool {
		return strings.Count(logs.String(), "configuration reloaded") >= 2
	})
	close(hold)
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("the stream across the reloads: %v %q", err, rest)
	}
	waitFor(t, "the first configuration to be closed after its stream", func() bool {
		return strings.Contains(logs.String(), "last request has ended; closed it")
	})
	cancel()
	if c := <-code; c != 0 {
		t.Errorf("exit %d\n%s", c, logs)
	}
}

// waitFor polls cond, for what a real server and signals do in their own time. Its bound only
// turns a wait that would hang into a failure: a minute, for a loaded machine under -race.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNoReloadOnceStopping: a SIGHUP that comes once the gateway has begun to stop, or is still
// queued then, is logged and not applied: a reload then would build a server, and start its
// pinned processes, only to close them. select picks among ready cases at random, so the loop is
// run many times.
func TestNoReloadOnceStopping(t *testing.T) {
	logs := &syncBuffer{}
	rl := &reloader{path: filepath.Join(t.TempDir(), "none.toml"), getenv: os.Getenv,
		log: slog.New(slog.NewTextHandler(logs, nil)), hup: make(chan os.Signal, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 32 {
		served := make(chan struct{})
		done := make(chan struct{})
		rl.hup <- syscall.SIGHUP
		go func() {
			rl.loop(ctx, served)
			close(done)
		}()
		waitFor(t, "the SIGHUP to be ignored", func() bool { return strings.Count(logs.String(), "SIGHUP ignored") == i+1 })
		close(served)
		<-done
	}
	if strings.Contains(logs.String(), "reloading") {
		t.Errorf("a reload ran after the stop:\n%s", logs)
	}
}

// TestReloadAbandonedOnceStopping: a reload under way when the gateway begins to stop applies
// nothing and leaves no process of what it built running: stopped at once when the server it
// built ran its own, with the gateway's stop (closeRetired) when it took over the running one's.
func TestReloadAbandonedOnceStopping(t *testing.T) {
	up := fakeModel(t, nil)
	// pinned is a group whose pinned member's process writes its pid to the file and never
	// becomes healthy: it runs from the moment the configuration is built.
	pinned := func(name, pidFile string) string {
		return fmt.Sprintf(`
[targets.%[1]s]
adapter = "openai"
url     = "http://127.0.0.1:{port}/v1"
command = ["/bin/sh", "-c", "echo $$ > %[2]s; exec sleep 60", "{port}"]
group   = "g%[1]s"

[groups.g%[1]s]
slots  = 1
pinned = ["%[1]s"]
`, name, pidFile)
	}
	for _, tc := range []struct {
		name    string
		running bool // the running configuration has a process of its own, which the new one takes over
		when    string
	}{
		{"while loading the file", false, "load"},
		{"once built, with processes of its own", false, "built"},
		{"once built, over the running processes", true, "built"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "gateway.toml")
			// A key from the environment, so that loading the file calls getenv. It is in both
			// files: a key added would change what a running process is not given (Withhold),
			// and the reload would restart it.
			base := gatewayFile("127.0.0.1:8000", up.URL, "r") + fmt.Sprintf("\n[targets.k]\nadapter = \"openai\"\nurl = %q\n"+
				"class = \"private\"\napi_key_env = \"HAYULA_TEST_KEY\"\n", up.URL+"/v1")
			if tc.running {
				base += pinned("a", filepath.Join(dir, "a.pid"))
			}
			writeFile(t, path, base)
			keyEnv := func(k string) string {
				if k == "HAYULA_TEST_KEY" {
					return "k"
				}
				return os.Getenv(k)
			}
			cfg, err := config.Load(path, keyEnv)
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
			var runningPID int
			if tc.running {
				waitFor(t, "the running pinned process to start", func() bool {
					runningPID = readPID(filepath.Join(dir, "a.pid"))
					return runningPID != 0
				})
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			newPID := filepath.Join(dir, "b.pid")
			rl := &reloader{path: path, log: log, live: live, running: cfg.Listen,
				addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8000}, getenv: keyEnv}
			switch tc.when {
			case "load":
				rl.getenv = func(k string) string {
					cancel()
					return keyEnv(k)
				}
			case "built":
				rl.afterBuild = func() {
					waitFor(t, "the new pinned process to start", func() bool { return readPID(newPID) != 0 })
					cancel()
				}
			}
			writeFile(t, path, base+pinned("b", newPID))
			if rl.reload(ctx) {
				t.Fatalf("a reload was applied once the gateway was stopping:\n%s", logs)
			}
			if live.Server() != srv || !strings.Contains(logs.String(), "reload abandoned: the gateway is stopping") {
				t.Fatalf("the running server changed, or the log does not say why:\n%s", logs)
			}
			if tc.when == "load" && readPID(newPID) != 0 {
				t.Error("a reload abandoned while loading the file started a process")
			}
			if tc.running {
				// The running server's requests may still use the processes until it stops.
				if pid := readPID(filepath.Join(dir, "a.pid")); pid != runningPID || syscall.Kill(pid, 0) != nil {
					t.Errorf("the running configuration's process %d was stopped before the gateway stopped (now %d):\n%s",
						runningPID, pid, logs)
				}
				rl.closeRetired()
			}
			srv.Close()
			if pid := readPID(newPID); pid != 0 && syscall.Kill(pid, 0) == nil {
				t.Errorf("the abandoned reload's process %d still runs:\n%s", pid, logs)
			}
			if pid := readPID(filepath.Join(dir, "a.pid")); pid != 0 && syscall.Kill(pid, 0) == nil {
				t.Errorf("the running configuration's process %d still runs after the stop", pid)
			}
		})
	}
}

// serving runs `gateway serve --config path` until cancel is called, and returns once it listens:
// its base URL, its log (printed if the test fails) and the channel its exit code comes on.
func serving(t *testing.T, path string) (base string, logs *syncBuffer, cancel context.CancelFunc, code <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs = &syncBuffer{}
	exit := make(chan int, 1)
	go func() { exit <- run(ctx, []string{"serve", "--config", path}, io.Discard, logs) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs)
		}
	})
	addrRE := regexp.MustCompile(`hayula gateway listening"? addr=(\S+)`)
	waitFor(t, "the gateway to listen", func() bool {
		if m := addrRE.FindStringSubmatch(logs.String()); m != nil {
			base = "http://" + m[1]
		}
		return base != ""
	})
	return base, logs, cancel, exit
}

// readPID is the pid a test process wrote to path; 0 until it has.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		return 0
	}
	return pid
}

// TestReloadRefusesOpenOffLoopback: a reload whose file has no [[keys]] is refused while the
// gateway listens off loopback, whatever listen the file names.
func TestReloadRefusesOpenOffLoopback(t *testing.T) {
	for _, listen := range []string{"127.0.0.1:8000", "0.0.0.0:8000"} {
		t.Run(listen, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gateway.toml")
			writeFile(t, path, gatewayFile(listen, "http://127.0.0.1:1", "r"))
			logs := &syncBuffer{}
			reloads := new(metrics.Reloads)
			rl := &reloader{path: path, listen: "0.0.0.0:8000", getenv: os.Getenv,
				log: slog.New(slog.NewTextHandler(logs, nil)), running: "0.0.0.0:8000",
				addr: &net.TCPAddr{IP: net.IPv4zero, Port: 8000}, reloads: reloads}
			if rl.reload(context.Background()) {
				t.Fatalf("an open gateway off loopback was applied:\n%s", logs)
			}
			if !strings.Contains(logs.String(), "loopback") {
				t.Errorf("the log does not say why:\n%s", logs)
			}
		})
	}
}

// TestReloadWaitHealthyBounded: a reload that brings the first managed targets with wait_healthy
// waits for its pinned members for their load_timeout at most, not for good: a pinned process
// that never becomes healthy fails the reload, the running configuration goes on serving, and the
// next SIGHUP is not held behind it.
func TestReloadWaitHealthyBounded(t *testing.T) {
	up := fakeModel(t, nil)
	path := filepath.Join(t.TempDir(), "gateway.toml")
	writeFile(t, path, gatewayFile("127.0.0.1:8000", up.URL, "r"))
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
	live := server.NewLive(srv)
	ts := httptest.NewServer(live)
	defer func() {
		ts.Close()
		live.Server().Close()
	}()
	rl := &reloader{path: path, getenv: os.Getenv, log: log,
		live: live, addr: ts.Listener.Addr(), running: cfg.Listen}
	writeFile(t, path, "wait_healthy = true\n"+gatewayFile("127.0.0.1:8000", up.URL, "r")+`
[targets.p]
adapter = "openai"
url     = "http://127.0.0.1:{port}/v1"
command = ["/bin/sh", "-c", "echo model file missing >&2; exit 3", "{port}"]
group   = "g"
load_timeout = "300ms"

[groups.g]
slots  = 1
pinned = ["p"]
`)
	done := make(chan bool, 1)
	go func() { done <- rl.reload(context.Background()) }()
	select {
	case ok := <-done:
		if ok {
			t.Fatalf("a reload whose pinned member never became healthy was applied:\n%s", logs)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the reload still waits for the pinned member:\n%s", logs)
	}
	if live.Server() != srv || chatStatus(t, ts.URL, "r") != 200 {
		t.Errorf("the running configuration does not serve after the failed reload:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "waiting for pinned [p]") {
		t.Errorf("the log does not say what the reload waited for:\n%s", logs)
	}
}

// TestReloadServesLongStreamToItsEnd: a reload does not close the server it replaced under a
// stream that runs on (no grace, as nginx's old workers finish their requests): here the new
// configuration runs no process, so closing the old one would stop the process its stream holds.
// The stream completes; once it has, the old server is closed and its process stopped.
func TestReloadServesLongStreamToItsEnd(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	up := fakeModel(t, hold)
	path := filepath.Join(t.TempDir(), "gateway.toml")
	// The process stands in for a model server: the model itself is the test's, at a fixed URL.
	writeFile(t, path, fmt.Sprintf("listen = \"127.0.0.1:8000\"\n\n[targets.m]\nadapter = \"openai\"\nurl = %q\n"+
		"class = \"private\"\ncommand = [\"/bin/sh\", \"-c\", \"exec sleep 60\"]\n\n[routes.r]\ntargets = [\"m\"]\n", up.URL+"/v1"))
	rl, ts, logs := reloadRig(t, path)
	live, old := rl.live, rl.live.Server()
	defer func() {
		release() // a test that failed with the stream held must not wait for it (before the rig's cleanup)
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs)
		}
	}()
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pid := old.Processes().Status()[0].PID
	if pid == 0 || syscall.Kill(pid, 0) != nil {
		t.Fatalf("no process serves the stream: pid %d", pid)
	}

	writeFile(t, path, gatewayFile("127.0.0.1:8000", up.URL, "r"))
	if !rl.reload(context.Background()) {
		t.Fatal("the reload failed")
	}
	if live.Server() == old {
		t.Fatal("the reload was not applied")
	}
	// Whatever a grace would have been, the old server is open until its stream ends.
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the process the stream holds was stopped under it: %v", err)
	}
	release()
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), `"finish_reason":"stop"`) || !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("the stream across the reload: %v %q", err, rest)
	}
	waitFor(t, "the old configuration's process to stop once its stream ended", func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}

// TestReloadAppliesNothingOfABrokenFile: a file whose new route comes before a syntax error, or
// whose new target names an unset api_key_env, applies nothing: the new route is not served, the
// old ones are, and the error names the file and line.
func TestReloadAppliesNothingOfABrokenFile(t *testing.T) {
	up := fakeModel(t, nil)
	path := filepath.Join(t.TempDir(), "gateway.toml")
	writeFile(t, path, gatewayFile("127.0.0.1:8000", up.URL, "r"))
	getenv := func(string) string { return "" }
	cfg, err := config.Load(path, getenv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	srv, err := server.New(server.Options{Config: cfg, Logger: log, Reloads: new(metrics.Reloads)})
	if err != nil {
		t.Fatal(err)
	}
	live := server.NewLive(srv)
	ts := httptest.NewServer(live)
	defer func() {
		ts.Close()
		live.Server().Close()
	}()
	rl := &reloader{path: path, getenv: getenv, log: log, live: live, addr: ts.Listener.Addr(),
		running: cfg.Listen, reloads: new(metrics.Reloads)}

	for _, tc := range []struct{ name, file, want string }{
		{"syntax error after a new route", gatewayFile("127.0.0.1:8000", up.URL, "r", "new") +
			"[routes.later]\ntargets = [\"m\"\n", path + ":13: routes.later.targets"},
		{"unset api_key_env", gatewayFile("127.0.0.1:8000", up.URL, "r", "new") +
			"[targets.cloud]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\napi_key_env = \"CLOUD_KEY\"\n",
			path + ":15: targets.cloud.api_key_env: environment variable CLOUD_KEY is unset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, path, tc.file)
			if rl.reload(context.Background()) {
				t.Fatal("a broken file was applied")
			}
			if !strings.Contains(logs.String(), tc.want) {
				t.Errorf("the log lacks %q:\n%s", tc.want, logs)
			}
			if got := chatStatus(t, ts.URL, "new"); got != 404 {
				t.Errorf("the new route after the failed reload: %d, want 404", got)
			}
			if got := chatStatus(t, ts.URL, "r"); got != 200 {
				t.Errorf("the old route after the failed reload: %d, want 200", got)
			}
		})
	}
}
