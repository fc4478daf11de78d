// Command fakebackend is a stand-in for llama-server in the lifecycle tests: it serves a health
// path and /v1/chat/completions on a loopback port and can be told to start slowly, crash at once
// or after N chat requests, hang its health check, ignore SIGTERM, leave a grandchild behind (one
// that may take its time to exit on SIGTERM, ignore it, or leave the process group), or refuse to start while another
// process still runs, as a model server does whose GPU memory is still taken.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	var (
		port         = flag.Int("port", 0, "loopback port to listen on")
		name         = flag.String("name", "fake", "model name to answer with")
		healthPath   = flag.String("health", "/health", "health path")
		delay        = flag.Duration("delay", 0, "wait this long before listening (a slow model load)")
		waitFile     = flag.String("wait-file", "", "before listening, wait until this file exists (a model load the test ends)")
		crashAtStart = flag.Bool("crash-at-start", false, "write to stderr and exit 3 at once")
		crashAfter   = flag.Int("crash-after", 0, "exit 3 on the chat request after this many (0 = never)")
		hang         = flag.Bool("hang", false, "health requests never answer")
		ignoreTerm   = flag.Bool("ignore-term", false, "ignore SIGTERM")
		startsFile   = flag.String("starts", "", "append this process's pid to the file at start")
		crashFrom    = flag.Int("crash-at-start-from", 0, "with -starts, crash at start from this start on (0 = never)")
		hangFrom     = flag.Int("hang-from", 0, "with -starts, health requests never answer from this start on (0 = never)")
		childFile    = flag.String("spawn-child", "", "start a grandchild that sleeps, write its pid here")
		sleepForever = flag.Bool("sleep-forever", false, "do nothing until killed (the grandchild)")
		childLinger  = flag.Duration("child-term-linger", 0, "with -spawn-child, the grandchild takes this long to exit on SIGTERM, then writes its pid file + \".clean\"")
		childIgnore  = flag.Bool("child-ignore-term", false, "with -spawn-child, the grandchild ignores SIGTERM")
		childSetsid  = flag.Bool("child-setsid", false, "with -spawn-child, the grandchild leaves the process group (setsid)")
		childLate    = flag.String("child-term-spawn", "", "with -spawn-child, the grandchild, on SIGTERM, starts a process that leaves the group (setsid) and writes its pid here")
		termSpawn    = flag.String("term-spawn", "", "with -sleep-forever and -term-linger, on SIGTERM start a process that leaves the group (setsid) and write its pid here")
		childStderr  = flag.Bool("child-stderr", false, "with -spawn-child, the grandchild shares this process's stderr, as a model server's workers do")
		cleanFile    = flag.String("clean-file", "", "with -sleep-forever and -term-linger, write this file on the way out")
		termLinger   = flag.Duration("term-linger", 0, "with -sleep-forever, exit this long after SIGTERM")
		gpuFree      = flag.String("gpu-free", "", "exit 3 at start if the pid written in this file still runs (its GPU memory is still taken)")
		envFile      = flag.String("env-file", "", "write this process's environment to the file at start")
		readyFD3     = flag.Bool("ready-fd3", false, "with -sleep-forever, write a byte to fd 3 once SIGTERM's handling is in place")
	)
	flag.Parse()
	if *envFile != "" {
		var b bytes.Buffer
		for _, kv := range os.Environ() {
			b.WriteString(kv + "\n")
		}
		if err := os.WriteFile(*envFile, b.Bytes(), 0o644); err != nil {
			fail(err)
		}
	}
	if *sleepForever {
		if *ignoreTerm {
			signal.Ignore(syscall.SIGTERM)
		}
		term := make(chan os.Signal, 1)
		if *termLinger > 0 {
			signal.Notify(term, syscall.SIGTERM)
		}
		if *readyFD3 {
			ready := os.NewFile(3, "ready")
			_, _ = ready.Write([]byte{1})
			ready.Close()
		}
		if *termLinger > 0 {
			<-term
			if *termSpawn != "" {
				c := exec.Command(os.Args[0], "-sleep-forever")
				c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				if err := c.Start(); err != nil {
					fail(err)
				}
				if err := os.WriteFile(*termSpawn, []byte(strconv.Itoa(c.Process.Pid)), 0o644); err != nil {
					fail(err)
				}
			}
			time.Sleep(*termLinger)
			// A worker logs its way out; a closed stderr kills it here (SIGPIPE), before it is clean.
			fmt.Fprintln(os.Stderr, "fakebackend worker: shut down cleanly")
			if err := os.WriteFile(*cleanFile, nil, 0o644); err != nil {
				fail(err)
			}
			os.Exit(0)
		}
		select {}
	}
	if *gpuFree != "" {
		if b, err := os.ReadFile(*gpuFree); err == nil {
			if pid, err := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && running(pid) {
				fmt.Fprintf(os.Stderr, "fakebackend %s: GPU memory still taken by pid %d\n", *name, pid)
				os.Exit(3)
			}
		}
	}
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if *startsFile != "" {
		f, err := os.OpenFile(*startsFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fail(err)
		}
		fmt.Fprintln(f, os.Getpid())
		f.Close()
		if b, err := os.ReadFile(*startsFile); err == nil && *crashFrom > 0 &&
			bytes.Count(b, []byte("\n")) >= *crashFrom {
			*crashAtStart = true
		}
		if b, err := os.ReadFile(*startsFile); err == nil && *hangFrom > 0 &&
			bytes.Count(b, []byte("\n")) >= *hangFrom {
			*hang = true
		}
	}
	if *childFile != "" {
		args := []string{"-sleep-forever"}
		if *childLinger > 0 {
			args = append(args, "-term-linger", childLinger.String(), "-clean-file", *childFile+".clean")
		}
		if *childLate != "" {
			args = append(args, "-term-spawn", *childLate)
		}
		if *childIgnore {
			args = append(args, "-ignore-term")
		}
		// The grandchild says when its SIGTERM handling is in place, and this process is not
		// ready before: a stop that came sooner met the default action (death at once), not the
		// worker the test asked for (seen under load at GOMAXPROCS=1: "a worker that logs its
		// way out" was not clean).
		ready, readyW, err := os.Pipe()
		if err != nil {
			fail(err)
		}
		c := exec.Command(os.Args[0], append(args, "-ready-fd3")...)
		c.ExtraFiles = []*os.File{readyW}
		if *childStderr {
			c.Stderr = os.Stderr
		}
		if *childSetsid {
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := c.Start(); err != nil {
			fail(err)
		}
		readyW.Close()
		if _, err := ready.Read(make([]byte, 1)); err != nil {
			fail(fmt.Errorf("the grandchild did not get ready: %w", err))
		}
		ready.Close()
		if err := os.WriteFile(*childFile, []byte(strconv.Itoa(c.Process.Pid)), 0o644); err != nil {
			fail(err)
		}
	}
	fmt.Fprintf(os.Stderr, "fakebackend %s: loading model\n", *name)
	if *crashAtStart {
		fmt.Fprintf(os.Stderr, "fakebackend %s: model file is corrupt\n", *name)
		os.Exit(3)
	}
	time.Sleep(*delay)
	for *waitFile != "" {
		if _, err := os.Stat(*waitFile); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}

	var served atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+*healthPath, func(w http.ResponseWriter, r *http.Request) {
		if *hang {
			<-r.Context().Done()
			return
		}
		w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if n := served.Add(1); *crashAfter > 0 && n > int64(*crashAfter) {
			fmt.Fprintf(os.Stderr, "fakebackend %s: out of memory after %d requests\n", *name, *crashAfter)
			os.Exit(3)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion", "model": *name,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "hello from " + *name}}},
		})
	})
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(*port))
	if err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "fakebackend %s: listening on %s\n", *name, l.Addr())
	fail(http.Serve(l, mux))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fakebackend:", err)
	os.Exit(1)
}

// running reports whether pid is a live process; a zombie is not.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc to tell a zombie by
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}
