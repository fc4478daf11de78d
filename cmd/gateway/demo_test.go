package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// notifyWriter is a stdout that a test can wait on: written closes once, when the text so far
// contains want.
type notifyWriter struct {
	mu      sync.Mutex
	b       strings.Builder
	want    string
	written chan struct{}
	once    sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() { close(w.written) })
	}
	return len(p), nil
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestDemoInvitationNamesTheRealAddress: the curl the demo prints once it listens reaches it,
// also when --listen leaves the port to the system (":0"), where the invitation named port 0.
func TestDemoInvitationNamesTheRealAddress(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &notifyWriter{want: "curl", written: make(chan struct{})}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"demo", "--listen", "127.0.0.1:0", "--sim-port-base", "0", "--log-level", "error"}, out, io.Discard)
	}()
	select {
	case <-out.written:
	case c := <-code:
		t.Fatalf("demo exited %d before its invitation; stdout:\n%s", c, out.String())
	}
	url := regexp.MustCompile(`http://\S+/v1/chat/completions`).FindString(out.String())
	body := regexp.MustCompile(`-d '([^']*)'`).FindStringSubmatch(out.String())
	if url == "" || body == nil {
		t.Fatalf("no curl in the invitation:\n%s", out.String())
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(body[1]))
	if err != nil {
		t.Fatalf("the invitation's curl: %v\n%s", err, out.String())
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the invitation's curl: %s", resp.Status)
	}
	cancel()
	if c := <-code; c != 0 {
		t.Errorf("stopped demo exited %d, want 0", c)
	}
}

// TestDemoListenTaken: a gateway port that something else holds (8000 often is) ends the demo
// with exit 1, a message that names the port and the flag that chooses another, and nothing of
// the demo left running.
func TestDemoListenTaken(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	code, out, errOut := runCmd(t, "demo", "--listen", held.Addr().String(), "--sim-port-base", "0")
	if code != 1 || !strings.Contains(errOut, held.Addr().String()) || !strings.Contains(errOut, "--listen") || strings.Contains(out, "curl") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, the port and --listen named, and no invitation", code, out, errOut)
	}
}

// TestDemoSimPortBase: --sim-port-base takes 0 (free ports, chosen at start) or a first port that
// leaves room for all four; --print-config needs the ports it prints, so it refuses 0 instead of
// printing ports 0 to 3, which the demo never uses. Each refusal is a usage error, before
// anything starts.
func TestDemoSimPortBase(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--print-config", "--sim-port-base", "0"}, 2, "--sim-port-base"},
		{[]string{"--print-config", "--sim-port-base", "-3"}, 2, "--sim-port-base"},
		{[]string{"--print-config", "--sim-port-base", "65533"}, 2, "65532"},
		{[]string{"--sim-port-base", "-3"}, 2, "--sim-port-base"},
		{[]string{"--sim-port-base", "65533"}, 2, "65532"},
		{[]string{"--print-config", "--sim-port-base", "65532"}, 0, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			// Were the flag taken, the demo would serve until stopped: the context bounds it.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := run(ctx, append([]string{"demo", "--listen", "127.0.0.1:0"}, tc.args...), &stdout, &stderr)
			out, errOut := stdout.String(), stderr.String()
			if code != tc.code || !strings.Contains(errOut, tc.says) {
				t.Errorf("exit %d, stderr %q; want %d and %q said", code, errOut, tc.code, tc.says)
			}
			if code != 0 && out != "" {
				t.Errorf("refused, yet printed %q", out)
			}
			if code == 0 && !strings.Contains(out, `"http://127.0.0.1:65535/v1"`) {
				t.Errorf("the last simulator's URL is not in the printed config:\n%s", out)
			}
		})
	}
}

// TestDemoListenOnASimulatorsPort: a --listen port among the simulators' is a usage error that
// names both flags; it failed as a taken address, and the hint pointed at --listen alone, as
// though something else held the port.
func TestDemoListenOnASimulatorsPort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"demo", "--listen", "127.0.0.1:18902", "--sim-port-base", "18900"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--sim-port-base") || !strings.Contains(stderr.String(), "18902") {
		t.Errorf("exit %d, stderr %q; want 2 naming the port and --sim-port-base", code, stderr.String())
	}
}

// TestDemoStoppedBeforeListeningInvitesNoOne: a Ctrl-C that comes while the demo starts ends it
// with exit 0 and without the "Try: curl …" invitation, which it printed for a gateway already
// stopping.
func TestDemoStoppedBeforeListeningInvitesNoOne(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"demo", "--listen", "127.0.0.1:0", "--sim-port-base", "0"}, &stdout, &stderr)
	if code != 0 || strings.Contains(stdout.String(), "curl") {
		t.Errorf("exit %d, stdout %q; want 0 and no invitation", code, stdout.String())
	}
}
