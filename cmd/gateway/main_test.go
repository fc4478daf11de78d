package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/demo"
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(good, []byte(demo.Config("127.0.0.1:8000", demo.URLsFor(demo.DefaultPortBase))), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCmd(t, "check-config", good)
	if code != 0 || !strings.Contains(out, "route saif") || !strings.Contains(out, "openrouter") {
		t.Fatalf("exit %d, summary:\n%s", code, out)
	}
	// The demo is the paper's topology: one target per wire protocol, R1 with think-tags.
	for _, want := range []string{`saif\s+http://127\.0\.0\.1:18441\n`, `ollama\s+http://127\.0\.0\.1:18442\n`, `think-tags`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("summary lacks %s:\n%s", want, out)
		}
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\ncolour = \"red\"\n\n[routes.r]\ntargets = [\"a\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, "check-config", bad)
	if code != 1 || !strings.Contains(errOut, "bad.toml:4:") || !strings.Contains(errOut, "colour") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestKeygen(t *testing.T) {
	code, out, _ := runCmd(t, "keygen", "laptop")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	key := regexp.MustCompile(`hk-[A-Za-z0-9_-]+`).FindString(out)
	sum := sha256.Sum256([]byte(key))
	if key == "" || !strings.Contains(out, hex.EncodeToString(sum[:])) || !strings.Contains(out, "[[keys]]") {
		t.Fatalf("keygen output:\n%s", out)
	}
	// The printed block is valid config, and the printed key authenticates against it.
	block := out[strings.Index(out, "[[keys]]"):]
	cfg, err := config.Parse([]byte(block+"\n[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n[routes.r]\ntargets = [\"a\"]\n"), "k.toml", nil)
	if err != nil {
		t.Fatalf("pasted block: %v", err)
	}
	if _, ok := cfg.Authenticate(key); !ok {
		t.Fatal("the printed key does not authenticate against its printed hash")
	}
}

func TestDemoPrintConfigIsValid(t *testing.T) {
	code, out, _ := runCmd(t, "demo", "--print-config")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := config.Parse([]byte(out), "demo.toml", nil); err != nil {
		t.Fatalf("demo config does not load: %v\n%s", err, out)
	}
}

func TestRouteEval(t *testing.T) {
	code, out, errOut := runCmd(t, "route", "eval", filepath.Join("..", "..", "autoroute", "testdata", "labelled.jsonl"))
	if code != 0 || !strings.Contains(out, "route accuracy:") || !strings.Contains(out, "confusion") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestRouteEvalConfigAfterFile runs the command as the usage line writes it, FILE before
// --config, and with the flag first; both must take the [auto] rules from the file.
func TestRouteEvalConfigAfterFile(t *testing.T) {
	labelled := filepath.Join("..", "..", "autoroute", "testdata", "labelled.jsonl")
	noAuto := filepath.Join(t.TempDir(), "noauto.toml")
	if err := os.WriteFile(noAuto, []byte("[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\n[routes.r]\ntargets = [\"a\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"route", "eval", labelled, "--config", noAuto},
		{"route", "eval", "--config", noAuto, labelled},
	} {
		t.Run(strings.Join(args[2:], " "), func(t *testing.T) {
			// The file has no [auto] table: the error shows that --config was read.
			code, _, errOut := runCmd(t, args...)
			if code != 1 || !strings.Contains(errOut, "has no [auto] table") {
				t.Errorf("exit %d, stderr %q; want 1 and the file's missing [auto] table", code, errOut)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"keygen"}, {"serve", "--nope"}, {"route", "eval"},
		{"route", "eval", "a.jsonl", "b.jsonl"}, {"route", "eval", "a.jsonl", "--config", "c.toml", "extra"}} {
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := runCmd(t, "serve", "--config", "/no/such/file.toml"); code != 1 {
		t.Errorf("missing config: exit %d, want 1", code)
	}
}

// TestHelpFlag holds every subcommand's --help to what `gateway --help` does: the flags on stdout
// (TestHelpOnStdout) and exit 0, not "flag: help requested" and exit 2.
func TestHelpFlag(t *testing.T) {
	tests := []struct {
		args []string
		flag string // one flag the help must list
	}{
		{[]string{"serve", "--help"}, "-config"},
		{[]string{"serve", "-h"}, "-listen"},
		{[]string{"demo", "--help"}, "-sim-port-base"},
		{[]string{"route", "eval", "--help"}, "-config"},
		{[]string{"conformance", "--help"}, "-base-url"},
		{[]string{"lru-sim", "--help"}, "-slots"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.args...)
			if code != 0 || !strings.Contains(out, tt.flag) || errOut != "" {
				t.Errorf("exit %d, want 0 with %s listed; stdout:\n%s\nstderr:\n%s", code, tt.flag, out, errOut)
			}
		})
	}
}

// TestHelpOnPositionalCommands: the commands that take a name or a file rather than flags answer
// --help with their usage line and exit 0 too, instead of taking it as the argument: keygen made
// a key named "--help" and printed it for the config, check-config tried to open "--help".
func TestHelpOnPositionalCommands(t *testing.T) {
	tests := []struct {
		args  []string
		usage string
	}{
		{[]string{"keygen", "--help"}, "gateway keygen NAME"},
		{[]string{"keygen", "-h"}, "gateway keygen NAME"},
		{[]string{"check-config", "--help"}, "gateway check-config FILE"},
		{[]string{"check-config", "-help"}, "gateway check-config FILE"},
		{[]string{"route", "--help"}, "gateway route eval FILE"},
		// version said "takes no arguments" and exited 2, though the usage offers help COMMAND.
		{[]string{"version", "--help"}, "gateway version"},
		{[]string{"help", "version"}, "gateway version"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.args...)
			if code != 0 || errOut != "" || !strings.Contains(out, tt.usage) || strings.Contains(out, "hk-") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 0, the usage line %q (no key) and nothing on stderr", code, out, errOut, tt.usage)
			}
		})
	}
	// A name that looks like a flag is a mistake in the command line, not a key's name.
	if code, out, _ := runCmd(t, "keygen", "--name=laptop"); code != 2 || out != "" {
		t.Errorf("keygen --name=laptop: exit %d, stdout %q; want 2 and no key", code, out)
	}
}

// TestLogLevel: --log-level takes debug, info, warn or error in any case, and nothing else:
// slog's own parser also reads offsets (INFO+2, DEBUG-4), which would log at levels the usage
// does not name.
func TestLogLevel(t *testing.T) {
	for _, level := range []string{"debug", "INFO", "Warn", "error", "ERROR"} {
		_, flush, err := newLogger(&bytes.Buffer{}, level)
		if err != nil {
			t.Errorf("%q: %v, want it taken", level, err)
			continue
		}
		flush()
	}
	for _, level := range []string{"INFO+2", "warn-4", "DEBUG+0", "", "warning", "trace", "0", " info", "info "} {
		// demo reads the flag with the same newLogger, but would start its simulators if the
		// level were taken: serve, with no config to load, is the command line tried.
		if _, _, err := newLogger(&bytes.Buffer{}, level); err == nil {
			t.Errorf("newLogger(%q) took it", level)
		}
		code, _, errOut := runCmd(t, "serve", "--log-level", level, "--config", "/no/such/file.toml")
		if code != 2 || !strings.Contains(errOut, "debug, info, warn or error") || !strings.HasPrefix(errOut, "gateway: ") {
			t.Errorf("serve --log-level %q: exit %d, stderr %q; want 2 and a usage error naming the valid values", level, code, errOut)
		}
	}
}

// TestServeLoadErrorsEachPrefixed: a config with several problems is refused with all of them,
// one per line, each line prefixed as every other message of the command is (the joined error
// printed whole prefixed its first line only).
func TestServeLoadErrorsEachPrefixed(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.toml")
	conf := "[targets.a]\nadapter = \"openai\"\nurl = \"http://127.0.0.1:1/v1\"\ncolour = \"red\"\nshade = \"blue\"\n\n[routes.r]\ntargets = [\"a\"]\n"
	if err := os.WriteFile(bad, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, "serve", "--config", bad)
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != 1 || len(lines) != 2 {
		t.Fatalf("exit %d, stderr %q; want 1 and two lines", code, errOut)
	}
	for i, want := range []string{"bad.toml:4:", "bad.toml:5:"} {
		if !strings.HasPrefix(lines[i], "gateway: ") || !strings.Contains(lines[i], want) {
			t.Errorf("line %d %q, want it prefixed with \"gateway: \" and holding %q", i, lines[i], want)
		}
	}
}

// TestOpenLoopback: an open gateway that was told "localhost" but got another address from the
// system's resolver refuses to serve; a keyed one, or a loopback address, serves.
func TestOpenLoopback(t *testing.T) {
	lan := &net.TCPAddr{IP: net.ParseIP("192.168.1.7"), Port: 8000}
	for _, tc := range []struct {
		open bool
		addr net.Addr
		ok   bool
	}{
		{true, &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8000}, true},
		{true, &net.TCPAddr{IP: net.ParseIP("::1"), Port: 8000}, true},
		{true, lan, false},
		{true, &net.UnixAddr{Name: "/tmp/x", Net: "unix"}, false},
		{false, lan, true},
	} {
		err := openLoopback(tc.open, "localhost:8000", tc.addr)
		if (err == nil) != tc.ok {
			t.Errorf("open %v, %v: err %v, want ok %v", tc.open, tc.addr, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "192.168.1.7") && tc.addr == lan {
			t.Errorf("the error does not say where it resolved: %v", err)
		}
	}
}
