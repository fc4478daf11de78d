package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hayula/gateway/conformance/conformancetest"
)

// runMain runs the command the way cmd/gateway will, returning exit code,
// stdout and stderr.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, func(string) string { return "" }, &out, &errOut)
	return code, out.String(), errOut.String()
}

func decodeReport(t *testing.T, s string) jsonReport {
	t.Helper()
	var r jsonReport
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, s)
	}
	return r
}

// TestNotOfferedEndpointsSkip: a server without embeddings and tools is not
// broken, it is smaller; those checks SKIP and the exit code stays 0.
func TestNotOfferedEndpointsSkip(t *testing.T) {
	_, srv := newFake(t, faultNoEmbeddingsTools)
	code, stdout, stderr := runMain(t, "--base-url", srv.URL+"/v1", "--api-key", fakeKey,
		"--embedding-model", fakeEmbed, "--format", "json")
	if code != 0 {
		t.Fatalf("exit code %d, want 0; stderr:\n%s", code, stderr)
	}
	rep := decodeReport(t, stdout)
	got := map[string]Result{}
	for _, c := range rep.Checks {
		if c.Result != Pass {
			got[c.ID] = c.Result
		}
		if c.Result == Skip && !strings.Contains(c.Reason, "404") {
			if c.ID != "errors.retry_after" {
				t.Errorf("%s skipped for %q, want the 404 named", c.ID, c.Reason)
			}
		}
	}
	want := baseline()
	for _, c := range catalogue() {
		if strings.HasPrefix(c.id, "tools.") || strings.HasPrefix(c.id, "embeddings.") {
			want[c.id] = Skip
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("non-passing checks (-want +got):\n%s", diff)
	}
	if !strings.Contains(stderr, "left") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
}

func TestMainExitCodes(t *testing.T) {
	_, good := newFake(t)
	_, broken := newFake(t, faultNoDone)
	gone := httptest.NewServer(nil)
	gone.Close()
	// /v1/models answers 200 and resets the connection mid-body: the
	// server is reachable and broken, not unreachable.
	_, cut := newWrappedFake(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/models" {
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[`))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		})
	})
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"conforming server", []string{"--base-url", good.URL, "--api-key", fakeKey, "--embedding-model", fakeEmbed}, 0},
		{"MUST failed", []string{"--base-url", broken.URL, "--api-key", fakeKey, "--embedding-model", fakeEmbed}, 1},
		{"unreachable server", []string{"--base-url", gone.URL}, 2},
		{"models list broken off, model given", []string{"--base-url", cut.URL, "--api-key", fakeKey, "--model", fakeModel, "--only", "models.*"}, 1},
		{"no base url", []string{"--model", "m"}, 2},
		{"not a URL", []string{"--base-url", "localhost:8080"}, 2},
		{"unknown format", []string{"--base-url", good.URL, "--format", "yaml"}, 2},
		{"bad glob", []string{"--base-url", good.URL, "--only", "chat.["}, 2},
		{"glob matches nothing", []string{"--base-url", good.URL, "--api-key", fakeKey, "--only", "nope.*"}, 2},
		{"unknown flag", []string{"--base-url", good.URL, "--colour"}, 2},
		{"stray argument", []string{"--base-url", good.URL, "extra"}, 2},
		{"no model discoverable", []string{"--base-url", good.URL}, 2}, // no key: /v1/models answers 401
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, tt.args...)
			if code != tt.want {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.want, stderr)
			}
		})
	}
}

// TestOnlyRunsTheNeededRequests: --only narrows the checks and the requests,
// which is what keeps a focused CI job fast.
func TestOnlyRunsTheNeededRequests(t *testing.T) {
	f, srv := newFake(t)
	code, stdout, stderr := runMain(t, "--base-url", srv.URL, "--api-key", fakeKey,
		"--only", "chat.stream.*,models.list.*", "--format", "json")
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr)
	}
	rep := decodeReport(t, stdout)
	for _, c := range rep.Checks {
		if !strings.HasPrefix(c.ID, "chat.stream.") && !strings.HasPrefix(c.ID, "models.list.") {
			t.Errorf("check %s ran despite --only", c.ID)
		}
	}
	// /v1/models, the plain stream, the include_usage stream and the stream with tools, which
	// the checks about every chat stream judge too.
	if got := f.Requests(); got != 4 {
		t.Errorf("%d requests, want 4", got)
	}
}

func TestMainWritesOutFile(t *testing.T) {
	_, srv := newFake(t)
	path := filepath.Join(t.TempDir(), "report.xml")
	code, stdout, stderr := runMain(t, "--base-url", srv.URL, "--api-key", fakeKey, "--only", "chat.*",
		"--format", "junit", "--out", path)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout should stay empty with --out, got %q", stdout)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`<testcase name="chat.stream.done" classname="conformance.chat.stream">`)) {
		t.Errorf("junit file lacks the chat.stream.done case:\n%s", b)
	}
}

// TestAPIKeyFromEnvironment: --api-key-env reads the key from the variable it names, so that it
// is in neither ps nor the shell's history; the bad-key check then runs as with --api-key.
func TestAPIKeyFromEnvironment(t *testing.T) {
	_, srv := newFake(t)
	env := map[string]string{"CONF_KEY": fakeKey}
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, stdout, stderr := run("--base-url", srv.URL, "--api-key-env", "CONF_KEY", "--only", "errors.bad_key,models.*", "--format", "json")
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr)
	}
	ran := false
	for _, c := range decodeReport(t, stdout).Checks {
		if c.ID == "errors.bad_key" {
			ran = true
			if c.Result != Pass {
				t.Errorf("errors.bad_key %s: %s", c.Result, c.Reason)
			}
		}
	}
	if !ran {
		t.Error("errors.bad_key did not run")
	}
	if strings.Contains(stdout+stderr, fakeKey) {
		t.Error("the report or the progress shows the key")
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unset", []string{"--base-url", srv.URL, "--api-key-env", "NOPE"}, "NOPE is unset or empty"},
		{"both", []string{"--base-url", srv.URL, "--api-key-env", "CONF_KEY", "--api-key", "x"}, "use one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, stderr := run(tc.args...); code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
			}
		})
	}
}

// TestOutCheckedBeforeRun: an --out that cannot be created (its directory missing) is said before
// any check runs, not after a run that may take minutes against a real model, whose report was
// then lost; a run that ends without a report (the server unreachable) leaves no empty file
// behind, and an earlier report at that path untouched.
func TestOutCheckedBeforeRun(t *testing.T) {
	f, srv := newFake(t)
	missing := filepath.Join(t.TempDir(), "no-such-dir", "report.xml")
	code, stdout, stderr := runMain(t, "--base-url", srv.URL, "--api-key", fakeKey, "--only", "chat.*", "--out", missing)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "--out") || f.Requests() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q, %d requests; want 2, --out named and no request made", code, stdout, stderr, f.Requests())
	}
	dir := t.TempDir()
	fresh, kept := filepath.Join(dir, "fresh.json"), filepath.Join(dir, "kept.json")
	if err := os.WriteFile(kept, []byte("earlier report\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fresh, kept} {
		if code, _, stderr := runMain(t, "--base-url", "http://127.0.0.1:1", "--out", path); code != 2 {
			t.Errorf("unreachable server: exit %d, stderr %q; want 2", code, stderr)
		}
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Errorf("a run without a report left %s behind", fresh)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "earlier report\n" {
		t.Errorf("a run without a report changed %s: %q, %v", kept, b, err)
	}
	// A report replaces a longer one whole, and goes to a pipe (--out /dev/stdout) as to a file.
	if err := os.WriteFile(kept, bytes.Repeat([]byte("x"), 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runMain(t, "--base-url", srv.URL, "--api-key", fakeKey, "--only", "chat.status", "--format", "json", "--out", kept); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if b, _ := os.ReadFile(kept); bytes.Contains(b, []byte("xxx")) {
		t.Errorf("the report left the earlier file's tail: %d bytes", len(b))
	}
	if _, err := os.Stat("/dev/fd"); err != nil {
		return // no /dev/fd to name a pipe by
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(r); read <- b }()
	path := fmt.Sprintf("/dev/fd/%d", w.Fd())
	code, _, stderr = runMain(t, "--base-url", srv.URL, "--api-key", fakeKey, "--only", "chat.status", "--format", "json", "--out", path)
	w.Close()
	if b := <-read; code != 0 || !bytes.Contains(b, []byte(`"chat.status"`)) {
		t.Errorf("--out %s (a pipe): exit %d, stderr %q, read %q", path, code, stderr, b)
	}
	r.Close()
}

// TestCAFileTrusted: a server on https:// whose certificate the system does not know (a gateway
// with a self-signed tls_cert_file) cannot be reached without --ca-file, and is graded with it.
func TestCAFileTrusted(t *testing.T) {
	srv := httptest.NewUnstartedServer(conformancetest.NewHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake, said by the test
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--base-url", srv.URL + "/v1", "--api-key", fakeKey, "--only", "models.*", "--format", "json"}
	if code, _, stderr := runMain(t, args...); code != 2 || !strings.Contains(stderr, "certificate") {
		t.Fatalf("without --ca-file: exit %d, stderr %q; want 2 naming the certificate", code, stderr)
	}
	code, stdout, stderr := runMain(t, append(args, "--ca-file", ca)...)
	if code != 0 {
		t.Fatalf("with --ca-file: exit %d; stderr:\n%s", code, stderr)
	}
	checks := decodeReport(t, stdout).Checks
	if len(checks) == 0 {
		t.Fatal("no check ran")
	}
	for _, c := range checks {
		if c.Result != Pass {
			t.Errorf("%s: %s (%s)", c.ID, c.Result, c.Reason)
		}
	}
	if code, _, stderr := runMain(t, append(args, "--ca-file", filepath.Join(t.TempDir(), "none.pem"))...); code != 2 || !strings.Contains(stderr, "--ca-file") {
		t.Errorf("a missing --ca-file: exit %d, stderr %q; want 2 naming the flag", code, stderr)
	}
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runMain(t, append(args, "--ca-file", notPEM)...); code != 2 || !strings.Contains(stderr, "no PEM certificate") {
		t.Errorf("a --ca-file without certificates: exit %d, stderr %q", code, stderr)
	}
}
