//go:build unix

package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/server"
)

// TestReloadMaxConnections: a reload sets the cap on client connections to the file's
// max_connections. Lowered under the connections open, it cuts none of them: a stream under way
// ends whole; a new connection waits until there is room, which the stream's connection, idle once
// its answer is out, makes; /metrics counts it all.
func TestReloadMaxConnections(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	hold := make(chan struct{})
	up := fakeModel(t, hold)
	path := filepath.Join(t.TempDir(), "gateway.toml")
	writeFile(t, path, "max_connections = 2\n"+gatewayFile("127.0.0.1:8000", up.URL, "r"))
	cfg, err := config.Load(path, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	conns := server.NewConnLimit(cfg.MaxConnections)
	srv, err := server.New(server.Options{Config: cfg, Logger: log, Conns: conns})
	if err != nil {
		t.Fatal(err)
	}
	live := server.NewLive(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- server.Serve(ctx, ln, live, time.Second, log, server.WithConnLimit(conns)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		live.Server().Close()
	})
	rl := &reloader{path: path, getenv: os.Getenv, log: log, live: live, addr: ln.Addr(), running: cfg.Listen, conns: conns}
	base := "http://" + ln.Addr().String()
	newClient := func() *http.Client {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: time.Minute}
	}

	resp, err := newClient().Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"r","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	idle := newClient() // a second connection, idle once answered
	if got := getBody(t, idle, base+"/healthz"); got == "" {
		t.Fatal("healthz answered nothing")
	}
	if conns.Stats().Open != 2 {
		t.Fatalf("open = %d, want 2", conns.Stats().Open)
	}

	writeFile(t, path, "max_connections = 1\n"+gatewayFile("127.0.0.1:8000", up.URL, "r"))
	if !rl.reload(ctx) {
		t.Fatalf("the reload failed:\n%s", logs)
	}
	if conns.Max() != 1 || !strings.Contains(logs.String(), "max_connections lowered under the connections open") {
		t.Fatalf("max = %d after the reload to 1; log:\n%s", conns.Max(), logs)
	}
	if st := conns.Stats(); st.Open != 2 || st.IdleClosed != 0 {
		t.Errorf("the lowered cap closed connections by itself: %+v", st)
	}

	// A new connection: the idle one is closed to make room, the stream's is not, and there is
	// still none, the cap being 1; it waits for the stream.
	metricsBody := make(chan string, 1)
	go func() { metricsBody <- getBody(t, newClient(), base+"/metrics") }()
	waitFor(t, "the new connection to wait for room", func() bool { return conns.Stats().Waited == 1 })
	close(hold)
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("the stream open over the lowered cap was cut: %v %q", err, rest)
	}
	body := <-metricsBody
	for _, want := range []string{"hayula_connections_max 1", "hayula_connections_waited_total 1",
		"hayula_connections_idle_closed_total 2", "hayula_accept_errors_total 0"} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}

	writeFile(t, path, "max_connections = 0\n"+gatewayFile("127.0.0.1:8000", up.URL, "r"))
	if !rl.reload(ctx) || conns.Max() != 0 {
		t.Fatalf("the reload to no cap: max %d\n%s", conns.Max(), logs)
	}
}

func getBody(t *testing.T, c *http.Client, url string) string {
	resp, err := c.Get(url)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
