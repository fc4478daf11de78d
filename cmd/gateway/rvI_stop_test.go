//go:build linux

package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// pidGone reports whether pid no longer runs; a zombie counts as gone.
func pidGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// TestStopMidLoadStopsChildren: the gateway told to stop while a request waits for a model that
// is still loading (it never becomes healthy), and whose process has a worker in its group,
// answers that request at once with a 503 and Retry-After, ends, and leaves neither process
// behind.
func TestStopMidLoadStopsChildren(t *testing.T) {
	dir := t.TempDir()
	leader, worker := filepath.Join(dir, "leader.pid"), filepath.Join(dir, "worker.pid")
	script := `echo $$ > ` + leader + `; sleep 1000 & echo $! > ` + worker + `; wait`
	cfg := `listen = "127.0.0.1:0"

[targets.s]
adapter = "openai"
url     = "http://127.0.0.1:{port}/v1"
health_path = "http://127.0.0.1:{port}/health"
command = ["/bin/sh", "-c", "` + script + `", "{port}"]
group   = "g"
load_timeout = "60s"

[groups.g]
slots = 1

[routes.r]
targets = ["s"]
`
	path := filepath.Join(dir, "gateway.toml")
	writeFile(t, path, cfg)
	base, _, cancel, code := serving(t, path)
	defer cancel()
	type answer struct {
		status     int
		retryAfter string
		body       string
		err        error
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
		b, _ := io.ReadAll(resp.Body)
		got <- answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(b)}
	}()
	var lp, wp int
	waitFor(t, "the model process and its worker", func() bool {
		lp, wp = readPid(leader), readPid(worker)
		return lp != 0 && wp != 0
	})
	cancel()
	// The request is answered before the drain ends: held through it, it would be cut off
	// without an answer, and the process would load on meanwhile.
	a := <-got
	if a.err != nil || a.status != http.StatusServiceUnavailable || a.retryAfter == "" ||
		!strings.Contains(a.body, `"error":{"message":"upstream s is not running, and the gateway is stopping"`) {
		t.Errorf("answer to the waiting request: %d Retry-After %q %s (err %v); want a 503 model_loading with Retry-After",
			a.status, a.retryAfter, a.body, a.err)
	}
	if c := <-code; c != 0 {
		t.Errorf("exit %d", c)
	}
	for _, pid := range []int{lp, wp} {
		if !pidGone(pid) {
			t.Errorf("pid %d outlived the gateway", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
