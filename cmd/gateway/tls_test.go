//go:build unix

package main

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/internal/testcert"
	"github.com/hayula/gateway/server"
)

// servedSerials records the serial of the certificate each new connection of a client was
// served, in the order the connections were made.
type servedSerials struct {
	mu      sync.Mutex
	serials []*big.Int
}

func (s *servedSerials) verify(cs tls.ConnectionState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs.NegotiatedProtocol != "http/1.1" || cs.Version < tls.VersionTLS12 {
		s.serials = append(s.serials, big.NewInt(-1)) // fails the comparison: said below
		return nil
	}
	s.serials = append(s.serials, cs.PeerCertificates[0].SerialNumber)
	return nil
}

func (s *servedSerials) list() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b []string
	for _, n := range s.serials {
		b = append(b, n.String())
	}
	return strings.Join(b, " ")
}

// waitLog waits until logs hold n lines with s (a reload is applied by the reload loop, after a
// SIGHUP, in its own time).
func waitLog(t *testing.T, logs *syncBuffer, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(logs.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %d lines with %q in the log:\n%s", n, s, logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServeHTTPS runs serve with tls_cert_file and tls_key_file on loopback and the official
// SDK as its client: a whole chat and a stream whose first event comes before its upstream
// sends the second (flushed per event through TLS, where no writev is used); a reload to a
// renewed certificate serves it to the next connection (serials compared) while the stream under
// way on the old one finishes; a reload that fails keeps it; a plain HTTP request is answered 400
// saying to use https; a client that offers no more than TLS 1.1 is refused.
func TestServeHTTPS(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	hold := make(chan struct{})
	up := fakeModel(t, hold)
	dir := t.TempDir()
	old := testcert.Write(t, dir, "cert.pem", "key.pem", 1001, time.Now().AddDate(0, 3, 0))
	path := filepath.Join(dir, "gateway.toml")
	writeFile(t, path, "tls_cert_file = \"cert.pem\"\ntls_key_file = \"key.pem\"\n"+gatewayFile("127.0.0.1:0", up.URL, "r"))
	cfg, err := config.Load(path, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	hup := make(chan os.Signal, 1)
	go func() {
		done <- serve(ctx, cfg, log, &reloader{path: path, getenv: os.Getenv, log: log, hup: hup},
			func(a net.Addr) { addrc <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()

	// The renewed certificate is made now, and trusted with the old, so that what tells them
	// apart is the serial served.
	renewedDir := t.TempDir()
	renewed := testcert.Write(t, renewedDir, "cert.pem", "key.pem", 1002, time.Now().AddDate(0, 6, 0))
	served := &servedSerials{}
	tr := &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs:          testcert.Pool(old, renewed),
		NextProtos:       []string{"h2", "http/1.1"},
		VerifyConnection: served.verify,
	}}
	defer tr.CloseIdleConnections()
	client := openai.NewClient(option.WithBaseURL("https://"+addr.String()+"/v1/"), option.WithAPIKey("x"),
		option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "r", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

	whole := func(when string) {
		t.Helper()
		got, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatalf("%s: whole chat: %v", when, err)
		}
		if len(got.Choices) != 1 || got.Choices[0].Message.Content != "hi" {
			t.Fatalf("%s: whole chat answered %+v", when, got.Choices)
		}
	}
	whole("before the reload")
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	// The upstream holds its second event until hold is closed: the first reaches the client
	// only if the gateway flushed it through TLS on its own.
	if !stream.Next() || stream.Current().Choices[0].Delta.Content != "hi" {
		t.Fatalf("stream's first event: %v, %+v", stream.Err(), stream.Current())
	}

	// certbot renews in place: the files the config names are replaced.
	for _, f := range [][2]string{{renewed.CertFile, old.CertFile}, {renewed.KeyFile, old.KeyFile}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, f[1], string(b))
	}
	hup <- nil
	waitLog(t, logs, "configuration reloaded", 1)
	whole("after the reload") // on a new connection: the stream holds the first
	if want := "1001 1002"; served.list() != want {
		t.Errorf("serials served to each connection (-1: not TLS ≥ 1.2 with http/1.1): %s, want %s", served.list(), want)
	}

	close(hold)
	n := 0
	for stream.Next() {
		n++
	}
	if err := stream.Err(); err != nil || n != 1 {
		t.Errorf("the stream on the old certificate's connection, after the reload: %d more events, error %v; want 1, nil", n, err)
	}

	// A reload that fails (a key that is not the certificate's) keeps the certificate in use.
	writeFile(t, old.KeyFile, otherKey(t, dir))
	hup <- nil
	waitLog(t, logs, "reload failed", 1)
	tr.CloseIdleConnections()
	whole("after a failed reload")
	if want := "1001 1002 1002"; served.list() != want {
		t.Errorf("serials served: %s, want %s", served.list(), want)
	}

	// Plain HTTP to the HTTPS port: a 400 that says to use https, not a dropped connection.
	resp, err := http.Post("http://"+addr.String()+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"r"}`))
	if err != nil {
		t.Fatalf("plain HTTP to the HTTPS port: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "https_required") || !strings.Contains(string(body), "https://") {
		t.Errorf("plain HTTP to the HTTPS port: %d %s; want 400 https_required saying to use https://", resp.StatusCode, body)
	}

	// TLS 1.1 and older are refused.
	if c, err := tls.Dial("tcp", addr.String(), &tls.Config{RootCAs: testcert.Pool(old, renewed), MaxVersion: tls.VersionTLS11}); err == nil {
		c.Close()
		t.Error("a TLS 1.1 client was served")
	}
	if !strings.Contains(logs.String(), "https=true") {
		t.Errorf("the listening line does not say HTTPS:\n%s", logs)
	}
}

// otherKey is a private key that is not the certificate's: that of a new pair, made in dir.
func otherKey(t *testing.T, dir string) string {
	t.Helper()
	other := testcert.Write(t, dir, "other.pem", "other-key.pem", 9, time.Now().AddDate(1, 0, 0))
	b, err := os.ReadFile(other.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCheckConfigTLS: check-config warns that keys travel in clear on a gateway with keys that
// listens off loopback without TLS, says it serves HTTPS when tls_cert_file and tls_key_file are
// set, and fails, naming the file, on one it cannot read.
func TestCheckConfigTLS(t *testing.T) {
	dir := t.TempDir()
	testcert.Write(t, dir, "cert.pem", "key.pem", 1, time.Now().AddDate(1, 0, 0))
	base := keyedGatewayFile("0.0.0.0:8000", "http://127.0.0.1:1", "r")
	const clear = "travel over the network in clear"
	for _, tt := range []struct {
		name, tls string
		code      int
		out, err  string // in stdout, in stderr
		notOut    string
	}{
		{"plain off loopback", "", 0, clear, "", "https:"},
		{"https", "tls_cert_file = \"cert.pem\"\ntls_key_file = \"key.pem\"\n", 0, "https: certificate " + filepath.Join(dir, "cert.pem"), "", clear},
		{"key missing", "tls_cert_file = \"cert.pem\"\ntls_key_file = \"gone.pem\"\n", 1, "", filepath.Join(dir, "gone.pem") + " does not exist", "config "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "gateway.toml")
			writeFile(t, path, tt.tls+base)
			code, out, errOut := runCmd(t, "check-config", path)
			if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errOut, tt.err) || strings.Contains(out, tt.notOut) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q and without %q, stderr with %q",
					code, out, errOut, tt.code, tt.out, tt.notOut, tt.err)
			}
		})
	}
}

// TestReloadTLSOnOffTakesRestart: a reload cannot move a gateway between HTTP and HTTPS (the
// listener is made at start): one whose file adds the keys, or drops them, is warned about and
// applies the rest, and an HTTPS gateway goes on serving the certificate it had.
func TestReloadTLSOnOffTakesRestart(t *testing.T) {
	up := fakeModel(t, nil)
	dir := t.TempDir()
	c := testcert.Write(t, dir, "cert.pem", "key.pem", 5, time.Now().AddDate(1, 0, 0))
	const tlsKeys = "tls_cert_file = \"cert.pem\"\ntls_key_file = \"key.pem\"\n"
	path := filepath.Join(dir, "gateway.toml")

	writeFile(t, path, gatewayFile("127.0.0.1:8000", up.URL, "r"))
	rl, ts, logs := reloadRig(t, path)
	writeFile(t, path, tlsKeys+gatewayFile("127.0.0.1:8000", up.URL, "r", "r2"))
	if !rl.reload(context.Background()) || chatStatus(t, ts.URL, "r2") != 200 {
		t.Fatalf("a reload that adds the TLS keys did not apply the rest:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "HTTPS takes a restart") {
		t.Errorf("no warning that HTTPS takes a restart:\n%s", logs)
	}

	writeFile(t, path, tlsKeys+gatewayFile("127.0.0.1:8000", up.URL, "r"))
	rl, _, logs = reloadRig(t, path)
	cfg, err := config.Load(path, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	rl.certs = server.NewCertificates(cfg.TLS.Certificate)
	writeFile(t, path, gatewayFile("127.0.0.1:8000", up.URL, "r", "r2"))
	if !rl.reload(context.Background()) {
		t.Fatalf("a reload that drops the TLS keys failed:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "plain HTTP takes a restart") {
		t.Errorf("no warning that plain HTTP takes a restart:\n%s", logs)
	}
	if got := rl.certs.Current().Leaf.SerialNumber; got.Cmp(c.Serial) != 0 {
		t.Errorf("serving serial %v after the reload, want the certificate it had, %v", got, c.Serial)
	}
}
