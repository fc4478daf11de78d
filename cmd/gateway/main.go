// Command gateway is Hayula Gateway: one binary that serves an OpenAI-compatible API in front of
// several LLM services. This package is wiring only: flags → config → run(ctx) error.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hayula/gateway/autoroute"
	"github.com/hayula/gateway/config"
	"github.com/hayula/gateway/config/litellm"
	"github.com/hayula/gateway/conformance"
	"github.com/hayula/gateway/demo"
	"github.com/hayula/gateway/internal/keepalive"
	"github.com/hayula/gateway/internal/logbuf"
	"github.com/hayula/gateway/internal/logfmt"
	"github.com/hayula/gateway/lifecycle"
	"github.com/hayula/gateway/lifecycle/lrusim"
	"github.com/hayula/gateway/metrics"
	"github.com/hayula/gateway/server"
)

const usage = `Hayula Gateway — one OpenAI-compatible API in front of your LLM services.

Usage:
  gateway serve [--config FILE] [--listen ADDR] [--log-level LEVEL]
  gateway demo [--print-config] [--listen ADDR] [--sim-port-base N] [--log-level LEVEL]
  gateway check-config FILE
  gateway keygen NAME
  gateway route eval FILE [--config FILE]
  gateway import litellm FILE [--out FILE]
  gateway lru-sim --trace FILE --slots N [--pinned NAME…] [--swap 2.47s]
  gateway lru-sim generate [--seed N] [--requests N] [--specialists N] [--zipf S] [--locality P]
  gateway conformance --base-url URL [--api-key-env VAR | --api-key KEY] [--model M] [--embedding-model E]
                      [--only GLOB] [--strict] [--format table|json|junit|markdown] [--out FILE] [--timeout 30s]
                      [--ca-file PEM]
  gateway version
  gateway help [COMMAND [SUBCOMMAND]]

Commands:
  serve         serve the API with a configuration file (CONFIG.md)
  demo          serve it in front of simulated backends on loopback: no keys, no models
  check-config  load a configuration as serve would and print what it compiles to
  keygen        make a client API key and the [[keys]] block, with its SHA-256, to paste
  route eval    measure model "auto"'s routing on a labelled set
  import        turn a LiteLLM proxy config.yaml into this gateway's configuration
  lru-sim       replay a trace of specialists under LRU, LFU and Belady's optimal
  conformance   grade an OpenAI-compatible server, this gateway or another
  version       print the version and the Go it was built with

A command's --help (or gateway help COMMAND [SUBCOMMAND]) lists its flags and their defaults.
CONFIG.md documents them all.
`

func main() {
	keepSysmonAwake(os.Args[1:], reexec)
	// exiting is taken by whichever exit comes first, and never given back: the second signal's,
	// or run's end. The second signal kills the model processes, which can end the stop under way
	// and let run return 0 while it is still killing: without it, that 0 could beat its exit
	// status 1 (TestSecondSignalKillsProcessGroups, under load).
	var exiting sync.Mutex
	ctx, stop := notifyShutdown(context.Background(), func() {
		exiting.Lock()
		// The stop under way would have waited for the model processes; exiting now, the gateway
		// kills them and what they started, which their parent-death signal alone would leave.
		lifecycle.KillDescendants()
		fmt.Fprintln(os.Stderr, "gateway: second signal: exiting without waiting for requests in flight")
		os.Exit(1)
	}, time.Now, os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	exiting.Lock()
	os.Exit(code)
}

// sameSignal is how close a signal may follow the first and still be the same request to stop:
// `timeout -s INT` signals the gateway and then its process group, which holds it too, and two
// copies then come microseconds apart, where an operator's second Ctrl-C comes a keystroke later.
const sameSignal = 100 * time.Millisecond

// notifyShutdown returns a context cancelled by the first of sigs; a second one, sameSignal or
// more after it by now, calls force. The first lets serve finish the requests in flight for its
// grace period; an operator who sends another (a second Ctrl-C) wants out now, and
// signal.NotifyContext would swallow it. force kills the managed processes before it exits
// (lifecycle.KillDescendants).
func notifyShutdown(parent context.Context, force func(), now func() time.Time, sigs ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
		case <-done:
			return
		}
		first := now()
		cancel()
		for {
			select {
			case <-ch:
			case <-done:
				return
			}
			if now().Sub(first) >= sameSignal { // sooner, a copy of the first (TestSignalSentTwiceAtOnceIsOneStop)
				force()
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

// run dispatches a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr)
	case "demo":
		err = cmdDemo(ctx, args[1:], stdout, stderr)
	case "check-config":
		return cmdCheckConfig(args[1:], stdout, stderr)
	case "keygen":
		err = cmdKeygen(args[1:], stdout, stderr)
	case "route":
		err = cmdRoute(args[1:], stdout, stderr)
	case "import":
		err = cmdImport(args[1:], stdout, stderr)
	case "lru-sim":
		return lrusim.Main(args[1:], stdout, stderr)
	case "conformance":
		return conformance.Main(ctx, args[1:], os.Getenv, stdout, stderr)
	case "version", "--version":
		if helpAsked(args[1:]) {
			fmt.Fprintf(stdout, "usage: gateway version\n%s\n", about("version"))
			return 0
		}
		if len(args) > 1 {
			fmt.Fprintf(stderr, "gateway: version takes no arguments (got %q)\n\n%s", args[1], usage)
			return 2
		}
		bi, ok := debug.ReadBuildInfo()
		fmt.Fprintln(stdout, versionLine(bi, ok))
		return 0
	case "help", "-h", "--help":
		if args[0] == "help" && len(args) > 1 && args[1] != "help" {
			return cmdHelp(ctx, args[1:], stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "gateway: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		// The flag set has printed its flags; asking for them is not a mistake.
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) && ue.said {
		return 2 // the flag package has said what was wrong, and printed the usage
	}
	if err != nil {
		// A config's problems come joined, one per line: each is its own message, prefixed.
		for line := range strings.SplitSeq(err.Error(), "\n") {
			if strings.HasPrefix(line, "usage: ") {
				fmt.Fprintln(stderr, line) // a usage error's usage line, as the commands print it
				continue
			}
			fmt.Fprintln(stderr, "gateway:", line)
		}
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

// cmdHelp is `gateway help CMD [SUB]`: CMD --help, or CMD SUB --help where SUB is one of CMD's
// own commands (subcommands), so that `help lru-sim generate` shows generate's flags and not
// lru-sim's. A word that names no command of CMD's, or a word more, is a mistake, not CMD's help
// (TestHelpDescendsIntoSubcommands).
func cmdHelp(ctx context.Context, words []string, stdout, stderr io.Writer) int {
	const use = "usage: gateway help [COMMAND [SUBCOMMAND]]"
	subs := subcommands(words[0])
	switch {
	case len(words) == 1:
		return run(ctx, []string{words[0], "--help"}, stdout, stderr)
	case len(words) == 2 && slices.Contains(subs, words[1]):
		return run(ctx, []string{words[0], words[1], "--help"}, stdout, stderr)
	case len(words) == 2 && len(subs) > 0:
		fmt.Fprintf(stderr, "gateway: help: %s has no command %q (its commands: %s)\n%s\n", words[0], words[1], strings.Join(subs, ", "), use)
	case len(words) == 2:
		fmt.Fprintf(stderr, "gateway: help: %s takes no SUBCOMMAND (route, import and lru-sim have commands of their own), got %q\n%s\n", words[0], words[1], use)
	default:
		fmt.Fprintf(stderr, "gateway: help: one command and its subcommand at most, got %q\n%s\n", words, use)
	}
	return 2
}

// subcommands names the commands of cmd's own, in the order its usage gives them; nil for a
// command that has none.
func subcommands(cmd string) []string {
	switch cmd {
	case "route":
		return []string{"eval"}
	case "import":
		return []string{"litellm"}
	case "lru-sim":
		return []string{"generate"}
	}
	return nil
}

// usageError is a mistake in the command line. said: the message has been printed already.
type usageError struct {
	msg  string
	said bool
}

func (e usageError) Error() string { return e.msg }

func newFlags(name string) *flag.FlagSet {
	return flag.NewFlagSet("gateway "+name, flag.ContinueOnError)
}

// about is what the command cmd does, as its help says it under its usage line, before its
// flags; "" for one whose help is its own package's (lru-sim, conformance).
func about(cmd string) string {
	switch cmd {
	case "serve":
		return "Serves the OpenAI-compatible API with the configuration in --config (CONFIG.md). SIGHUP reloads\n" +
			"the file; SIGINT or SIGTERM stops after the requests in flight, a second one at once."
	case "demo":
		return "Serves the paper's topology on loopback in front of simulated backends, with no keys and no\n" +
			"models: SAIF, Averroes-Q, DeepSeek R1 and a public openrouter tail (README, \"Try the demo\")."
	case "check-config":
		return "Loads FILE as serve would, its api_key_env variables read from the environment, and prints\n" +
			"what it compiles to (no secret, no key hash); exits 1 with each mistake on a line of its own."
	case "keygen":
		return "Makes a new client API key for NAME and prints it once, with the [[keys]] block that holds\n" +
			"its SHA-256 (the gateway stores no key, only that hash)."
	case "route eval":
		return "Measures model \"auto\"'s routing on FILE, a labelled JSON Lines set, with the [auto] rules\n" +
			"of --config or the built-in ones."
	case "import litellm":
		return "Reads FILE, a LiteLLM proxy config.yaml, and writes this gateway's configuration for it (stdout,\n" +
			"or --out): a target per deployment, a route per model_name. No key is copied; what is left out\n" +
			"or must be exported is said on stderr and in the file's comments (CONFIG.md, LiteLLM section)."
	case "version":
		return "Prints the gateway's version, the Go it was built with and its platform."
	}
	return ""
}

// described sets fs's usage to use, what the command does (about), then its flags.
func described(fs *flag.FlagSet, use, cmd string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n%s\n", use, about(cmd))
		fs.PrintDefaults()
	}
}

// parse parses args. Help asked for (--help, -h) is the command's answer: the flags go to stdout
// and flag.ErrHelp comes back, which run answers with exit 0. A mistake's message and the usage
// go to stderr, and a usageError that says so comes back (exit 2).
func parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var said bytes.Buffer
	fs.SetOutput(&said)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = stdout.Write(said.Bytes())
		return err
	case err != nil:
		_, _ = stderr.Write(said.Bytes())
		return usageError{msg: err.Error(), said: true}
	}
	return nil
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// emptyFlags refuses a flag of names given an empty value: a unit file's --listen $LISTEN gives
// one when the variable is unset, and "" would mean the flag was not given (the file's listen)
// or name no file at all.
func emptyFlags(fs *flag.FlagSet, names ...string) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			if err == nil && f.Name == n && f.Value.String() == "" {
				err = usageError{msg: fmt.Sprintf("%s: --%s is empty; give it a value, or leave the flag out",
					strings.TrimPrefix(fs.Name(), "gateway "), n)}
			}
		}
	})
	return err
}

// onlyFlags refuses the words after the flags of a command that takes none: serve's config file
// is named with --config (`gateway serve my.toml` would load gateway.toml), and nothing may be
// started on a command line that was not what its writer meant.
func onlyFlags(fs *flag.FlagSet) error {
	if fs.NArg() == 0 {
		return nil
	}
	hint := ""
	if fs.Lookup("config") != nil {
		hint = " (the configuration file goes after --config)"
	}
	return usageError{msg: fmt.Sprintf("%s: unexpected argument %q%s; it takes only flags (--help lists them)",
		strings.TrimPrefix(fs.Name(), "gateway "), fs.Arg(0), hint)}
}

// newLogger logs at level to w through a buffer that writes in batches (at most 100 ms late), so
// that a request's log line costs no write(2) of its own; the returned func writes what is left.
func newLogger(w io.Writer, level string) (*slog.Logger, func(), error) {
	l, ok := logLevel(level)
	if !ok {
		return nil, nil, usageError{msg: fmt.Sprintf("bad --log-level %q: use debug, info, warn or error", level)}
	}
	buf := logbuf.New(w, 100*time.Millisecond, 64<<10)
	return slog.New(logfmt.NewText(buf, l)), func() { _ = buf.Close() }, nil
}

// logLevel reads one of the four levels the usage names, in any case. slog's own parser also
// takes offsets (INFO+2), levels between the named ones that the usage does not offer.
func logLevel(s string) (slog.Level, bool) {
	for _, l := range [...]slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		if strings.EqualFold(s, l.String()) {
			return l, true
		}
	}
	return 0, false
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve")
	described(fs, "usage: gateway serve [--config FILE] [--listen ADDR] [--log-level LEVEL]", "serve")
	path := fs.String("config", "gateway.toml", "configuration file")
	listen := fs.String("listen", "", "listen address (overrides the config's listen)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := parse(fs, args, stdout, stderr); err != nil {
		return err
	}
	if err := onlyFlags(fs); err != nil {
		return err
	}
	if err := emptyFlags(fs, "config", "listen"); err != nil {
		return err
	}
	if err := listenFlag("serve", *listen, false); err != nil {
		return err
	}
	log, flush, err := newLogger(stderr, *level)
	if err != nil {
		return err
	}
	defer flush()
	// Signals that come while the gateway starts are held (one), not fatal: SIGHUP's default
	// action ends the process.
	hup := make(chan os.Signal, 1)
	notifyReload(hup)
	defer signal.Stop(hup)
	cfg, err := config.Load(*path, os.Getenv)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !flagGiven(fs, "config") {
			return fmt.Errorf("%w (with no --config, serve reads %s in the current directory; --config FILE names another)", err, *path)
		}
		return err
	}
	if *listen != "" {
		// listenFlag has checked the address; what is left is an open gateway (a file without
		// keys) told to listen off loopback, which the flag asks for and the file alone does
		// not: a mistake on the command line, as the demo's (TestOpenListenFlagIsUsage).
		if err := cfg.SetListen(*listen); err != nil {
			return usageError{msg: err.Error()}
		}
	}
	// After --listen, which can take a gateway with keys off loopback without TLS: keys in clear
	// are warned about for the address it listens on (TestKeysInClearWarned).
	logWarnings(log, cfg)
	return serve(ctx, cfg, log, &reloader{path: *path, listen: *listen, getenv: os.Getenv, log: log, hup: hup}, nil)
}

// serve runs the gateway on cfg until ctx ends. With rl, a value on rl.hup reloads the
// configuration file (gateway serve); without, the configuration is fixed (the demo's). listening,
// when not nil, is called with the address once the gateway listens and has started. With
// cfg.TLS it serves HTTPS, the certificate held where a reload renews it (rl.certs).
func serve(ctx context.Context, cfg *config.Config, log *slog.Logger, rl *reloader, listening func(net.Addr)) error {
	o := server.Options{Config: cfg, Logger: log}
	var serveOpts []server.ServeOption
	var certs *server.Certificates // nil: plain HTTP
	if cfg.TLS != nil {
		certs = server.NewCertificates(cfg.TLS.Certificate)
		serveOpts = append(serveOpts, server.WithTLS(certs))
	}
	// The cap on client connections lives as long as the process: a reload sets it again.
	conns := server.NewConnLimit(cfg.MaxConnections)
	serveOpts = append(serveOpts, server.WithConnLimit(conns))
	o.Conns = conns
	if rl != nil {
		rl.reloads = new(metrics.Reloads)
		o.Reloads = rl.reloads
		rl.conns = conns
	}
	srv, err := server.New(o)
	if err != nil {
		return err
	}
	live := server.NewLive(srv)
	// The last line of a gateway told to stop, once it has closed everything, after the line that
	// said it was stopping (TestStopIsLogged).
	var stopping chan struct{} // closed once that line is logged; nil until the gateway listens
	told := false              // the stop below ran, and logged that line
	defer func() {
		if told {
			<-stopping
			log.Info("stopped")
		}
	}()
	// A reload closes the server it replaced; this closes the one serving at the end.
	defer func() { live.Server().Close() }()
	// Listen before starting any process, so that a taken port fails at once.
	// TCP keepalive probes for clients on other machines only, with net's defaults for them
	// (TestClientAndUpstreamOnLoopbackHaveNoProbes).
	ln, err := keepalive.Listen(ctx, "tcp", cfg.Listen, net.KeepAliveConfig{})
	if err != nil {
		return err
	}
	if err := openLoopback(cfg.Open(), cfg.Listen, ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	if cfg.Lifecycle.WaitHealthy {
		log.Info("wait_healthy: waiting for the pinned targets before answering requests")
	}
	if err := srv.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	// Told to stop, the gateway answers at once the requests waiting for a model process to
	// start, and stops those loading, rather than hold them through the drain and cut them off.
	stopping = make(chan struct{})
	var sayOnce sync.Once
	sayStopping := func() {
		sayOnce.Do(func() {
			log.Info("stopping: finishing the requests in flight, then closing them", "grace", shutdownGrace)
			close(stopping)
		})
	}
	stopLoads := context.AfterFunc(ctx, func() {
		sayStopping()
		if p := live.Server().Processes(); p != nil {
			p.Drain()
		}
		if rl != nil {
			rl.drainRetired()
		}
	})
	defer func() {
		// A cancel closes ctx.Done before it starts ctx's AfterFuncs: an idle Serve can see the
		// stop, drain nothing and return in between, and stopLoads then wins against the
		// AfterFunc. That is a stop all the same, and is logged as one (TestStopIsLogged failed
		// so under -shuffle and -cpu 1); Serve has ended, so there is nothing left to drain.
		told = !stopLoads() || ctx.Err() != nil
		if told {
			sayStopping()
		}
	}()
	attrs := []any{"addr", ln.Addr().String(), "routes", len(cfg.Routes),
		"targets", len(cfg.Targets), "managed", len(cfg.Lifecycle.Specs)}
	if certs != nil {
		attrs = append(attrs, "https", true)
	}
	log.Info("hayula gateway listening", attrs...)
	if listening != nil {
		listening(ln.Addr())
	}
	if rl != nil {
		rl.live, rl.addr, rl.running, rl.certs = live, ln.Addr(), cfg.Listen, certs
		// The servers reloads replaced that still serve requests are closed once Serve has
		// drained and cancelled what was left, and the reload loop has ended.
		defer rl.closeRetired()
		var wg sync.WaitGroup
		// Once Serve has returned, the loop ends; a reload under way finishes first (abandoned, if
		// the gateway is stopping), so that nothing it built outlives the gateway.
		defer wg.Wait()
		served := make(chan struct{})
		defer close(served)
		wg.Go(func() { rl.loop(ctx, served) })
	}
	return server.Serve(ctx, ln, live, shutdownGrace, log, serveOpts...)
}

// logWarnings logs what check-config lists under "warnings" (config.Config.Warnings): a config
// that loads but may not do what its author meant, strict requests reaching a target left
// private by default among them, should say so where the gateway runs, not only where someone
// thought to run check-config.
func logWarnings(log *slog.Logger, cfg *config.Config) {
	for _, w := range cfg.Warnings() {
		log.Warn("config: "+w, "file", cfg.Source)
	}
}

// openLoopback holds an open gateway (no keys) to a loopback address once it listens: config
// accepts "localhost" as loopback, but the system resolves it (/etc/hosts, then DNS), and on a
// machine where it names another address an open gateway would listen there.
func openLoopback(open bool, listen string, addr net.Addr) error {
	if !open {
		return nil
	}
	if a, ok := addr.(*net.TCPAddr); ok && a.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("listen %q: a gateway without [[keys]] listens only on loopback, but it resolved to %s; "+
		"name 127.0.0.1 or [::1], or add keys", listen, addr)
}

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo")
	described(fs, "usage: gateway demo [--print-config] [--listen ADDR] [--sim-port-base N] [--log-level LEVEL]", "demo")
	printConfig := fs.Bool("print-config", false, "print the demo's configuration and exit")
	listen := fs.String("listen", "127.0.0.1:8000", "gateway listen address")
	portBase := fs.Int("sim-port-base", demo.DefaultPortBase, "first of the four simulators' consecutive ports; 0 picks free ones")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := parse(fs, args, stdout, stderr); err != nil {
		return err
	}
	if err := onlyFlags(fs); err != nil {
		return err
	}
	if err := listenFlag("demo", *listen, true); err != nil {
		return err
	}
	if err := demoPortBase(*portBase, *printConfig, *listen); err != nil {
		return err
	}
	if *printConfig {
		fmt.Fprint(stdout, demo.Config(*listen, demo.URLsFor(*portBase)))
		return nil
	}
	log, flush, err := newLogger(stderr, *level)
	if err != nil {
		return err
	}
	defer flush()
	b, err := demo.StartBackends(*portBase, 40*time.Millisecond)
	if err != nil {
		return err
	}
	defer b.Close()
	cfg, err := config.Parse([]byte(demo.Config(*listen, b.URLs)), "demo.toml", os.Getenv)
	if err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	// The invitation comes once the gateway listens: a port something else holds fails first,
	// and a curl would have reached that something.
	// It names the address the gateway got: with port 0 in --listen, the system chose the port.
	// A demo told to stop while it started (Ctrl-C) invites no one: it is about to exit.
	err = serve(ctx, cfg, log, nil, func(addr net.Addr) {
		if ctx.Err() != nil {
			return
		}
		fmt.Fprintf(stdout, "Hayula demo: simulated saif, averroes-q, deepseek-r1 and a public openrouter tail.\n"+
			"Try:\n  curl -s http://%s/v1/chat/completions -H 'content-type: application/json' \\\n"+
			"    -d '{\"model\":\"auto\",\"messages\":[{\"role\":\"user\",\"content\":\"Is this C code vulnerable to a buffer overflow?\"}]}' -i\n", addr)
	})
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "listen" {
		return fmt.Errorf("%w (choose another address with --listen)", err)
	}
	return err
}

// demoPortBase refuses a --sim-port-base the demo cannot use: the four simulators take four
// consecutive ports from it, or free ones for 0, which --print-config cannot print since the
// system picks them only when the demo starts; and the gateway's --listen port may not be one of
// them, or the demo's own simulator would take it and the gateway fail as if something else had.
func demoPortBase(base int, printing bool, listen string) error {
	const last = 65535 - 3
	switch {
	case base == 0 && printing:
		return usageError{msg: "demo: --print-config needs the simulators' ports, and --sim-port-base 0 leaves them to the system at start; name a first port"}
	case base < 0 || base > last:
		return usageError{msg: fmt.Sprintf("demo: --sim-port-base %d: the four simulators take consecutive ports from it, so it is 1 to %d (or 0 for free ports)", base, last)}
	}
	if _, p, err := net.SplitHostPort(listen); err == nil && base > 0 {
		if port, err := strconv.Atoi(p); err == nil && port >= base && port <= base+3 {
			return usageError{msg: fmt.Sprintf("demo: --listen port %d is one of the simulators' (--sim-port-base %d takes %d to %d); choose another with either flag",
				port, base, base, base+3)}
		}
	}
	return nil
}

// listenFlag refuses a --listen that no configuration could take (config.CheckListen), as a
// mistake on the command line, before anything is read or started; "" is the flag not given.
// open: the command's gateway has no keys (the demo's), so the address must be loopback too.
// Whether serve's may be off loopback depends on its file's keys, and SetListen says so once
// the file is read.
func listenFlag(cmd, addr string, open bool) error {
	if addr == "" && !open {
		return nil
	}
	if err := config.CheckListen(addr); err != nil {
		return usageError{msg: fmt.Sprintf("%s: --listen: %v", cmd, err)}
	}
	if open && !config.IsLoopback(addr) {
		return usageError{msg: fmt.Sprintf("%s: --listen %q: the %s has no keys, so it listens only on loopback (127.0.0.1, [::1] or localhost)", cmd, addr, cmd)}
	}
	return nil
}

// cmdImport is `gateway import litellm FILE [--out FILE]`: a LiteLLM proxy config.yaml turned into
// this gateway's TOML.
func cmdImport(args []string, stdout, stderr io.Writer) error {
	var out *string
	file, err := fileSubcommand(args, fileCommand{
		name: "import", sub: "litellm", use: "usage: gateway import litellm FILE [--out FILE]",
		noSub:    "missing litellm, the kind of configuration to read (the only one it reads)",
		otherSub: "unknown kind %q (it reads litellm)",
		fileIs:   "LiteLLM's config.yaml",
		nonEmpty: []string{"out"},
		defineFlags: func(fs *flag.FlagSet) {
			out = fs.String("out", "", "write the configuration to this new file (one that exists is never replaced) instead of stdout")
		},
	}, stdout, stderr)
	if err != nil {
		return err
	}
	return importLiteLLM(file, *out, stdout, stderr)
}

// fileCommand is a command of the shape `gateway NAME SUB FILE [flags]` (import litellm, route
// eval), for fileSubcommand.
type fileCommand struct {
	name, sub, use string
	// noSub and otherSub (a format for the word given) say what is wrong with the SUB given.
	noSub, otherSub string
	// fileIs says what FILE is, for the error of a command without one.
	fileIs string
	// nonEmpty are the flags that may not be given empty.
	nonEmpty    []string
	defineFlags func(*flag.FlagSet)
}

// fileSubcommand parses args, those after `gateway NAME`, as c's `SUB FILE [flags]` and returns
// FILE; flags may come before or after it (the flag package stops at the first argument that is
// not one, and the usage lines put them after FILE).
func fileSubcommand(args []string, c fileCommand, stdout, stderr io.Writer) (string, error) {
	full := c.name + " " + c.sub
	if helpAsked(args) {
		fmt.Fprintf(stdout, "%s\n%s\n", c.use, about(full))
		return "", flag.ErrHelp
	}
	switch {
	case len(args) == 0:
		return "", usageError{msg: c.name + ": " + c.noSub + "\n" + c.use}
	case args[0] != c.sub:
		return "", usageError{msg: c.name + ": " + fmt.Sprintf(c.otherSub, args[0]) + "\n" + c.use}
	}
	fs := newFlags(full)
	c.defineFlags(fs)
	described(fs, c.use, full)
	if err := parse(fs, args[1:], stdout, stderr); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return "", usageError{msg: full + ": missing FILE, " + c.fileIs + "\n" + c.use}
	}
	file := fs.Arg(0)
	if err := parse(fs, fs.Args()[1:], stdout, stderr); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", usageError{msg: fmt.Sprintf("%s: one FILE, then unexpected %q\n%s", full, fs.Args(), c.use)}
	}
	return file, emptyFlags(fs, c.nonEmpty...)
}

// importLiteLLM converts the LiteLLM config.yaml at file and writes the TOML to stdout, or to a
// new file at out; the warnings, which never quote a secret (litellm.Convert), go to stderr.
func importLiteLLM(file, out string, stdout, stderr io.Writer) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	res, err := litellm.Convert(data, file)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "gateway: warning:", w)
	}
	if out == "" {
		_, err := stdout.Write(res.TOML)
		return err
	}
	// O_EXCL: the file named may be the configuration the gateway serves with.
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("--out %s exists: import never replaces a file; name a new one, or remove it first", out)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(res.TOML); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	next := ""
	if len(res.Env) > 0 {
		next = "export " + strings.Join(res.Env, ", ") + "; then "
	}
	fmt.Fprintf(stderr, "gateway: wrote %s; next: %sgateway check-config %s\n", out, next, out)
	return nil
}

// helpAsked reports whether the arguments of a command that takes no flags (keygen NAME,
// check-config FILE, route) are a request for its usage: no flag package parses them, and --help
// would otherwise be taken for the name or the file.
func helpAsked(args []string) bool {
	return len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help")
}

func cmdCheckConfig(args []string, stdout, stderr io.Writer) int {
	const use = "usage: gateway check-config FILE"
	if helpAsked(args) {
		fmt.Fprintf(stdout, "%s\n%s\n", use, about("check-config"))
		return 0
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			// A word that looks like a flag is a mistyped command line, not the file (./-x is one).
			hint := ""
			if strings.HasPrefix(strings.TrimLeft(a, "-"), "config") {
				hint = " (the file is its argument, without --config)"
			}
			fmt.Fprintf(stderr, "gateway: check-config: takes no flags, got %s%s\n%s\n", a, hint, use)
			return 2
		}
	}
	switch {
	case len(args) == 0:
		fmt.Fprintf(stderr, "gateway: check-config: missing FILE, the configuration to check\n%s\n", use)
		return 2
	case len(args) > 1:
		fmt.Fprintf(stderr, "gateway: check-config: one FILE, got %d arguments\n%s\n", len(args), use)
		return 2
	}
	cfg, err := config.Load(args[0], os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprint(stdout, cfg.Summary())
	return 0
}

func cmdKeygen(args []string, stdout, stderr io.Writer) error {
	const use = "usage: gateway keygen NAME"
	if helpAsked(args) {
		fmt.Fprintf(stdout, "%s\n%s\n", use, about("keygen"))
		return flag.ErrHelp
	}
	switch {
	case len(args) == 0 || args[0] == "":
		return usageError{msg: "keygen: missing NAME, the name of the key's holder (it names the key in logs and metrics)\n" + use}
	case len(args) > 1:
		return usageError{msg: fmt.Sprintf("keygen: one NAME, got %d arguments\n%s", len(args), use)}
	case strings.HasPrefix(args[0], "-"):
		// A name that looks like a flag is a mistyped command line, not a key's name.
		return usageError{msg: fmt.Sprintf("keygen: takes no flags, got %s\n%s", args[0], use)}
	}
	key, hash, err := config.NewKey(rand.Reader)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "New API key for %q (shown once; give it to the client, store only the hash):\n\n  %s\n\n"+
		"Paste into the gateway config:\n\n%s", args[0], key, config.KeyTOML(args[0], hash))
	return nil
}

// cmdRoute is `gateway route eval FILE`: the auto-router's accuracy on a labelled set, with the
// rules of --config's [auto] table or the defaults.
func cmdRoute(args []string, stdout, stderr io.Writer) error {
	var path *string
	file, err := fileSubcommand(args, fileCommand{
		name: "route", sub: "eval", use: "usage: gateway route eval FILE [--config FILE]",
		noSub:    "missing eval, its only command",
		otherSub: "unknown command %q",
		fileIs:   "the labelled set",
		nonEmpty: []string{"config"},
		defineFlags: func(fs *flag.FlagSet) {
			path = fs.String("config", "", "take the [auto] rules from this configuration")
		},
	}, stdout, stderr)
	if err != nil {
		return err
	}
	return routeEval(file, *path, stdout)
}

// routeEval prints the accuracy of the rules of the config at path (the defaults when path is
// "") on the labelled set in file.
func routeEval(file, path string, stdout io.Writer) error {
	var c *autoroute.Classifier
	if path != "" {
		cfg, err := config.Load(path, os.Getenv)
		if err != nil {
			return err
		}
		if cfg.Auto == nil {
			return fmt.Errorf("%s has no [auto] table", path)
		}
		c = cfg.Auto
	} else {
		var err error
		if c, err = autoroute.New(autoroute.DefaultRules()); err != nil {
			return err
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	rep, err := autoroute.Eval(c, f)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, rep.String())
	return nil
}
