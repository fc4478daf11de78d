//go:build unix

package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// TestReloadStormWithTrafficDrains: fifty reloads while requests of every kind come (answers,
// streams their clients leave, unknown models and paths, explain, /healthz, bad JSON): every server
// a reload replaced is closed once its requests have ended, before the gateway stops, and nothing
// of them (health checks, pools, goroutines) is left.
func TestReloadStormWithTrafficDrains(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	hold := make(chan struct{})
	up := fakeModel(t, hold) // streams end only at the stop: their clients leave
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
	rl := &reloader{path: path, getenv: os.Getenv, log: log, live: live, addr: ts.Listener.Addr(), running: cfg.Listen}
	closed := false
	shut := func() {
		if closed {
			return
		}
		closed = true
		close(hold)
		ts.Close()
		rl.closeRetired()
		live.Server().Close()
	}
	defer shut()
	c := ts.Client()
	do := func(method, p, body string) {
		req, _ := http.NewRequest(method, ts.URL+p, strings.NewReader(body))
		resp, err := c.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	stream := func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		resp, err := c.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		_, _ = bufio.NewReader(resp.Body).ReadString('\n')
		// The client leaves mid-stream.
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				do(http.MethodPost, "/v1/chat/completions", `{"model":"r","messages":[{"role":"user","content":"hi"}]}`)
				stream()
				do(http.MethodPost, "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`)
				do(http.MethodPost, "/v1/chat/completions", `{"model":`)
				do(http.MethodGet, "/healthz", "")
				do(http.MethodGet, "/no/such/path", "")
				do(http.MethodPost, "/v1/route/explain", `{"model":"r","messages":[{"role":"user","content":"hi"}]}`)
			}
		})
	}
	for i := range 50 {
		routes := []string{"r"}
		if i%2 == 0 {
			routes = append(routes, "r2")
		}
		writeFile(t, path, gatewayFile("127.0.0.1:8000", up.URL, routes...))
		if !rl.reload(context.Background()) {
			t.Fatalf("reload %d failed:\n%s", i, logs)
		}
	}
	close(stop)
	wg.Wait()
	waitFor(t, "every replaced server to be closed after its last request", func() bool {
		l := logs.String()
		return strings.Count(l, "serves its requests in flight") == strings.Count(l, "last request has ended; closed it")
	})
	if strings.Contains(logs.String(), "closing a previous configuration under its requests") {
		t.Errorf("a replaced server was closed only at the stop:\n%s", logs)
	}
	shut()
}
