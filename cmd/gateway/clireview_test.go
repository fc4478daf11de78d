package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hayula/gateway/demo"
)

// TestListenFlagMistakeIsUsage: a --listen that is no listen address at all (a bare port, as
// LiteLLM's --port takes it, a host without its port, a port out of range or a service name) is a
// mistake on the command line: exit 2, one line naming --listen and the value, before any file
// is read or simulator started. serve read the file first (a missing file hid the flag's
// mistake) and then exited 1 with "listen override"; demo started its simulators and then
// blamed line 2 of a demo.toml that the operator never wrote, twice. The demo, which has no keys,
// refuses an address off loopback the same way.
func TestListenFlagMistakeIsUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string // besides --listen and the value
	}{
		{[]string{"serve", "--config", "/no/such/gateway.toml", "--listen", "8000"}, "host:port"},
		{[]string{"serve", "--config", "/no/such/gateway.toml", "--listen", "127.0.0.1"}, "host:port"},
		{[]string{"serve", "--config", "/no/such/gateway.toml", "--listen", "[::1]"}, "host:port"},
		{[]string{"serve", "--config", "/no/such/gateway.toml", "--listen", "127.0.0.1:99999"}, "0 to 65535"},
		{[]string{"serve", "--config", "/no/such/gateway.toml", "--listen", "127.0.0.1:http"}, "0 to 65535"},
		{[]string{"demo", "--sim-port-base", "0", "--listen", "8000"}, "host:port"},
		{[]string{"demo", "--sim-port-base", "0", "--listen", "localhost"}, "host:port"},
		{[]string{"demo", "--sim-port-base", "0", "--listen", "127.0.0.1:70000"}, "0 to 65535"},
		{[]string{"demo", "--sim-port-base", "0", "--listen", ":0"}, "loopback"},
		{[]string{"demo", "--sim-port-base", "0", "--listen", "192.168.1.7:8000"}, "loopback"},
		{[]string{"demo", "--print-config", "--listen", "0.0.0.0:8000"}, "loopback"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errb strings.Builder
			code := run(ctx, tt.args, &out, &errb)
			value := tt.args[len(tt.args)-1]
			msg := errb.String()
			if code != 2 || out.String() != "" || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "--listen") ||
				!strings.Contains(msg, `"`+value+`"`) || !strings.Contains(msg, tt.want) || strings.Contains(msg, ".toml") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line naming --listen, %q and %q, and no file",
					code, out.String(), msg, value, tt.want)
			}
		})
	}
}

// TestCheckConfigTakesNoFlags: check-config's one argument is the file; a word that looks like a
// flag is a mistake on the command line (exit 2, naming it), as keygen's is, not a file to open:
// `gateway check-config -q` tried to open "-q" and exited 1 as for a file that does not load, and
// `gateway check-config --config gateway.toml`, serve's habit, was refused for counting two
// arguments without saying that the file needs no flag.
func TestCheckConfigTakesNoFlags(t *testing.T) {
	for _, args := range [][]string{
		{"check-config", "-q"},
		{"check-config", "--strict"},
		{"check-config", "--config", "gateway.toml"},
		{"check-config", "--config=gateway.toml"},
		{"check-config", "gateway.toml", "--strict"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, args...)
			flag := ""
			for _, a := range args[1:] {
				if strings.HasPrefix(a, "-") {
					flag = a
					break
				}
			}
			if code != 2 || out != "" || !strings.Contains(errOut, "takes no flags") || !strings.Contains(errOut, flag) ||
				!strings.Contains(errOut, "gateway check-config FILE") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, %s named, and the usage line", code, out, errOut, flag)
			}
		})
	}
}

// TestEmptyFlagValueRefused: a flag given an empty value, as a unit file's --listen $LISTEN
// gives it when the variable is unset, is a usage error naming the flag. serve --listen "" served
// on the file's address, as if the flag had not been given, and serve --config "" said only
// "open : no such file or directory".
func TestEmptyFlagValueRefused(t *testing.T) {
	for _, tt := range []struct {
		args []string
		flag string
	}{
		{[]string{"serve", "--config", "/no/such/gateway.toml", "--listen", ""}, "--listen"},
		{[]string{"serve", "--config", "/no/such/gateway.toml", "--listen="}, "--listen"},
		{[]string{"serve", "--config", ""}, "--config"},
		{[]string{"serve", "--config="}, "--config"},
		{[]string{"route", "eval", "x.jsonl", "--config", ""}, "--config"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.args...)
			if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.flag) || !strings.Contains(errOut, "empty") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line saying %s is empty", code, out, errOut, tt.flag)
			}
		})
	}
}

// TestOpenListenFlagIsUsage: serve's --listen off loopback for a file with no [[keys]] (an open
// gateway) is refused as the demo's is, as a mistake on the command line (exit 2): the file alone
// is fine, and the flag is what asks for what the rule forbids. It exited 1, as for a file that
// does not load. The message still names the file, whose keys decide it, and how to fix it; the
// same address in the file's own listen stays the file's problem (exit 1).
func TestOpenListenFlagIsUsage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "open.toml")
	cfg := demo.Config("127.0.0.1:8000", demo.URLsFor(demo.DefaultPortBase))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, msg := runCmd(t, "serve", "--config", path, "--listen", "0.0.0.0:8000")
	if code != 2 || out != "" || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "listen override") ||
		!strings.Contains(msg, `"0.0.0.0:8000"`) || !strings.Contains(msg, "keygen") || !strings.Contains(msg, "open.toml") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line naming the file, the address and keygen", code, out, msg)
	}
	inFile := filepath.Join(dir, "infile.toml")
	if err := os.WriteFile(inFile, []byte(strings.Replace(cfg, `"127.0.0.1:8000"`, `"0.0.0.0:8000"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, msg := runCmd(t, "serve", "--config", inFile); code != 1 || !strings.Contains(msg, "keygen") {
		t.Errorf("the file's own listen: exit %d, stderr %q; want 1", code, msg)
	}
}
