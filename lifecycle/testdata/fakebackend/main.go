// Command fakebackend is a stand-in for llama-server in the lifecycle tests: it serves a health
// path and /v1/chat/completions on a loopback port and can be told to start slowly, crash at once
// or after N chat requests, hang its health check, ignore SIGTERM, or leave a grandchild behind.
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
		crashAtStart = flag.Bool("crash-at-start", false, "write to stderr and exit 3 at once")
		crashAfter   = flag.Int("crash-after", 0, "exit 3 on the chat request after this many (0 = never)")
		hang         = flag.Bool("hang", false, "health requests never answer")
		ignoreTerm   = flag.Bool("ignore-term", false, "ignore SIGTERM")
		startsFile   = flag.String("starts", "", "append this process's pid to the file at start")
		crashFrom    = flag.Int("crash-at-start-from", 0, "with -starts, crash at start from this start on (0 = never)")
		childFile    = flag.String("spawn-child", "", "start a grandchild that sleeps, write its pid here")
		sleepForever = flag.Bool("sleep-forever", false, "do nothing until killed (the grandchild)")
		envFile      = flag.String("env-file", "", "write this process's environment to the file at start")
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
		select {}
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
	}
	if *childFile != "" {
		c := exec.Command(os.Args[0], "-sleep-forever")
		if err := c.Start(); err != nil {
			fail(err)
		}
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
