//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// profile runs the gateway built with pprof (./bench/pprofgw: `gateway serve` plus a pprof
// listener on loopback, a binary of its own so that the measured gateway never links pprof) and
// records, into --profile DIR, a CPU profile under chat load at the highest concurrency, one under
// streams, and the allocations of the whole run, each also as `go tool pprof -top` text.
func (e *environment) profile(ctx context.Context) ([]string, error) {
	dir := e.opts.Profile
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	bin, err := build(ctx, e.root, "./bench/pprofgw", e.dir)
	if err != nil {
		return nil, err
	}
	p, err := startProc("pprofgw", bin, []string{"-config", filepath.Join(e.dir, "gateway.toml"),
		"-listen", "127.0.0.1:0", "-log-level", e.opts.LogLevel}, nil, e.dir)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	line, err := bufio.NewReader(p.stdout).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("pprofgw did not start: %w\n%s", err, p.logTail())
	}
	var gw, pp string
	if _, err := fmt.Sscanf(line, "gateway=%s pprof=%s", &gw, &pp); err != nil {
		return nil, fmt.Errorf("pprofgw said %q: %w", line, err)
	}
	if err := waitReady(ctx, p, "http://"+gw+"/healthz"); err != nil {
		return nil, err
	}
	maxConc := 1
	for _, c := range e.opts.Conc {
		maxConc = max(maxConc, c)
	}
	client := e.client(maxConc + 16)
	f := newFakeUpstream(e.opts.Chunks, 0)
	chat := &endpoint{name: "gateway", url: "http://" + gw + "/v1/chat/completions",
		body: chatBody("bench", false, e.opts.PromptBytes), client: client}
	stream := &endpoint{name: "gateway", url: chat.url, body: chatBody("bench", true, e.opts.PromptBytes), client: client}

	secs := int(e.opts.ProfileTime / time.Second)
	var out []string
	for _, ph := range []struct {
		file string
		ep   *endpoint
		conc int
		want []byte
	}{
		{fmt.Sprintf("cpu-chat-c%d.pprof", maxConc), chat, maxConc, f.chat},
		{"cpu-stream-c16.pprof", stream, 16, f.streamBody()},
	} {
		runRound(ctx, ph.ep, ph.want, ph.conc, e.opts.Warmup)
		done := make(chan error, 1)
		go func() {
			done <- fetch(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pp, secs), filepath.Join(dir, ph.file))
		}()
		r := runRound(ctx, ph.ep, ph.want, ph.conc, e.opts.ProfileTime+time.Second)
		if err := <-done; err != nil {
			return out, err
		}
		out = append(out, fmt.Sprintf("%s: %d requests at c=%d, %d failed", filepath.Join(dir, ph.file),
			len(r.total), ph.conc, r.errors))
	}
	allocs := filepath.Join(dir, "allocs.pprof")
	if err := fetch(ctx, "http://"+pp+"/debug/pprof/allocs", allocs); err != nil {
		return out, err
	}
	out = append(out, allocs+": every allocation since the profiling gateway started (chat and stream load)")
	for _, name := range []string{fmt.Sprintf("cpu-chat-c%d", maxConc), "cpu-stream-c16", "allocs"} {
		args := []string{"tool", "pprof", "-top", "-nodecount=40"}
		if name == "allocs" {
			args = append(args, "-sample_index=alloc_space")
		}
		args = append(args, bin, filepath.Join(dir, name+".pprof"))
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = e.root
		txt, err := cmd.CombinedOutput()
		if err != nil {
			return out, fmt.Errorf("go tool pprof %s: %w\n%s", name, err, txt)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".txt"), txt, 0o644); err != nil {
			return out, err
		}
	}
	return out, nil
}

func fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
