//go:build linux

// Command bench is the gateway's reproducible benchmark: `go run ./bench` (from the module root).
//
// It builds the gateway (go build into a temporary directory) and runs it as its own process with
// a generated config, in front of a fast fake upstream (this binary re-executed, OpenAI-shaped,
// non-streaming and SSE answers of precomputed bytes), and measures what a client sees, directly
// against the upstream and through the gateway, with a closed-loop Go load generator (N workers,
// one keep-alive pool of N+16 connections per column). Rounds are interleaved, in an order that
// turns each round — direct, gateway, goproxy, goblind, [nginx,] [nginx,] goblind, goproxy,
// gateway, direct, direct, gateway … — so that drift of a shared machine falls on every column
// alike; a row reports the median of the round medians of p50 and p99, and the added latency
// (column − direct).
//
// Rows: chat at concurrency 1, 16 and 64 (and throughput at 64 as a ratio to direct); a stream at
// concurrency 1 (added time to first and to last byte); model "auto" against explicit routing;
// the gateway's RSS idle and under --streams concurrent slow streams, read from /proc/PID/status.
// Two Go proxies (this binary re-executed) are columns by default: goproxy, a plain
// httputil.ReverseProxy (Go's net/http server and client with none of the gateway's work), and
// goblind, a byte relay that knows HTTP/1.1 framing and nothing else (one upstream connection
// pinned to each client connection, no head read beyond its framing, no hop-by-hop handling, no
// timeout): a lower bound for a Go proxy, below what any real proxy does, so gateway − goblind is
// the gateway's own work plus the head parsing, pooling and timeouts every proxy pays. With
// --vs-nginx and nginx on PATH, a blind nginx proxy_pass with upstream keepalive is another
// column: a real proxy (it parses and rebuilds both heads, pools upstream connections, arms its
// timeouts) that parses no body.
//
// Everything listens on 127.0.0.1 and every loop is bounded by a round's duration. The Markdown
// report goes to stdout and, with --out FILE, to FILE; progress goes to stderr. --quick finishes
// in about 30 s; --profile DIR also profiles the gateway under load (see profile.go); --count N
// times nothing and counts instead: instructions and cache misses per request of each proxy run
// under valgrind's cachegrind (see count.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	switch os.Getenv(roleEnv) {
	case roleUpstream:
		os.Exit(upstreamMain(os.Args[1:]))
	case roleGoProxy:
		os.Exit(goproxyMain(os.Args[1:]))
	case roleGoBlind:
		os.Exit(goblindMain(os.Args[1:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// options are the command line, after --quick has filled in what was not given.
type options struct {
	Quick        bool
	Rounds       int
	RoundTime    time.Duration
	Warmup       time.Duration
	Conc         []int
	Chunks       int
	PromptBytes  int
	Streams      int
	Bursts       int
	SlowChunks   int
	SlowInterval time.Duration
	VsNginx      bool
	VsGoProxy    bool
	VsGoBlind    bool
	Out          string
	LogLevel     string
	Profile      string
	ProfileTime  time.Duration
	GatewayBin   string
	Count        int
	Callgrind    string
	CountI1      int
	CountConc    int
	CountLL      int
	Stacks       bool
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.Quick, "quick", false, "a short run (about 30 s): 3 rounds of 0.3 s, 300 slow streams of 1.5 s")
	fs.IntVar(&o.Rounds, "rounds", 7, "interleaved rounds per row")
	fs.DurationVar(&o.RoundTime, "round-time", 2*time.Second, "duration of one round of one column")
	fs.DurationVar(&o.Warmup, "warmup", time.Second, "warm-up per column before a row's rounds")
	conc := fs.String("conc", "1,16,64", "concurrencies of the chat rows; the last one also gives throughput")
	fs.IntVar(&o.Chunks, "chunks", 32, "content events of a fast stream")
	fs.IntVar(&o.PromptBytes, "prompt-bytes", 1024, "size of the request body")
	fs.IntVar(&o.Streams, "streams", 1000, "concurrent slow streams for the RSS row")
	fs.IntVar(&o.Bursts, "bursts", 3, "bursts of --streams slow streams per column, in turn; the report gives the median burst and every burst's count")
	fs.IntVar(&o.SlowChunks, "slow-chunks", 30, "events of a slow stream")
	fs.DurationVar(&o.SlowInterval, "slow-interval", 100*time.Millisecond, "time between the events of a slow stream")
	fs.BoolVar(&o.VsNginx, "vs-nginx", false, "add a blind nginx proxy_pass column when nginx is on PATH")
	fs.BoolVar(&o.VsGoProxy, "vs-goproxy", true, "add a plain httputil.ReverseProxy column (Go's net/http without the gateway's work)")
	fs.BoolVar(&o.VsGoBlind, "vs-goblind", true, "add a Go proxy that only frames and copies (the floor Go's runtime sets)")
	fs.StringVar(&o.Out, "out", "", "also write the Markdown report to this file")
	fs.StringVar(&o.LogLevel, "log-level", "info", "the gateway's --log-level (info is its default: one line per request)")
	fs.StringVar(&o.Profile, "profile", "", "profile the gateway under load into this directory (CPU and allocations)")
	fs.DurationVar(&o.ProfileTime, "profile-time", 10*time.Second, "duration of each profile")
	fs.StringVar(&o.GatewayBin, "gateway", "", "use this gateway binary instead of building ./cmd/gateway")
	fs.IntVar(&o.Count, "count", 0, "instead of timing, count instructions and cache misses per request under valgrind's cachegrind, over this many requests (1000 is a good start)")
	fs.IntVar(&o.CountI1, "count-i1", 0, "with --count, simulate a first-level instruction cache of this many bytes (8-way, 64-byte lines; a power of two from 4096 to 67108864) instead of this CPU's: the size at which a row's L1i misses end is the size of the code it runs each request")
	fs.IntVar(&o.CountConc, "count-conc", 1, "with --count, keep this many requests in flight at once (1 to 256), each sender over its own connection: what a request costs among others, as under load, rather than alone")
	fs.IntVar(&o.CountLL, "count-ll", 0, "with --count, simulate a last-level cache of this many bytes (8-way, 64-byte lines; a power of two from 65536 to 67108864) instead of this CPU's L3; sized as its second level (524288 here), the data misses say how much of what a request touches other requests pushed out")
	fs.BoolVar(&o.Stacks, "stacks", false, "instead of timing, measure how deep a request's goroutine stack is where it waits for its upstream (for a chat answer, a stream's first event, its next event), from a dump of the gateway's goroutines")
	fs.StringVar(&o.Callgrind, "callgrind", "", "with --count, run the gateway under valgrind's callgrind instead, once a row, and write each row's profile (costs by caller, for callgrind_annotate) into this directory")
	if err := fs.Parse(args); err != nil {
		return o, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.Quick {
		quick := map[string]func(){
			"rounds":       func() { o.Rounds = 3 },
			"round-time":   func() { o.RoundTime = 300 * time.Millisecond },
			"warmup":       func() { o.Warmup = 200 * time.Millisecond },
			"streams":      func() { o.Streams = 300 },
			"bursts":       func() { o.Bursts = 1 },
			"slow-chunks":  func() { o.SlowChunks = 15 },
			"profile-time": func() { o.ProfileTime = 3 * time.Second },
		}
		for name, f := range quick {
			if !set[name] {
				f()
			}
		}
	}
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 4096 {
			return o, usageError{fmt.Sprintf("bad --conc %q: give concurrencies from 1 to 4096", *conc)}
		}
		o.Conc = append(o.Conc, n)
	}
	switch {
	case o.Rounds < 1 || o.Rounds > 1000:
		return o, usageError{"--rounds must be from 1 to 1000"}
	case o.RoundTime < 10*time.Millisecond || o.RoundTime > 10*time.Minute:
		return o, usageError{"--round-time must be from 10ms to 10m"}
	case o.Warmup < 0 || o.Warmup > 10*time.Minute:
		return o, usageError{"--warmup must be from 0 to 10m"}
	case o.Chunks < 1 || o.Chunks > 100000:
		return o, usageError{"--chunks must be from 1 to 100000"}
	case o.PromptBytes < 200 || o.PromptBytes > 1<<20:
		return o, usageError{"--prompt-bytes must be from 200 to 1048576"}
	case o.Streams < 0 || o.Streams > 20000:
		return o, usageError{"--streams must be from 0 to 20000"}
	case o.Bursts < 1 || o.Bursts > 20:
		return o, usageError{"--bursts must be from 1 to 20"}
	case o.SlowChunks < 1 || o.SlowInterval <= 0 || time.Duration(o.SlowChunks)*o.SlowInterval > 10*time.Minute:
		return o, usageError{"a slow stream must have at least one event and last at most 10m"}
	case o.ProfileTime < time.Second || o.ProfileTime > 10*time.Minute:
		return o, usageError{"--profile-time must be from 1s to 10m"}
	case o.Count < 0 || o.Count > 100000:
		return o, usageError{"--count must be from 1 to 100000 requests (0: time, do not count)"}
	case o.Callgrind != "" && o.Count == 0:
		return o, usageError{"--callgrind needs --count: how many requests each row's profile covers"}
	case o.CountI1 != 0 && (o.Count == 0 || o.Callgrind != ""):
		return o, usageError{"--count-i1 needs --count, without --callgrind (which simulates no cache)"}
	case o.CountI1 != 0 && (o.CountI1 < 4096 || o.CountI1 > 64<<20 || o.CountI1&(o.CountI1-1) != 0):
		return o, usageError{"--count-i1 must be a power of two from 4096 to 67108864 bytes"}
	case o.CountLL != 0 && (o.Count == 0 || o.Callgrind != ""):
		return o, usageError{"--count-ll needs --count, without --callgrind (which simulates no cache)"}
	case o.CountLL != 0 && (o.CountLL < 64<<10 || o.CountLL > 64<<20 || o.CountLL&(o.CountLL-1) != 0):
		return o, usageError{"--count-ll must be a power of two from 65536 to 67108864 bytes"}
	case set["count-conc"] && o.Count == 0:
		return o, usageError{"--count-conc needs --count"}
	case o.CountConc < 1 || o.CountConc > 256:
		return o, usageError{"--count-conc must be from 1 to 256"}
	case o.Stacks && o.Count > 0:
		return o, usageError{"--stacks and --count are two different runs: give one"}
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "bench: "+format+"\n", a...) }
	began := time.Now()

	nofile, err := raiseNoFile()
	if err != nil {
		return fmt.Errorf("raise the file-descriptor limit: %w", err)
	}
	// Each slow stream holds a client socket here and two in the gateway; the upstream runs in
	// its own process with its own share of the same limit.
	if need := uint64(2*o.Streams + 512); nofile < need {
		return fmt.Errorf("the file-descriptor limit is %d; %d streams need at least %d (raise ulimit -Hn or lower --streams)",
			nofile, o.Streams, need)
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "hayula-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	env := &environment{opts: o, root: root, dir: dir, logf: logf}
	defer env.close()
	if o.Count > 0 {
		return countOnly(ctx, env, stdout)
	}
	if o.Stacks {
		return stacksOnly(ctx, env, stdout)
	}
	if err := env.start(ctx); err != nil {
		return err
	}
	rep := &report{opts: o, machine: describeMachine(), nofile: nofile, autoNote: env.autoNote, nginxNote: env.nginxNote}

	logf("RSS idle and under %d slow streams", o.Streams)
	if rep.memory, err = env.memoryPhase(ctx); err != nil {
		return err
	}
	for _, sc := range env.scenarios() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if sc.skip != "" {
			rep.skipped = append(rep.skipped, sc.name+": "+sc.skip)
			continue
		}
		logf("%s: %d rounds of %s per column (%s)", sc.name, o.Rounds, o.RoundTime, sc.columnNames())
		rep.results = append(rep.results, runScenario(ctx, sc, o, func() int64 { return env.upstreamConns(ctx) }))
	}
	rep.upstreamConns = env.upstreamConns(ctx)
	if o.Profile != "" {
		env.stopGateway()
		logf("profiling the gateway under load into %s", o.Profile)
		if rep.profiles, err = env.profile(ctx); err != nil {
			return err
		}
	}
	rep.elapsed = time.Since(began)
	md := rep.markdown()
	if _, err := io.WriteString(stdout, md); err != nil {
		return err
	}
	if o.Out != "" {
		if err := os.WriteFile(o.Out, []byte(md), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// countOnly is a run with --count: the fake upstream and, under cachegrind, each proxy in turn.
func countOnly(ctx context.Context, env *environment, stdout io.Writer) error {
	o := env.opts
	if err := env.startUpstream(ctx); err != nil {
		return err
	}
	res, err := runCount(ctx, env, o.Count)
	if err != nil {
		return err
	}
	if o.Callgrind != "" {
		_, err := fmt.Fprintf(stdout, "callgrind profiles of the gateway, one a row, in %s\n", o.Callgrind)
		return err
	}
	m := describeMachine()
	md := fmt.Sprintf("## Benchmark: `go run ./bench %s`\n\nMachine: %d CPUs (%s), %s, %s. Request body %d bytes.\n\n",
		strings.Join(os.Args[1:], " "), m.CPUs, m.CPUModel, m.OS, m.GoVersion, o.PromptBytes)
	if o.CountI1 > 0 {
		md += fmt.Sprintf("The first-level instruction cache simulated is %d KB, 8-way, with 64-byte lines (--count-i1), not this CPU's.\n\n", o.CountI1>>10)
	}
	if o.CountLL > 0 {
		md += fmt.Sprintf("The last-level cache simulated is %d KB, 8-way, with 64-byte lines (--count-ll), not this CPU's L3.\n\n", o.CountLL>>10)
	}
	md += countMarkdown(res, o.Count, o.CountConc, 40, o.CountLL > 0)
	if _, err := io.WriteString(stdout, md); err != nil {
		return err
	}
	if o.Out != "" {
		return os.WriteFile(o.Out, []byte(md), 0o644)
	}
	return nil
}

// stacksOnly is a run with --stacks: the gateway (built, or --gateway's) at each of stackWaits.
func stacksOnly(ctx context.Context, env *environment, stdout io.Writer) error {
	gw := env.opts.GatewayBin
	if gw == "" {
		env.logf("building ./cmd/gateway")
		var err error
		if gw, err = build(ctx, env.root, "./cmd/gateway", env.dir); err != nil {
			return err
		}
	}
	ds, err := stackDepths(ctx, env, gw)
	if err != nil {
		return err
	}
	m := describeMachine()
	md := fmt.Sprintf("## Benchmark: `go run ./bench %s`\n\nMachine: %d CPUs (%s), %s, %s.\n\n",
		strings.Join(os.Args[1:], " "), m.CPUs, m.CPUModel, m.OS, m.GoVersion) + stacksMarkdown(ds, 200)
	if _, err := io.WriteString(stdout, md); err != nil {
		return err
	}
	if env.opts.Out != "" {
		return os.WriteFile(env.opts.Out, []byte(md), 0o644)
	}
	return nil
}

// machine describes where the run happened.
type machine struct {
	CPUs      int
	CPUModel  string
	GoVersion string
	OS        string
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		CPUModel: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}
