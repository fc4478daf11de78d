package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignalKillsProcessGroups: a second signal exits at once, and takes with it the whole
// process group of every model process, not only its leader (which Pdeathsig kills): a worker
// the model server started would otherwise outlive the gateway, holding its GPU memory. The
// processes ignore SIGTERM, so the first signal's stop is still waiting out its grace.
func TestSecondSignalKillsProcessGroups(t *testing.T) {
	dir := t.TempDir()
	leader, worker := filepath.Join(dir, "leader.pid"), filepath.Join(dir, "worker.pid")
	script := `trap '' TERM; echo $$ > ` + leader + `; sleep 1000 & echo $! > ` + worker + `; wait`
	path := filepath.Join(dir, "gateway.toml")
	writeFile(t, path, `listen = "127.0.0.1:0"

[targets.s]
adapter = "openai"
url     = "http://127.0.0.1:{port}/v1"
command = ["/bin/sh", "-c", "`+script+`", "{port}"]
group   = "g"

[groups.g]
slots  = 1
pinned = ["s"]

[routes.r]
targets = ["s"]
`)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveHelper+"="+path, "GODEBUG=schedtrace=0")
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var lp, wp int
	defer func() {
		_ = cmd.Process.Kill()
		for _, pid := range []int{lp, wp} {
			if pid != 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs)
		}
	}()
	waitFor(t, "the model process and its worker", func() bool {
		lp, wp = readPid(leader), readPid(worker)
		return lp != 0 && wp != 0
	})
	// Two signals sent at once may merge into one: the second goes once the first is seen.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stop to begin", func() bool { return strings.Contains(logs.String(), "reason=shutdown") })
	time.Sleep(sameSignal) // sooner, it is a copy of the first (TestSignalSentTwiceAtOnceIsOneStop)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := <-exited
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want 1", err)
	}
	for _, pid := range []int{lp, wp} {
		pid := pid
		waitFor(t, fmt.Sprintf("process %d (leader %d, worker %d) to die with the gateway", pid, lp, wp), func() bool { return pidGone(pid) })
	}
}
