package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// reexecProbe is set in the environment of the test binary run by TestKeepSysmonAwakeReexecs.
const reexecProbe = "HAYULA_TEST_REEXEC_PROBE"

// serveHelper names the configuration file the test binary serves as `gateway serve`, by main
// and with its signal handling (TestSecondSignalKillsProcessGroups).
const serveHelper = "HAYULA_TEST_SERVE_CONFIG"

// gatewayHelper holds a command line, its words one a line, that the test binary runs as the
// gateway would, by main: its exit status, signal handling and environment are the command's
// (TestImportJourney).
const gatewayHelper = "HAYULA_TEST_GATEWAY_ARGS"

func TestMain(m *testing.M) {
	if os.Getenv(reexecProbe) == "1" {
		// As main does for gateway serve: this replaces the process once, and the process it
		// becomes (this binary again) finds the setting and goes on to print what it has.
		keepSysmonAwake([]string{"serve"}, reexec)
		// /proc/self/environ is the environment the process image started with.
		start, _ := os.ReadFile("/proc/self/environ")
		started := ""
		for _, kv := range strings.Split(string(start), "\x00") {
			if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
				started = v
			}
		}
		_, marked := os.LookupEnv(godebugBefore)
		fmt.Printf("pid=%d started=%s now=%s marked=%v", os.Getpid(), started, os.Getenv("GODEBUG"), marked)
		os.Exit(0)
	}
	if path := os.Getenv(serveHelper); path != "" {
		// gateway serve --config path, as main runs it: with its signal handling.
		os.Args = []string{os.Args[0], "serve", "--config", path}
		main()
	}
	if args := os.Getenv(gatewayHelper); args != "" {
		os.Args = append([]string{os.Args[0]}, strings.Split(args, "\n")...)
		main()
	}
	goleak.VerifyTestMain(m)
}

func TestSysmonEnv(t *testing.T) {
	for _, tt := range []struct {
		name    string
		environ []string
		want    []string // nil: no re-execution
	}{
		{"no GODEBUG", []string{"PATH=/bin", "HOME=/h"},
			[]string{"PATH=/bin", "HOME=/h", godebugBefore + "=", "GODEBUG=" + sysmonSetting}},
		{"other settings kept", []string{"GODEBUG=http2client=0", "PATH=/bin"},
			[]string{"PATH=/bin", godebugBefore + "=http2client=0", "GODEBUG=http2client=0," + sysmonSetting}},
		{"empty GODEBUG", []string{"GODEBUG="}, []string{godebugBefore + "=", "GODEBUG=" + sysmonSetting}},
		{"operator turned it off", []string{"GODEBUG=schedtrace=0"}, nil},
		{"operator's own period", []string{"GODEBUG=gctrace=1, schedtrace=1000"}, nil},
		{"already re-executed", []string{"PATH=/bin", godebugBefore + "=", "GODEBUG=" + sysmonSetting}, nil},
		{"a name that only starts alike", []string{"GODEBUG=schedtracex=1"},
			[]string{godebugBefore + "=schedtracex=1", "GODEBUG=schedtracex=1," + sysmonSetting}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := sysmonEnv(tt.environ)
			if ok != (tt.want != nil) {
				t.Fatalf("re-execute = %v, want %v", ok, tt.want != nil)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}
		})
	}
}

// Only the commands that serve are re-executed, and a failed re-execution lets them go on.
func TestKeepSysmonAwakeCommands(t *testing.T) {
	t.Setenv("GODEBUG", "")
	for _, tt := range []struct {
		command string
		want    bool
	}{{"serve", true}, {"demo", true}, {"check-config", false}, {"conformance", false}, {"keygen", false},
		{"serve --help", false}, {"demo -h", false}, {"serve --config g.toml -help", false}, {"", false}} {
		var calls int
		keepSysmonAwake(strings.Fields(tt.command), func(env []string) error {
			calls++
			if !strings.Contains(strings.Join(env, "\n"), "GODEBUG="+sysmonSetting) {
				t.Errorf("%s: re-executed without the setting: %q", tt.command, env)
			}
			return errors.New("refused") // as if exec failed: keepSysmonAwake returns
		})
		if (calls == 1) != tt.want {
			t.Errorf("%s: %d re-executions, want re-executed = %v", tt.command, calls, tt.want)
		}
	}
}

// The real thing: the process replaces itself (same PID), starts with the setting, and then
// has its GODEBUG as it was for the processes it starts.
func TestKeepSysmonAwakeReexecs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/environ")
	}
	for _, before := range []string{"", "http2client=0"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), reexecProbe+"=1", "GODEBUG="+before)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		started := sysmonSetting
		if before != "" {
			started = before + "," + sysmonSetting
		}
		want := fmt.Sprintf("pid=%d started=%s now=%s marked=false", cmd.Process.Pid, started, before)
		if string(out) != want {
			t.Errorf("GODEBUG=%q: the re-executed gateway printed %q, want %q", before, out, want)
		}
	}
}
