package main

import (
	"os"
	"strings"
)

// sysmonSetting is what the serving commands add to GODEBUG (see sysmonEnv).
const sysmonSetting = "schedtrace=2147483647"

// sysmonEnv returns the environment to re-execute a serving command in, and false when there is
// nothing to change.
//
// Why: between two requests every P of the Go runtime is idle, and its monitor thread (sysmon)
// goes into a deep sleep; the next request's first system call wakes it (a futex wake and a
// thread switch), and it then polls every 20 µs for the next millisecond. At one request at a
// time that was about 15% of the gateway's CPU (perf), and it shares two cores with the
// gateway's own threads. The runtime has one switch that keeps sysmon out of deep sleep: a
// schedtrace period, which it would honour by printing one line of scheduler state per period.
// The longest period it takes (2^31−1 ms, about 24.8 days) makes that line all but never
// appear; sysmon then backs off to one wake-up every 10 ms while the gateway is idle. The bench
// harness measured, with it: CPU per request at concurrency 1 −19%, added latency at
// concurrency 1 and the stream's first byte lower, throughput at 64 higher (PERFORMANCE.md).
// Costs: sysmon wakes 100 times a second while idle (0.2% of a core here), a crash dump also
// prints the scheduler's state, and one "SCHED" line on stderr every 24.8 days of uptime.
//
// An operator who sets schedtrace in GODEBUG (schedtrace=0 turns this off) is left alone.
// The GODEBUG the gateway was started with travels in godebugBefore, so that the re-executed
// gateway can give it back to the processes it starts (lifecycle's managed targets): the
// runtime reads schedtrace once, at start, and keeps it.
func sysmonEnv(environ []string) ([]string, bool) {
	env := make([]string, 0, len(environ)+2)
	godebug := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			godebug = v
			continue
		}
		if strings.HasPrefix(kv, godebugBefore+"=") {
			return nil, false // re-executed already
		}
		env = append(env, kv)
	}
	for _, s := range strings.Split(godebug, ",") {
		if k, _, _ := strings.Cut(strings.TrimSpace(s), "="); k == "schedtrace" {
			return nil, false
		}
	}
	env = append(env, godebugBefore+"="+godebug)
	if godebug != "" {
		godebug += ","
	}
	return append(env, "GODEBUG="+godebug+sysmonSetting), true
}

// godebugBefore carries the GODEBUG a gateway was started with across its re-execution.
const godebugBefore = "HAYULA_GODEBUG_BEFORE"

// keepSysmonAwake re-executes the gateway, same process, with sysmonSetting in GODEBUG when
// args (the command line after the program's name) start a command that serves requests
// (serve, demo) and the environment does not have it yet; not for a request for its usage,
// which serves nothing. It returns only when it did not re-execute; a failure is reported on
// stderr and the gateway goes on as it is. In the re-executed gateway it puts GODEBUG back as it
// was.
func keepSysmonAwake(args []string, reexec func(env []string) error) {
	if len(args) == 0 || args[0] != "serve" && args[0] != "demo" {
		return
	}
	for _, a := range args[1:] {
		if a == "-h" || a == "-help" || a == "--help" || a == "--h" {
			return
		}
	}
	if before, ok := os.LookupEnv(godebugBefore); ok {
		_ = os.Unsetenv(godebugBefore)
		if before == "" {
			_ = os.Unsetenv("GODEBUG")
		} else {
			_ = os.Setenv("GODEBUG", before)
		}
		return
	}
	env, ok := sysmonEnv(os.Environ())
	if !ok {
		return
	}
	if err := reexec(env); err != nil {
		os.Stderr.WriteString("gateway: could not re-execute with GODEBUG=" + sysmonSetting + " (" + err.Error() + "); going on without it\n")
	}
}
