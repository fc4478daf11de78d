package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/demo"
	"github.com/hayula/gateway/server"
)

// TestHelpOnStdout: help that was asked for (--help, -h, gateway help CMD) is the command's
// answer: it goes to stdout, as `gateway --help`'s always did and as GNU's standards ask, so that
// `gateway conformance --help | less` shows it; a usage printed because of a mistake goes to
// stderr with exit 2. Every subcommand's went to stderr.
func TestHelpOnStdout(t *testing.T) {
	tests := []struct {
		args []string
		want string // what the help must hold
	}{
		{[]string{"--help"}, "gateway serve"},
		{[]string{"help"}, "gateway serve"},
		{[]string{"serve", "--help"}, "-listen"},
		{[]string{"serve", "-h"}, "-log-level"},
		{[]string{"demo", "--help"}, "-sim-port-base"},
		{[]string{"check-config", "--help"}, "gateway check-config FILE"},
		{[]string{"keygen", "-h"}, "gateway keygen NAME"},
		{[]string{"route", "--help"}, "gateway route eval FILE"},
		{[]string{"route", "eval", "--help"}, "-config"},
		{[]string{"import", "--help"}, "gateway import litellm FILE"},
		{[]string{"import", "litellm", "--help"}, "-out"},
		{[]string{"help", "import", "litellm"}, "-out"},
		{[]string{"lru-sim", "--help"}, "-slots"},
		{[]string{"lru-sim", "generate", "--help"}, "-zipf"},
		{[]string{"conformance", "--help"}, "-base-url"},
		{[]string{"help", "serve"}, "-listen"},
		{[]string{"help", "conformance"}, "-base-url"},
		{[]string{"help", "keygen"}, "gateway keygen NAME"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.args...)
			if code != 0 || !strings.Contains(out, tt.want) || errOut != "" || strings.Contains(out, "hk-") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 0, the help on stdout (holding %q) and nothing on stderr",
					code, out, errOut, tt.want)
			}
		})
	}
	if code, out, errOut := runCmd(t, "help", "frobnicate"); code != 2 || out != "" || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("help frobnicate: exit %d, stdout %q, stderr %q; want 2 and the unknown command on stderr", code, out, errOut)
	}
}

// TestUsageMistakesOnStderr: a mistake on the command line is said once, on stderr, with exit 2
// and nothing on stdout. A flag the command does not define was said twice: by the flag package,
// then again prefixed.
func TestUsageMistakesOnStderr(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--bogus"}, {"demo", "--bogus"}, {"route", "eval", "--bogus"}, {"route", "eval", "x.jsonl", "--bogus"},
		{"import", "litellm", "--bogus"}, {"import", "litellm", "x.yaml", "--bogus"},
		{"lru-sim", "--bogus"}, {"lru-sim", "generate", "--bogus"}, {"conformance", "--bogus"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, args...)
			if code != 2 || out != "" || strings.Count(errOut, "-bogus") != 1 || !strings.Contains(errOut, "Usage") && !strings.Contains(errOut, "usage") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, the flag named once and the usage on stderr", code, out, errOut)
			}
		})
	}
}

// TestMissingArgumentNamed: a command run without its argument says which one it lacks, not
// only its usage line.
func TestMissingArgumentNamed(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"keygen"}, "missing NAME"},
		{[]string{"check-config"}, "missing FILE"},
		{[]string{"route", "eval"}, "missing FILE"},
		{[]string{"route", "eval", "--config", "c.toml"}, "missing FILE"},
		{[]string{"route"}, "missing eval"},
		{[]string{"import"}, "missing litellm"},
		{[]string{"import", "litellm"}, "missing FILE"},
		{[]string{"conformance"}, "--base-url is required"},
		{[]string{"lru-sim"}, "--trace is required"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.args...)
			if code != 2 || out != "" || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q on stderr", code, out, errOut, tt.want)
			}
		})
	}
}

// TestBindFailureNamesAddress: serve and demo on a port something else holds exit 1 with a
// message naming the address; the demo says nothing of trying it first (its "Try: curl" would
// reach whatever holds the port).
func TestBindFailureNamesAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// serve starts no simulator, so their ports are never bound; the demo's are left to the
	// system (--sim-port-base 0). Four in a row next to a port the system had just given out were
	// guessed before, and under load all ten tries found one taken by a connection: the ports
	// the system hands out next are the ones other clients get.
	conf := filepath.Join(t.TempDir(), "gateway.toml")
	if err := os.WriteFile(conf, []byte(demo.Config(addr, demo.URLsFor(demo.DefaultPortBase))), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"serve", "--config", conf},
		{"demo", "--listen", addr, "--sim-port-base", "0"},
	} {
		t.Run(args[0], func(t *testing.T) {
			var out, errb strings.Builder
			code := run(ctx, args, &out, &errb)
			if code != 1 || !strings.Contains(errb.String(), addr) || strings.Contains(out.String(), "curl") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, the address %s on stderr and no invitation to try it",
					code, out.String(), errb.String(), addr)
			}
		})
	}
}

// TestCheckedConfigBuilds: a file check-config passes is one serve builds its server from (the
// step after the load that could still refuse: policies, lifecycle's own validation of the
// processes and groups). Every config the repository ships is tried: the one that uses every
// key, the homelab, the demo's.
func TestCheckedConfigBuilds(t *testing.T) {
	files := map[string][]byte{"demo.toml": []byte(demo.Config("127.0.0.1:8000", demo.URLsFor(demo.DefaultPortBase)))}
	for _, name := range []string{"full.toml", "homelab.toml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	// Every secret the files name is set: check-config refuses an unset one.
	getenv := func(string) string { return "sk-test" }
	for name, b := range files {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			// full.toml's tls_cert_file and tls_key_file are beside it, as its config's.
			if err := os.CopyFS(filepath.Join(dir, "tls"), os.DirFS(filepath.Join("..", "..", "config", "testdata", "tls"))); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(b, filepath.Join(dir, name), getenv)
			if err != nil {
				t.Fatalf("check-config refuses it: %v", err)
			}
			srv, err := server.New(server.Options{Config: cfg})
			if err != nil {
				t.Fatalf("check-config passes it, serve refuses it: %v", err)
			}
			srv.Close()
		})
	}
}

// TestKeygenKeyOnce: the key is printed once, on stdout, and nowhere in the block to paste into
// the config (which holds its hash); nothing goes to stderr, where a service manager would log it.
func TestKeygenKeyOnce(t *testing.T) {
	code, out, errOut := runCmd(t, "keygen", "laptop")
	key := regexp.MustCompile(`hk-[A-Za-z0-9_-]+`).FindString(out)
	if code != 0 || key == "" || strings.Count(out, key) != 1 || errOut != "" {
		t.Fatalf("exit %d, key %q, stdout %q, stderr %q; want 0, the key once on stdout, nothing on stderr", code, key, out, errOut)
	}
	block := out[strings.Index(out, "[[keys]]"):]
	if strings.Contains(block, "hk-") || !strings.HasSuffix(block, "\"\n") {
		t.Errorf("the block to paste holds the key, or does not end with its hash line:\n%s", block)
	}
}

// TestStrayArgumentRefused: serve and demo take only flags. `gateway serve my.toml` (the config
// file named as check-config takes it) loaded gateway.toml instead, or served it when there was
// one, and `gateway demo extra` started the demo: a word the command does not read is a usage
// error that names it, before anything is loaded or started.
func TestStrayArgumentRefused(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "my.toml"},
		{"serve", "--config", "/no/such/gateway.toml", "my.toml"},
		{"demo", "extra"},
		{"demo", "--print-config", "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errb strings.Builder
			code := run(ctx, args, &out, &errb)
			stray := args[len(args)-1]
			if code != 2 || out.String() != "" || !strings.Contains(errb.String(), `"`+stray+`"`) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q named on stderr", code, out.String(), errb.String(), stray)
			}
		})
	}
}

// TestServeWithoutConfigSaysWhere: `gateway serve` run where there is no gateway.toml says that
// it looked for that default and that --config names another file; a --config given is only
// named.
func TestServeWithoutConfigSaysWhere(t *testing.T) {
	t.Chdir(t.TempDir())
	code, _, errOut := runCmd(t, "serve")
	if code != 1 || !strings.Contains(errOut, "gateway.toml") || !strings.Contains(errOut, "--config") {
		t.Errorf("serve: exit %d, stderr %q; want 1, the default file and --config named", code, errOut)
	}
	code, _, errOut = runCmd(t, "serve", "--config", "other.toml")
	if code != 1 || !strings.Contains(errOut, "other.toml") || strings.Contains(errOut, "--config") {
		t.Errorf("serve --config other.toml: exit %d, stderr %q; want 1 and the file named, no hint", code, errOut)
	}
}
